"""The reproduction's data sets and fits.

Data sets (one file per set and seed; every array is trials x bins x ...):

- ``attractor``: the notebook's dynamic attractor (y, u, the true latents x).
- ``linear``: the linear system through the fixed tanh MLP, with held-out trials under a new protocol
  (``*_test``).
- ``npz``: a user's recordings (y, u; no truth): fits only.

A fit is a :class:`Fit`: a data set and seed, a variant (``issm``, ``ssm``, or an ablation) and its model
options. iSSM and SSM of one set and seed fit the same data from the same seed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import simulate

#: The arrays of a data set file: required, and present only for simulated (truth) or held-out sets.
REQUIRED = ("y", "u")
TRUTH = ("x",)
HELD_OUT = ("y_test", "u_test", "x_test")


@dataclass(frozen=True)
class Protocol:
    trials: int = 10
    bins: int = 200
    pulses: int = 15
    width: int = 3
    test_pulses: int = 8
    test_width: int = 6
    dt: float = simulate.DT


def simulated_set(
    name: str, rng: np.random.Generator, emission_rng: np.random.Generator, p: Protocol
) -> dict:
    """One seed's data set ``name`` (``attractor`` or ``linear``); the linear emission comes from
    ``emission_rng`` (the same generator state for every seed: one fixed map)."""
    if name == "attractor":
        return simulate.attractor_set(rng, p.trials, p.bins, p.pulses, p.width, p.dt)
    if name == "linear":
        emission = simulate.TanhEmission.draw(emission_rng)
        return simulate.linear_set(
            rng, emission, p.trials, p.bins, p.pulses, p.width, p.test_pulses, p.test_width, p.dt
        )
    raise ValueError(f"unknown simulated set {name!r}")


def true_A(name: str) -> np.ndarray | None:
    """The leak-form A the learned one is compared with (None for a user's recordings)."""
    return {"attractor": simulate.attractor_true_A(), "linear": simulate.LINEAR_A}.get(name)


@dataclass(frozen=True)
class Fit:
    """One fit: ``data`` (set name), ``seed``, ``variant`` and the model options."""

    data: str
    seed: int
    variant: str
    interventional: bool = True
    gamma: float = 1.0
    shared_noise: bool = False
    train_B: bool = False
    a_init_sd: float = 0.1

    @property
    def name(self) -> str:
        return f"{self.data}_s{self.seed}_{self.variant}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan(
    sets: list[str],
    seeds: int,
    *,
    gamma: float = 1.0,
    shared_noise: bool = False,
    train_B: bool = False,
    a_init_sd: float = 0.1,
    ablation_sets: tuple[str, ...] = (),
) -> list[Fit]:
    """iSSM and SSM on every set and seed; with ``ablation_sets``, iSSM with the other gamma (1 <-> 0) too
    (variant ``issm_gamma<g>``)."""
    fits = []
    for data in sets:
        for seed in range(seeds):
            base = Fit(data, seed, "issm", True, gamma, shared_noise, train_B, a_init_sd)
            fits += [base, replace(base, variant="ssm", interventional=False)]
            if data in ablation_sets:
                other = 0.0 if gamma != 0 else 1.0
                fits.append(replace(base, variant=f"issm_gamma{other:g}", gamma=other))
    return fits


def run_fit(fit: Fit, data: dict[str, np.ndarray], iters: int, seed: int, dt: float, out: Path) -> dict:
    """Fit ``fit`` on ``data`` from ``seed`` (B = I: one input per latent); save the model to
    ``out``/<name>.safetensors; return the history (per-step terms) and the wall time."""
    import time

    from .api import FittedISSM
    from .lit import fit_model
    from .model import Config

    start = time.perf_counter()
    cfg = Config(
        latents=data["u"].shape[2],
        inputs=data["u"].shape[2],
        neurons=data["y"].shape[2],
        dt=dt,
        interventional=fit.interventional,
        train_B=fit.train_B,
        gamma=fit.gamma,
        shared_noise=fit.shared_noise,
        a_init_sd=fit.a_init_sd,
    )
    model, history = fit_model(data["y"], data["u"], cfg, iters, seed)
    FittedISSM(model, history).save(out / f"{fit.name}.safetensors")
    return {"fit": fit.to_dict(), "history": history, "seconds": time.perf_counter() - start}
