"""Autospeculative decoding (ASD) for DDPMs: the controlled CPU reproduction.

Hu, Das, Sadigh and Anari, ICML 2025. No official code is public: the algorithm is derived from the paper's text
(models/autospeculative/samplers.py), and its Stable Diffusion, LSUN and Robomimic models are out of reach
offline; the report says so.

In SL coordinates (t_k = abar_k / (1 - abar_k), y_k = sqrt(t_k (1 + t_k)) x_k, eta_k = t_{k+1} - t_k) the DDPM step
with posterior variance is y_{k+1} = y_k + eta_k m(y_k, t_k) + sqrt(eta_k) xi. ASD drafts L steps with a frozen
mean m-hat (no calls), verifies them in one batched call, accepts step i with probability
min(1, phi(xi + z) / phi(xi)), z = sqrt(eta) (m-hat - m_i), and at the first rejection takes the reflection
xi - 2 (e.xi) e, e = z / |z|: the output law is exactly the sequential sampler's.

Stages: prepare (the mixture's components, the digits in [-1, 1] or a user's (n, d) .npy, one cosine-schedule
grid per K) -> validate (GX: grids strictly increasing, weights, pixel range) -> train (the x0-predicting MLP
on the digits, Lightning; safetensors) -> evaluate (every arm's calls, the energy-distance permutation tests,
acceptance by step, samples) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="digits", metadata={"choices": ("digits", "npy")})
    npy: str = (
        ""  # with source npy: an (n, d) float array in [-1, 1], relative to data/autospeculative/input/
    )
    components: int = field(default=8, metadata={"ge": 1})
    radius: float = field(default=4.0, metadata={"gt": 0.0})
    sigma: float = field(default=0.25, metadata={"gt": 0.0})
    Ks: tuple[int, ...] = (64, 256, 1024)  # the mixture's
    digits_K: int = field(default=256, metadata={"ge": 2})


@dataclass(frozen=True)
class Train:
    steps: int = field(default=3000, metadata={"ge": 1})
    batch: int = field(default=256, metadata={"ge": 1})
    hidden: int = field(default=256, metadata={"ge": 1})
    depth: int = field(default=3, metadata={"ge": 1})
    lr: float = field(default=2e-3, metadata={"gt": 0.0})


@dataclass(frozen=True)
class Evaluate:
    n: int = field(default=500, metadata={"ge": 2})  # samples per arm
    windows: tuple[int, ...] = (8, 32)  # besides L = K
    permutations: int = field(default=999, metadata={"ge": 19})
    fresh: bool = True  # also run frozen_mean = fresh (one more call per round) at L = K


PAPER = Paper(
    slug="autospeculative",
    citation="Hu, Das, Sadigh and Anari. *Diffusion Models are Secretly Exchangeable: Parallelizing DDPMs via "
    "Autospeculation*. ICML 2025.",
    url="none public",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
