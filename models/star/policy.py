"""Between the stages: chunk standardisation, the stage-2 samples (codes of primitive-aligned chunks from the
trained skill model, and the offsets the decoder leaves), and the closed-loop rollout of a CST in the world.

Rollout (receding horizon): at each decision the policy sees the task, the current state and the codes it has
executed so far, predicts the next chunk's codes greedily (and the offset), decodes the chunk, adds the
offset, de-standardises it and executes it (all H actions: the stage-2 data are primitive-aligned), then
decides again from the new state; an episode makes as many decisions as its task has primitives (the time
limit)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .cst import CausalSkillTransformer, sequences
from .skills import SkillAE
from .world import Task, World


@dataclass(frozen=True)
class Standardiser:
    mean: np.ndarray  # (H * A,)
    sd: np.ndarray

    @classmethod
    def fit(cls, chunks: np.ndarray, floor: float = 1e-6) -> Standardiser:
        flat = chunks.reshape(len(chunks), -1).astype(np.float64)
        return cls(flat.mean(0).astype(np.float32), np.maximum(flat.std(0), floor).astype(np.float32))

    def forward(self, chunks: np.ndarray) -> np.ndarray:
        return ((chunks.reshape(len(chunks), -1) - self.mean) / self.sd).astype(np.float32)

    def inverse(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x) * self.sd + self.mean).astype(np.float32)


def primitive_chunks(data: dict[str, np.ndarray], H: int) -> np.ndarray:
    """The chunk (H, A) of every primitive of every demo, in the order of ``prim_demo``/``prim_index``."""
    start = data["demo_offset"][data["prim_demo"]] + data["prim_index"] * H
    return np.stack([data["actions"][s : s + H] for s in start])


@torch.no_grad()
def stage2_samples(
    model: SkillAE, data: dict[str, np.ndarray], std: Standardiser, H: int, max_chunks: int
) -> dict[str, np.ndarray]:
    """One sample per primitive chunk: task, state before it, the token sequence (history + its codes), the
    codes, and the offset ``x - decode(codes)`` in standardised units."""
    x = torch.as_tensor(std.forward(primitive_chunks(data, H)))
    codes = model.codes(x)
    offset = x - model.decode(codes)
    cfg = model.cfg
    seq, ctx = sequences(
        codes.numpy(), data["prim_index"], data["prim_demo"], cfg.depths, cfg.codes, max_chunks
    )
    return {
        "task": data["demo_task"][data["prim_demo"]],
        "state": data["prim_state"],
        "seq": seq,
        "ctx_len": ctx,
        "codes": codes.numpy(),
        "offset": offset.numpy(),
    }


@torch.no_grad()
def rollout(
    policy: CausalSkillTransformer,
    skills: SkillAE,
    std: Standardiser,
    tasks: list[Task],
    episodes: int,
    rng: np.random.Generator,
    start: float,
    tolerance: float,
) -> np.ndarray:
    """Success (tasks, episodes) of closed-loop episodes, starts uniform in [-start, start]^2."""
    cfg, scfg = policy.cfg, skills.cfg
    H, A = scfg.horizon, scfg.action_dim
    ids = np.repeat(np.arange(len(tasks)), episodes)
    world = World(tasks, ids, rng.uniform(-start, start, (len(ids), 2)))
    n = len(ids)
    history = torch.zeros(n, cfg.depths * cfg.max_chunks, dtype=torch.long)
    task_t = torch.as_tensor(ids).long()
    for j in range(int(world.horizon.max())):
        ctx = torch.full((n,), cfg.depths * min(j, cfg.max_chunks - 1), dtype=torch.long)
        codes, off = policy.act(task_t, torch.as_tensor(world.state()), history, ctx)
        x = skills.decode(codes) + off
        actions = std.inverse(x.numpy()).reshape(n, H, A)
        world.execute(actions, active=j < world.horizon)
        if j < cfg.max_chunks - 1:
            tokens = codes + torch.arange(cfg.depths)[None, :] * cfg.codes
            history[:, cfg.depths * j : cfg.depths * (j + 1)] = tokens
    return world.success(tolerance).reshape(len(tasks), episodes)
