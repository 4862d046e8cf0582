"""TMvML: tensorized multi-view multi-label classification with the Laplace tensor rank, the CPU reproduction.

Zhong, Shan, Wang, Yang and Lyu, ICML 2025 (PMLR 267:78522-78536). Neither the official code nor the paper's body was available: the model is
reconstructed from the abstract (the spec's "most plausible instantiation"), and every inferred choice (the
rotation, the LTR's normalisation, delta, the common dimension, the bias, the threshold) is a parameter.

Model: per-view linear classifiers W_v (d x q) stacked into W (d x q x V), rotated to G = permute(W, [1, 3, 2])
(d x V x q) and penalised by the Laplace tensor rank sum_k sum_i (1 - exp(-sigma_i(Gbar_k) / delta)) of the
slices of its FFT along the third mode; min sum_v ||X_v W_v - Y||_F^2 + lam ||G||_LTR by ADMM
(models/tmvml/admm.py). Baselines: per-view ridge averaged, concatenated ridge, the same ADMM with the tensor
nuclear norm, a label-frequency ranker; every lambda by inner cross-validation on a small grid.

Stages: prepare (Yeast as river ships it, two views, 5 folds; or a user's CSV: ``source: mulan``; the spec's
synthetic generator and its shared-coordinates variant; planted tubal-rank-1 tensors) -> validate (GX) -> train
(every method on every fold and synthetic draw, lambda by inner CV; no network, so no Lightning) -> evaluate (the
six metrics, the planted denoising grid, the spectra, the claims' numbers) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="yeast", metadata={"choices": ("yeast", "mulan")})
    mulan: str = ""  # with source mulan: a CSV under data/tmvml/input/
    mulan_views: str = ""  # its views: 1-based ranges or names, views separated by ";" (e.g. "1-36;37-72")
    mulan_labels: str = ""  # its label columns (e.g. "73-78")
    folds: int = field(default=5, metadata={"ge": 2})
    synthetic_seeds: int = field(default=5, metadata={"ge": 0})
    synthetic_train: tuple[int, ...] = (150, 60)
    synthetic_test: int = field(default=500, metadata={"ge": 10})
    synthetic_labels: int = field(default=8, metadata={"ge": 2})
    synthetic_dim: int = field(
        default=20, metadata={"ge": 1}
    )  # PCA of each view, fitted on the training rows
    planted_seeds: int = field(default=10, metadata={"ge": 1})
    planted_noise: float = field(default=0.3, metadata={"ge": 0.0})


@dataclass(frozen=True)
class Train:
    methods: tuple[str, ...] = ("ltr", "tnn", "ridge", "concat", "freq")
    real_splits: int = field(
        default=0, metadata={"ge": 0}
    )  # how many of the real set's folds are run (0: all)
    # the objective sums over rows, so the best lambda grows with the training rows: one grid wide enough for 60 to
    # 2,000 of them
    lam_grid: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)  # TMvML's lambda (LTR and TNN)
    ridge_grid: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0, 1000.0)
    inner_folds: int = field(default=3, metadata={"ge": 2})
    delta: float = field(default=1.0, metadata={"gt": 0.0})
    rho: float = field(default=1.0, metadata={"gt": 0.0})
    mu: float = field(default=1.2, metadata={"gt": 0.0})
    max_iter: int = field(default=300, metadata={"ge": 1})
    tol: float = field(default=1e-4, metadata={"gt": 0.0})
    common_dim: str = field(default="pad", metadata={"choices": ("pad", "pca")})
    bias: bool = True
    scale: float = field(default=1.0, metadata={"gt": 0.0})  # the LTR / TNN times this (1: the sum)
    prox: str = field(default="fixed_point", metadata={"choices": ("fixed_point", "one_step")})
    workers: int = field(default=2, metadata={"ge": 1})


@dataclass(frozen=True)
class Evaluate:
    threshold: float = 0.5
    grid_min: float = field(
        default=0.005, metadata={"gt": 0.0}
    )  # the planted prox thresholds, x the top sigma
    grid_max: float = field(default=10.0, metadata={"gt": 0.0})
    grid_points: int = field(default=30, metadata={"ge": 2})
    grid_deltas: tuple[float, ...] = (0.01, 0.03, 0.1, 0.3, 1.0)  # LTR's delta, x the top sigma


PAPER = Paper(
    slug="tmvml",
    citation="Zhong, Shan, Wang, Yang and Lyu. *Tensorized Multi-View Multi-Label Classification via Laplace "
    "Tensor Rank*. ICML 2025 (PMLR 267).",
    url="not public",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
