"""STAR: rotation-augmented residual skill quantization (RaRSQ) and a causal skill transformer (CST): the
controlled CPU reproduction.

Li et al. ICML 2025. Official code: not released; this is a reconstruction from the paper and the rotation
trick's reference implementation (vector-quantize-pytorch), so every hyperparameter below is our choice. LIBERO
needs a simulator and GPUs: a synthetic 2-D point-mass world with a gripper stands in (models/star/world.py).

Stage 1 (RaRSQ, models/star/quantizer.py), per depth d of D, on the residual r of the encoder's output::

    k = argmin_k ||r - e_k||^2,  q = e_k,  q~ = sg[lambda R] r,  lambda = ||q|| / ||r||,
    R = I - 2 w w' + 2 q^ r^',  w = (r^ + q^) / ||r^ + q^||,  next residual r - sg[q]

(q~ = q in value; the gradient to r is lambda R' g), loss = reconstruction MSE + beta mean((r - q)^2) per depth.
Baseline: the same quantizer with the straight-through estimator. Stage 2 (CST, models/star/cst.py): a causal
transformer over [task, state, previous chunks' codes] predicting k_1 then k_2 given k_1, plus an offset head.

Stages: prepare (the world's tasks and demos, or a user's LIBERO-style HDF5) -> validate (GX: action ranges,
chunk shapes, task ids, demo counts) -> train (stage 1 per seed and variant, then stage 2 on each seed's RaRSQ
codes; Lightning, forked workers) -> evaluate (code usage and MSE on held-out chunks, the rotation checks,
closed-loop success) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper

ABLATIONS = ("rotation_normal", "ste_normal", "library_ema")
CST_VARIANTS = ("cst", "ar_no_offset", "independent_offset", "independent")


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="simulated", metadata={"choices": ("simulated", "hdf5")})
    file: str = "demos.hdf5"  # data/star/input/<file>: data/demo_i/actions (T x A), LIBERO's layout
    tasks: int = field(default=12, metadata={"ge": 1})
    demos: int = field(default=40, metadata={"ge": 1})  # per task, for training
    test_demos: int = field(default=10, metadata={"ge": 1})  # per task, held out (code usage, MSE)
    min_primitives: int = field(default=4, metadata={"ge": 1})
    max_primitives: int = field(default=6, metadata={"ge": 1})
    horizon: int = field(default=8, metadata={"ge": 1})
    noise: float = field(default=0.01, metadata={"ge": 0.0})
    start: float = field(default=0.2, metadata={"ge": 0.0})  # starts uniform in [-start, start]^2
    test_every: int = field(default=10, metadata={"ge": 2})  # hdf5: every test_every-th demo is held out


@dataclass(frozen=True)
class Train:
    seeds: int = field(default=3, metadata={"ge": 1})
    steps: int = field(default=1500, metadata={"ge": 1})
    batch: int = field(default=256, metadata={"ge": 1})
    lr: float = field(default=1e-3, metadata={"gt": 0.0})
    latent: int = field(default=16, metadata={"ge": 1})
    hidden: int = field(default=128, metadata={"ge": 1})
    depths: int = field(default=2, metadata={"ge": 1})
    codes: int = field(default=32, metadata={"ge": 2})
    beta: float = field(default=0.25, metadata={"ge": 0.0})
    init_sd: float = field(default=0.25, metadata={"gt": 0.0})  # the normal-init ablation's sd
    ablations: tuple[str, ...] = field(default=ABLATIONS, metadata={"choices": ABLATIONS})
    cst_variants: tuple[str, ...] = field(default=CST_VARIANTS, metadata={"choices": CST_VARIANTS})
    cst_steps: int = field(default=300, metadata={"ge": 1})
    cst_batch: int = field(default=64, metadata={"ge": 1})
    d_model: int = field(default=64, metadata={"ge": 4})
    layers: int = field(default=2, metadata={"ge": 1})
    workers: int = field(default=2, metadata={"ge": 1})


@dataclass(frozen=True)
class Evaluate:
    episodes: int = field(default=50, metadata={"ge": 1})  # per task and policy
    tolerance: float = field(default=0.1, metadata={"gt": 0.0})  # success: within this of the goal


PAPER = Paper(
    slug="star",
    citation="Li et al. *STAR: Learning Diverse Robot Skill Abstractions through Rotation-Augmented Vector "
    "Quantization*. ICML 2025.",
    url="not released",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
