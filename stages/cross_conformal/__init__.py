"""Efficient cross-conformal prediction: the controlled CPU reproduction.

Gasparin & Ramdas. "Improving the statistical efficiency of cross-conformal prediction". ICML 2025.
https://github.com/matteogaspa/EffCrossCP

K random folds in the split's order, fold p-values p_k(y) = (1 + #{i in S_k : R_i >= |y - mu_{-k}(x)|})/(m + 1);
mod-cross {pbar > alpha}; e-mod {min_k pbar_k > alpha}; u-mod {pbar/(2 - U) > alpha}; eu-mod
{min(p_1/(2 - U), min_k pbar_k) > alpha}, all with coverage >= 1 - 2 alpha; Vovk's cross-conformal is mod at
alpha' = alpha + (1 - alpha)(K - 1)/(n + K). Sets are computed exactly from the score breakpoints
(models/cross_conformal/core.py).

Stages (one module each; the drivers in models/cross_conformal/experiment.py): prepare (the OLS simulation of
Barber et al. 2021 on a grid of p, with each replicate's random folds; diabetes or a CSV with random train/test
splits and folds) -> validate (GX: shapes, finite values, beta's norm, folds equal-sized with the n mod K
surplus left out) -> train (the out-of-fold models: fold residuals and fold predictions at the test points;
split-conformal and leave-one-out fits) -> evaluate (exact sets of every method, the official grid construction
beside them, split / CV+ / jackknife+ / exact full conformal, MAPIE's CV+; coverage, widths, nesting, the alpha'
identity; the summaries the report shows) -> report (claims in report.py, prose in report.md).
Train and evaluate run chunks of replicates / splits on ``workers`` forked processes, one BLAS thread each; their
files do not depend on the number of workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from icml25.registry import Paper

MODELS = ("ols", "linear", "ridge", "lasso", "rf")


@dataclass(frozen=True)
class Prepare:
    n: int = field(default=100, metadata={"ge": 4})
    p_grid: tuple[int, ...] = field(default=(5, 20, 60, 80, 120), metadata={"ge": 1})
    replications: int = field(default=300, metadata={"ge": 2})
    n_test: int = field(default=1, metadata={"ge": 1})
    signal: float = field(default=10.0, metadata={"gt": 0.0})
    folds: int = field(default=5, metadata={"ge": 2})
    real_source: Literal["diabetes", "csv"] = "diabetes"
    real_csv: str = "real.csv"  # relative to data/cross_conformal/input/
    real_target: str = "target"
    real_splits: int = field(default=20, metadata={"ge": 1})
    real_test: int = field(default=100, metadata={"ge": 1})
    real_folds: tuple[int, ...] = field(default=(5, 10), metadata={"ge": 2})


@dataclass(frozen=True)
class Train:
    real_models: tuple[str, ...] = field(default=("linear", "lasso", "rf"), metadata={"choices": MODELS})
    lasso_alpha: float = field(default=0.1, metadata={"gt": 0.0})
    rf_trees: int = field(default=25, metadata={"ge": 1})
    jackknife: bool = True
    workers: int = field(default=2, metadata={"ge": 1})  # forked processes for the independent fits


@dataclass(frozen=True)
class Evaluate:
    alpha: float = field(default=0.1, metadata={"gt": 0.0, "lt": 0.5})
    sets: Literal["exact", "official_grid"] = "exact"
    grid_points: int = field(default=1000, metadata={"ge": 2})
    unstable_p: tuple[int, ...] = field(default=(75, 85), metadata={"ge": 0})
    unstable_grid_points: int = field(default=300_000, metadata={"ge": 2})
    unstable_grid_factor: float = field(default=1000.0, metadata={"gt": 0.0})
    full_conformal: bool = True
    mapie: bool = True
    mapie_p: tuple[int, ...] = field(default=(20,), metadata={"ge": 1})
    workers: int = field(default=2, metadata={"ge": 1})  # forked processes for the independent replicates


PAPER = Paper(
    slug="cross_conformal",
    citation="Gasparin & Ramdas. *Improving the statistical efficiency of cross-conformal prediction*. ICML 2025.",
    url="https://github.com/matteogaspa/EffCrossCP",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
