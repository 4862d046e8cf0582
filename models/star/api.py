"""The user entry: learn skill codes from a user's demonstrations, save and reload them, code chunks.

    from models.star.api import read_hdf5, fit_skill_model, SkillModel
    demos = read_hdf5("demos.hdf5")                     # LIBERO-style: data/demo_i/actions (T x A)
    model = fit_skill_model(demos, horizon=8, depths=2, codes=32)
    model.save("skills.safetensors"); SkillModel.load("skills.safetensors").codes(chunks)

Bad input raises :class:`~icml25.errors.UserError` with one line naming the value."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml25.errors import UserError

KIND_SKILLS = "star-skills"
KIND_CST = "star-cst"


def _demo_key(name: str) -> tuple[int, str]:
    m = re.fullmatch(r"demo_(\d+)", name)
    return (int(m.group(1)), name) if m else (math.inf, name)  # type: ignore[return-value]


def read_hdf5(path: str | Path) -> dict[str, np.ndarray]:
    """The ``actions`` (T x A, float) of every ``data/demo_*`` group of a LIBERO-style HDF5 file, in demo order
    (demo_2 before demo_10), by name."""
    import h5py

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise UserError(f"{path}: not a readable HDF5 file ({str(exc).splitlines()[0]})") from None
    with f:
        group = f.get("data")
        if not isinstance(group, h5py.Group):
            raise UserError(f"{path}: no group 'data' (expected data/demo_i/actions)")
        names = sorted((n for n in group if n.startswith("demo_")), key=_demo_key)
        if not names:
            raise UserError(f"{path}: no data/demo_* group (expected data/demo_i/actions)")
        demos: dict[str, np.ndarray] = {}
        for name in names:
            item = group[name]
            if not isinstance(item, h5py.Group) or not isinstance(item.get("actions"), h5py.Dataset):
                raise UserError(f"{path}: data/{name} has no dataset 'actions'")
            a = np.asarray(item["actions"][()])
            if a.ndim != 2 or a.dtype.kind not in "biuf":
                raise UserError(
                    f"{path}: data/{name}/actions has shape {a.shape} ({a.dtype}), expected T x A numbers"
                )
            demos[name] = a.astype(np.float32)
    check_demos(demos, source=str(path))
    return demos


def check_demos(demos: dict[str, np.ndarray], horizon: int | None = None, source: str = "demos") -> None:
    """One action dimension, finite values, and (given a horizon) at least ``horizon`` steps per demo."""
    if not demos:
        raise UserError(f"{source}: no demonstrations")
    for name, a in demos.items():
        if np.ndim(a) != 2 or a.shape[0] < 1 or a.shape[1] < 1:
            raise UserError(
                f"{source}: {name}/actions has shape {np.shape(a)}, expected T x A with T, A >= 1"
            )
    dims = {a.shape[1] for a in demos.values()}
    if len(dims) != 1:
        raise UserError(f"{source}: demos have different action dimensions {sorted(dims)}")
    for name, a in demos.items():
        bad = ~np.isfinite(a)
        if bad.any():
            t, k = np.argwhere(bad)[0]
            raise UserError(f"{source}: {name}/actions[{t}, {k}] is {a[t, k]} (actions must be finite)")
        if horizon is not None and len(a) < horizon:
            raise UserError(f"{source}: horizon {horizon} is longer than {name} ({len(a)} steps)")


def check_sizes(horizon: int, depths: int, codes: int, steps: int = 1) -> None:
    if horizon < 1:
        raise UserError(f"horizon = {horizon}: need at least 1 step per chunk")
    if depths < 1:
        raise UserError(f"depths = {depths}: need at least 1 codebook")
    if codes < 2:
        raise UserError(f"codes = {codes}: need at least 2 codes per codebook")
    if steps < 1:
        raise UserError(f"steps = {steps}: need at least 1 training step")


def chunks_of(
    demos: dict[str, np.ndarray], horizon: int, stride: int = 1
) -> tuple[np.ndarray, list[tuple[str, int]]]:
    """Every window of ``horizon`` steps of every demo, starting every ``stride`` steps: (n, horizon, A) and
    (demo, start) per window."""
    from .world import windows

    names = list(demos)
    offsets = np.cumsum([0] + [len(demos[n]) for n in names])
    chunks, where = windows(np.concatenate([demos[n] for n in names]), offsets, horizon, stride)
    return chunks, [(names[i], int(s)) for i, s in where]


@dataclass
class SkillModel:
    """A trained skill autoencoder with the standardisation of its chunks."""

    model: object  # SkillAE
    mean: np.ndarray
    sd: np.ndarray
    history: list[dict[str, float]]

    @property
    def config(self):
        return self.model.cfg

    @property
    def standardiser(self):
        from .policy import Standardiser

        return Standardiser(self.mean, self.sd)

    def check_chunks(self, chunks: np.ndarray, source: str = "chunks") -> None:
        cfg = self.config
        if chunks.ndim != 3 or chunks.shape[1:] != (cfg.horizon, cfg.action_dim):
            raise UserError(
                f"{source}: chunks of shape {chunks.shape[1:]}, the model takes ({cfg.horizon}, {cfg.action_dim})"
            )

    def codes(self, chunks: np.ndarray) -> np.ndarray:
        """Codes (n, depths) of chunks (n, horizon, A)."""
        import torch

        self.check_chunks(chunks)
        return self.model.codes(torch.as_tensor(self.standardiser.forward(chunks))).numpy()

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Chunks (n, horizon, A) of codes (n, depths)."""
        import torch

        x = self.model.decode(torch.as_tensor(np.asarray(codes)).long()).numpy()
        cfg = self.config
        return self.standardiser.inverse(x).reshape(-1, cfg.horizon, cfg.action_dim)

    def usage(self, chunks: np.ndarray) -> dict:
        """Per depth: perplexity, active codes, counts; the reconstruction MSE in standardised units."""
        from .skills import usage

        self.check_chunks(chunks)
        return usage(self.model, self.standardiser.forward(chunks))

    def save(self, path: str | Path) -> Path:
        import torch

        from models.common.weights import save_weights

        tensors = dict(self.model.state_dict())
        tensors["standardiser.mean"] = torch.as_tensor(self.mean)
        tensors["standardiser.sd"] = torch.as_tensor(self.sd)
        return save_weights(path, tensors, {"kind": KIND_SKILLS, "config": self.config.to_dict()})

    @classmethod
    def load(cls, path: str | Path) -> SkillModel:
        from models.common.weights import load_weights

        from .skills import SkillAE, SkillConfig

        tensors, meta = load_weights(path, KIND_SKILLS)
        mean = tensors.pop("standardiser.mean").numpy()
        sd = tensors.pop("standardiser.sd").numpy()
        model = SkillAE(SkillConfig(**meta["config"]))
        model.load_state_dict(tensors)
        model.eval()
        return cls(model, mean, sd, [])


def fit_skill_model(
    demos: dict[str, np.ndarray],
    horizon: int = 8,
    depths: int = 2,
    codes: int = 32,
    ste: bool = False,
    steps: int = 1500,
    seed: int = 0,
    progress: Callable[[int, dict], None] | None = None,
) -> SkillModel:
    """Learn skill codes (RaRSQ, or STE with ``ste=True``) from every window of ``horizon`` steps of ``demos``
    (name -> T x A actions), standardised per coordinate."""
    from .policy import Standardiser
    from .skills import SkillConfig, fit_skills

    check_sizes(horizon, depths, codes, steps)
    check_demos(demos, horizon)
    chunks, _ = chunks_of(demos, horizon)
    std = Standardiser.fit(chunks)
    cfg = SkillConfig(
        horizon=horizon,
        action_dim=chunks.shape[2],
        depths=depths,
        codes=codes,
        estimator="ste" if ste else "rotation",
    )
    model, history = fit_skills(std.forward(chunks), cfg, steps, seed, progress=progress)
    return SkillModel(model, std.mean, std.sd, history)


def save_cst(path: str | Path, policy) -> Path:
    from models.common.weights import save_weights

    return save_weights(path, dict(policy.state_dict()), {"kind": KIND_CST, "config": policy.cfg.to_dict()})


def load_cst(path: str | Path):
    from models.common.weights import load_weights

    from .cst import CausalSkillTransformer, CSTConfig

    tensors, meta = load_weights(path, KIND_CST)
    policy = CausalSkillTransformer(CSTConfig(**meta["config"]))
    policy.load_state_dict(tensors)
    policy.eval()
    return policy
