"""The reproduction's data sets and fits.

Data sets (one file per set and seed; every array is trials x bins x ...):

- ``attractor``: the notebook's dynamic attractor (y, u, the true latents x) under the issue's protocol
  (15 pulses of 3 bins per trial, each on a random latent).
- ``attractor_official``: the same system under the official protocol, seeded (30 pulses of 3-4 bins per
  trial alternating between the latents, amplitude jitter sd 0.5): reported beside the issue's, not gated.
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
    repetition: int = 15  # the official protocol's pulses per latent


def simulated_set(
    name: str, rng: np.random.Generator, emission_rng: np.random.Generator, p: Protocol
) -> dict:
    """One seed's data set ``name`` (``attractor`` or ``linear``); the linear emission comes from
    ``emission_rng`` (the same generator state for every seed: one fixed map)."""
    if name in ("attractor", "attractor_official"):
        return simulate.attractor_set(
            rng, p.trials, p.bins, p.pulses, p.width, p.dt, name == "attractor_official", p.repetition
        )
    if name == "linear":
        emission = simulate.TanhEmission.draw(emission_rng)
        return simulate.linear_set(
            rng, emission, p.trials, p.bins, p.pulses, p.width, p.test_pulses, p.test_width, p.dt
        )
    raise ValueError(f"unknown simulated set {name!r}")


def angle_beyond_pi(data: dict[str, np.ndarray]) -> float:
    """The attractor's x2 is an angle (y depends on it through cos and sin): the fraction of its non-intervened
    entries outside [-pi, pi], where the observations fix it only modulo 2 pi."""
    free = data["u"][..., 1] == 0
    return float((np.abs(data["x"][..., 1][free]) > np.pi).mean())


def true_A(name: str) -> np.ndarray | None:
    """The leak-form A the learned one is compared with (None for a user's recordings)."""
    attractor = simulate.attractor_true_A()
    return {"attractor": attractor, "attractor_official": attractor, "linear": simulate.LINEAR_A}.get(name)


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
    a_init: str = "normal"

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
    a_init: str = "normal",
    ablation_sets: tuple[str, ...] = (),
) -> list[Fit]:
    """iSSM and SSM on every set and seed; with ``ablation_sets``, iSSM with the other gamma (1 <-> 0) too
    (variant ``issm_gamma<g>``)."""
    fits = []
    for data in sets:
        for seed in range(seeds):
            base = Fit(data, seed, "issm", True, gamma, shared_noise, train_B, a_init)
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
        a_init=fit.a_init,
    )
    model, history = fit_model(data["y"], data["u"], cfg, iters, seed)
    FittedISSM(model, history).save(out / f"{fit.name}.safetensors")
    return {"fit": fit.to_dict(), "history": history, "seconds": time.perf_counter() - start}
