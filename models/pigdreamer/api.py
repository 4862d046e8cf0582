"""The Python entry: train one agent of the analogue and evaluate it.

    from models.pigdreamer.api import HiddenHazard, train_agent, evaluate_agent
    ckpt = train_agent(variant="C", steps=200_000, cost_limit=0.5, seed=0, env=HiddenHazard(hazards=5))
    ckpt.save("agent.safetensors")
    evaluate_agent("agent.safetensors", episodes=200, seed=0)  # or evaluate_agent(ckpt)

``env`` gives the environment's settings (size, horizon, hazards, visibility, step penalty, the privileged map's
frame; its ``n`` and ``seed`` are not used: training draws its own episodes from ``seed``). ``steps`` is the
environment steps per agent, rounded up to whole PPO updates of envs x rollout steps. The pipeline trains the
same agents stacked (stages/pigdreamer/train.py); an agent trained here with the pipeline's settings and agent
seed follows the same computation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from icml25.errors import UserError

from .agent import VARIANTS, AgentSpec, EnvConfig, PPOConfig, StackedAgents
from .env import HiddenHazard

__all__ = ["Checkpoint", "HiddenHazard", "evaluate_agent", "train_agent"]


@dataclass
class Checkpoint:
    """A trained agent: its network (a stack of one), spec, settings, final lambda and training history."""

    net: StackedAgents
    env: EnvConfig
    ppo: PPOConfig
    lam: float
    updates: int
    history: list[dict[str, Any]]

    @property
    def variant(self) -> str:
        return self.net.specs[0].variant

    def save(self, path: str | Path) -> Path:
        from .ppo import save_agent

        save_agent(path, self.net, 0, self.env, self.ppo, self.lam, self.updates)
        return Path(path)

    @classmethod
    def load(cls, path: str | Path) -> Checkpoint:
        from .ppo import load_agents

        net, metas, env, ppo = load_agents([Path(path)])
        return cls(net, env, ppo, float(metas[0]["lambda"]), int(metas[0]["updates"]), [])


def check_seed(seed: object, name: str = "seed") -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise UserError(f"{name} {seed!r}: must be an integer in [0, 2^32)")


def env_config(env: HiddenHazard | EnvConfig | None) -> EnvConfig:
    if env is None:
        return EnvConfig()
    if isinstance(env, EnvConfig):
        HiddenHazard(n=1, **env.__dict__)  # the environment's own checks
        return env
    if isinstance(env, HiddenHazard):
        return EnvConfig(size=env.size, horizon=env.horizon, hazards=env.hazards, visibility=env.visibility,
                         step_penalty=env.step_penalty, frame=env.frame)  # fmt: skip
    raise UserError(f"env {env!r}: a HiddenHazard (or None for the defaults)")


def train_agent(variant: str = "C", steps: int = 200_000, cost_limit: float = 0.5, seed: int = 0,
                env: HiddenHazard | EnvConfig | None = None, ppo: PPOConfig | None = None,
                progress: Callable[[dict], None] | None = None, every: int = 0) -> Checkpoint:  # fmt: skip
    """Train one agent (``variant`` A, B, C, U or N; models/pigdreamer/agent.py) for ``steps`` environment
    steps under cost limit ``cost_limit`` per episode; returns its :class:`Checkpoint`. ``progress(record)`` is
    called every ``every`` updates (default: each quarter) with the update's record (lists of one: return, cost,
    success and lambda of the episodes finished in its rollout)."""
    if variant not in VARIANTS:
        raise UserError(f"variant {variant!r}: one of {', '.join(VARIANTS)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise UserError(f"steps {steps!r}: must be an integer >= 1")
    if not (isinstance(cost_limit, int | float) and math.isfinite(cost_limit) and cost_limit >= 0):
        raise UserError(f"cost limit {cost_limit!r}: must be a finite number >= 0")
    check_seed(seed)
    try:
        env_cfg = env_config(env)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    cfg = replace(ppo or PPOConfig(), cost_limit=float(cost_limit))
    updates = math.ceil(steps / (cfg.envs * cfg.rollout))
    from .ppo import train

    callbacks = []
    if progress is not None:
        from models.common.training import Progress

        callbacks.append(Progress((every or max(1, updates // 4)) * cfg.epochs * cfg.minibatches,
                                  lambda step, rec: progress(rec)))  # fmt: skip
    module = train([AgentSpec(variant, int(seed))], updates, env_cfg, cfg, callbacks)
    return Checkpoint(module.net, env_cfg, cfg, float(module.lam[0]), updates, module.history)


def evaluate_agent(ckpt: Checkpoint | str | Path, episodes: int = 200, seed: int = 0) -> dict[str, float]:
    """The agent's final sampling policy on ``episodes`` fresh episodes: mean return, cost and success, the
    normalised cost- and reward-critic errors, and ``leak`` (the largest change of its logits over 1,000
    states when the map is replaced by random values; 0 for every agent the pipeline builds)."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise UserError(f"episodes {episodes!r}: must be an integer >= 1")
    check_seed(seed)
    if not isinstance(ckpt, Checkpoint):
        ckpt = Checkpoint.load(ckpt)
    from .ppo import evaluate

    res = evaluate(ckpt.net, ckpt.env, episodes, int(seed), ckpt.ppo.gamma)
    return {k: float(v[0]) for k, v in res.items()}
