"""What a fit is judged by (the official ``run.py`` statistics, plus the held-out prediction).

- ``unaligned_corr``: the Pearson correlation of the true and the inferred latents pooled over the
  non-intervened entries (``B u == 0``), with no alignment: only an identified model (right scale, sign and
  order of the latents) scores high.
- ``aligned_r2``: R^2 of the best affine map from the inferred to the true latents (least squares over all
  bins and trials; pooled over latents): what a post-hoc alignment can recover.
- ``recon_corr``: the Pearson correlation of y and the emission of the posterior mean.
- ``eig_distance``: the largest distance from an eigenvalue of the learned A to the nearest true eigenvalue.
- ``mse``: the mean squared error of predicted observations.
"""

from __future__ import annotations

import numpy as np


def unaligned_corr(x: np.ndarray, x_hat: np.ndarray, free: np.ndarray) -> float:
    """corr(x[free], x_hat[free]), ``free`` the boolean mask of non-intervened entries (shape of x)."""
    a, b = np.asarray(x)[free], np.asarray(x_hat)[free]
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def aligned_r2(x: np.ndarray, x_hat: np.ndarray) -> float:
    """1 - SSE / SST of x ~ x_hat W + c (all entries, pooled over the latents)."""
    X = np.asarray(x_hat).reshape(-1, x_hat.shape[-1])
    Y = np.asarray(x).reshape(-1, x.shape[-1])
    design = np.column_stack([X, np.ones(len(X))])
    coef, *_ = np.linalg.lstsq(design, Y, rcond=None)
    resid = Y - design @ coef
    sst = ((Y - Y.mean(axis=0)) ** 2).sum()
    return float(1.0 - (resid**2).sum() / sst) if sst > 0 else float("nan")


def recon_corr(y: np.ndarray, y_hat: np.ndarray) -> float:
    return float(np.corrcoef(np.ravel(y), np.ravel(y_hat))[0, 1])


def eig_distance(A: np.ndarray, A_true: np.ndarray) -> float:
    """max over eigenvalues l of A of min over eigenvalues t of A_true of |l - t|."""
    learned, true = np.linalg.eigvals(A), np.linalg.eigvals(A_true)
    return float(np.abs(learned[:, None] - true[None, :]).min(axis=1).max())


def mse(y: np.ndarray, y_hat: np.ndarray) -> float:
    return float(np.mean((np.asarray(y) - np.asarray(y_hat)) ** 2))
