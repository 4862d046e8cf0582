"""The TMvML estimator and the baselines, on a list of views (arrays with the same rows) and labels Y in {0, 1}.

TMvML (models/tmvml/admm.py): every view is standardised on the training rows and brought to a common width (zero
padding to the widest view by default, ``common_dim="pca"`` for PCA to the narrowest; ours), the targets are
centred per label (the bias, ours: ``bias=False`` fits Y itself), and the prediction is the mean over views,
F = (1 / V) sum_v X_v W_v + b, thresholded at 0.5 for label sets.

Baselines: ``PerViewRidge`` (a ridge regression per view, scores averaged), ``ConcatRidge`` (one ridge on the
concatenated views), ``LabelFrequency`` (every row scored by the training label frequencies), and TMvML with
``penalty="tnn"`` (the convex tensor nuclear norm in the same ADMM).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.tmvml.admm import admm
from models.tmvml.tensor import PENALTIES, PROX


def _check(views, y=None) -> tuple[list[np.ndarray], np.ndarray | None]:
    from icml25.errors import UserError

    if not isinstance(views, list | tuple) or not views:
        raise UserError("views: a non-empty list of arrays with the same rows")
    xs = [np.asarray(v, dtype=float) for v in views]
    for i, x in enumerate(xs):
        if x.ndim != 2 or x.shape[1] == 0:
            raise UserError(f"view {i + 1} has shape {x.shape}; each view must be a 2-D array with columns")
        if x.shape[0] != xs[0].shape[0]:
            raise UserError(f"view {i + 1} has {x.shape[0]} rows, view 1 has {xs[0].shape[0]}")
        if not np.isfinite(x).all():
            raise UserError(f"view {i + 1}: NaN or infinite values")
    if y is None:
        return xs, None
    y = np.asarray(y, dtype=float)
    if y.ndim != 2 or y.shape[0] != xs[0].shape[0]:
        raise UserError(
            f"Y has shape {y.shape}; it must be (rows, labels) with the views' {xs[0].shape[0]} rows"
        )
    if not np.isin(y, (0.0, 1.0)).all():
        raise UserError("Y: labels must be 0 or 1")
    return xs, y


class _Scaler:
    def fit(self, x: np.ndarray) -> _Scaler:
        self.mean, sd = x.mean(0), x.std(0)
        self.sd = np.where(sd > 1e-12, sd, 1.0)
        return self

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mean) / self.sd


@dataclass
class TMvML:
    """Tensorized multi-view multi-label classification with the Laplace tensor rank (or the TNN)."""

    lam: float = 100.0
    delta: float = 1.0
    penalty: str = "ltr"
    rho: float = 1.0
    mu: float = 1.2
    rho_max: float = 1e8
    tol: float = 1e-4
    max_iter: int = 300
    common_dim: str | None = None  # None: zero padding to the widest view; "pca": PCA to the narrowest
    bias: bool = True
    scale: float = 1.0  # LTR / TNN times this (1: the sum over slices)
    prox: str = "fixed_point"
    dual_sign: float = 1.0

    def __post_init__(self):
        from icml25.errors import UserError

        for name in ("lam", "delta", "rho", "mu", "tol"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise UserError(f"{name} {value}: must be a finite number > 0")
        if self.penalty not in PENALTIES:
            raise UserError(f"penalty {self.penalty!r}: choose from {', '.join(PENALTIES)}")
        if self.prox not in PROX:
            raise UserError(f"prox {self.prox!r}: choose from {', '.join(PROX)}")
        if self.common_dim not in (None, "pad", "pca"):
            raise UserError(f"common_dim {self.common_dim!r}: choose None (zero padding) or 'pca'")

    def _common(self, xs: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for x, s, p in zip(xs, self.scalers_, self.pcas_, strict=True):
            z = s(x)
            if p is not None:
                z = z @ p
            out.append(np.pad(z, ((0, 0), (0, self.d_ - z.shape[1]))))
        return out

    def fit(self, views, y) -> TMvML:
        xs, y = _check(views, y)
        self.scalers_ = [_Scaler().fit(x) for x in xs]
        self.pcas_ = [None] * len(xs)
        if self.common_dim == "pca":
            k = min(x.shape[1] for x in xs)
            for i, (x, s) in enumerate(zip(xs, self.scalers_, strict=True)):
                _, _, vt = np.linalg.svd(s(x), full_matrices=False)
                self.pcas_[i] = vt[:k].T
        self.d_ = max(x.shape[1] for x in xs) if self.common_dim != "pca" else min(x.shape[1] for x in xs)
        self.b_ = y.mean(0) if self.bias else np.zeros(y.shape[1])
        res = admm(self._common(xs), y - self.b_, self.lam, penalty=self.penalty, delta=self.delta, rho=self.rho,
                   mu=self.mu, rho_max=self.rho_max, tol=self.tol, max_iter=self.max_iter, scale=self.scale,
                   prox=self.prox, dual_sign=self.dual_sign)  # fmt: skip
        self.w_, self.iterations_, self.converged_, self.residuals_ = (
            res.w, res.iterations, res.converged, res.residuals,
        )  # fmt: skip
        self.views_ = len(xs)
        return self

    def decision_function(self, views) -> np.ndarray:
        from icml25.errors import UserError

        xs, _ = _check(views)
        if len(xs) != self.views_:
            raise UserError(f"{len(xs)} views given; the model was fitted on {self.views_}")
        zs = self._common(xs)
        return sum(z @ self.w_[:, :, v] for v, z in enumerate(zs)) / len(zs) + self.b_

    def predict(self, views, threshold: float = 0.5) -> np.ndarray:
        return (self.decision_function(views) >= threshold).astype(int)


def _ridge(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    return np.linalg.solve(x.T @ x + lam * np.eye(x.shape[1]), x.T @ y)


@dataclass
class PerViewRidge:
    """A ridge regression (penalty lam, standardised features, centred targets) per view; scores averaged."""

    lam: float = 10.0

    def fit(self, views, y):
        xs, y = _check(views, y)
        self.scalers_ = [_Scaler().fit(x) for x in xs]
        self.b_ = y.mean(0)
        self.ws_ = [_ridge(s(x), y - self.b_, self.lam) for s, x in zip(self.scalers_, xs, strict=True)]
        return self

    def decision_function(self, views) -> np.ndarray:
        xs, _ = _check(views)
        return sum(s(x) @ w for s, x, w in zip(self.scalers_, xs, self.ws_, strict=True)) / len(xs) + self.b_


@dataclass
class ConcatRidge:
    """One ridge regression on the concatenated (standardised) views."""

    lam: float = 10.0

    def fit(self, views, y):
        xs, y = _check(views, y)
        x = np.concatenate(xs, 1)
        self.scaler_ = _Scaler().fit(x)
        self.b_ = y.mean(0)
        self.w_ = _ridge(self.scaler_(x), y - self.b_, self.lam)
        return self

    def decision_function(self, views) -> np.ndarray:
        xs, _ = _check(views)
        return self.scaler_(np.concatenate(xs, 1)) @ self.w_ + self.b_


@dataclass
class LabelFrequency:
    """Every row gets the training label frequencies as scores (a ranker that ignores the features)."""

    lam: float = 0.0  # unused: the same interface as the others

    def fit(self, views, y):
        _, y = _check(views, y)
        self.b_ = y.mean(0)
        return self

    def decision_function(self, views) -> np.ndarray:
        xs, _ = _check(views)
        return np.tile(self.b_, (len(xs[0]), 1))
