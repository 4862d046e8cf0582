"""TMvML's objective and its ADMM (a reconstruction from the abstract: every inferred choice is a parameter).

    min_W  sum_v ||X_v W_v - Y||_F^2 + lam ||rot(W)||_P,     W = [W_1 ... W_V] (d x q x V), P in {LTR, TNN},

split as G = rot(W) with the scaled multiplier L (d x V x q):

    W_v <- (2 X_v^T X_v + rho I)^-1 (2 X_v^T Y + rho [rot^-1(G - L / rho)]_v)   (X_v^T X_v eigendecomposed once),
    G   <- prox_{(lam / rho) P}(rot(W) + L / rho)                              (per Fourier slice, models/tmvml/tensor.py),
    L   <- L + rho (rot(W) - G),      rho <- min(mu rho, rho_max),

stopping when ||rot(W) - G||_inf < tol. ``mu = 1`` keeps rho fixed (the claims' converges stub); ``dual_sign = -1``
flips the multiplier step (the other stub). Views of different widths are zero-padded to a common d (or reduced by
PCA to the smallest: ``common_dim``, in models/tmvml/model.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models.tmvml.tensor import ltr, prox_tensor, rotate, tnn, unrotate


@dataclass
class AdmmResult:
    w: np.ndarray  # d x q x V
    iterations: int
    converged: bool
    residuals: list[float] = field(default_factory=list)


def admm(xs: list[np.ndarray], y: np.ndarray, lam: float, *, penalty: str = "ltr", delta: float = 1.0,
         rho: float = 1.0, mu: float = 1.2, rho_max: float = 1e8, tol: float = 1e-4, max_iter: int = 300,
         scale: float = 1.0, prox: str = "fixed_point", dual_sign: float = 1.0,
         w0: np.ndarray | None = None) -> AdmmResult:  # fmt: skip
    """Run the ADMM on views xs (each n x d, the same d) and targets y (n x q)."""
    views = len(xs)
    d, q = xs[0].shape[1], y.shape[1]
    eig = [np.linalg.eigh(x.T @ x) for x in xs]
    xty = [2.0 * x.T @ y for x in xs]
    w = np.zeros((d, q, views)) if w0 is None else w0.copy()
    g = rotate(w).copy()
    lag = np.zeros_like(g)
    residuals = []
    for it in range(1, max_iter + 1):
        target = unrotate(g - lag / rho)
        for v, (e, u) in enumerate(eig):
            rhs = xty[v] + rho * target[:, :, v]
            w[:, :, v] = u @ ((u.T @ rhs) / (2.0 * e + rho)[:, None])
        rw = rotate(w)
        g = prox_tensor(rw + lag / rho, lam / rho, penalty, delta, scale, prox)
        gap = rw - g
        lag = lag + dual_sign * rho * gap
        res = float(np.abs(gap).max())
        residuals.append(res)
        if res < tol:
            return AdmmResult(w, it, True, residuals)
        rho = min(mu * rho, rho_max)
    return AdmmResult(w, max_iter, False, residuals)


def objective(xs: list[np.ndarray], y: np.ndarray, w: np.ndarray, lam: float, penalty: str = "ltr",
              delta: float = 1.0, scale: float = 1.0) -> float:  # fmt: skip
    """sum_v ||X_v W_v - Y||_F^2 + lam ||rot(W)||_P."""
    fit = sum(float(((x @ w[:, :, v] - y) ** 2).sum()) for v, x in enumerate(xs))
    reg = ltr(rotate(w), delta, scale) if penalty == "ltr" else tnn(rotate(w), scale)
    return fit + lam * reg
