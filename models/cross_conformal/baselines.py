"""The comparison methods, our own implementations (intervals as (lower, upper) arrays over test points).

- split conformal (Lei et al. 2018): fit on a random half, calibrate on the other m points;
  C(x) = mu(x) +- q with q the ceil((1 - alpha)(m + 1))-th smallest calibration residual (+inf if that exceeds
  m). The official scripts call conformalInference::conformal.pred.split with split 0.5, the same rule.
- CV+ (Barber et al. 2021), jackknife+ when K = n: with out-of-fold predictions mu_{-k(i)}(x) and residuals R_i,
  C(x) = [ q^-_alpha {mu_{-k(i)}(x) - R_i},  q^+_alpha {mu_{-k(i)}(x) + R_i} ], where q^- is the
  floor(alpha (n + 1))-th smallest value (-inf if 0) and q^+ the ceil((1 - alpha)(n + 1))-th smallest (+inf if
  > n). The official jackknife+ uses R's type-7 ``quantile`` at those probabilities (interpolating); we keep the
  order statistics of the definition, whose coverage is proven.
- full conformal for a linear smoother (exact, no grid): with the test point appended, the fitted values are
  H [Y; y] for the hat matrix H of the augmented design, so the residuals are A + B y with A = (I - H)[Y; 0],
  B = (I - H) e_{n+1}. p(y) = (1 + #{i <= n : |A_i + B_i y| >= |A_{n+1} + B_{n+1} y|})/(n + 1) changes only at
  the roots of (A_i + B_i y)^2 = (A_{n+1} + B_{n+1} y)^2, so the set {p > alpha} is read off exactly from the
  roots and the points between them. For p >= n + 1 the min-norm fit interpolates (H = I), every residual is
  0 and the set is the whole line.
"""

from __future__ import annotations

import math

import numpy as np

from .core import SetBatch, exact_level, runs_to_sets


def split_interval(cal_residuals: np.ndarray, mu: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    r = np.sort(np.asarray(cal_residuals, float))
    m = len(r)
    k = math.ceil((1 - exact_level(alpha)) * (m + 1))
    q = np.inf if k > m else r[k - 1]
    mu = np.asarray(mu, float)
    return mu - q, mu + q


def cv_plus(residuals: np.ndarray, mu_oof: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """residuals (n,), mu_oof (T, n): mu_{-k(i)}(x_t) for each training point i."""
    r = np.asarray(residuals, float)
    n = len(r)
    a = exact_level(alpha)
    kl = math.floor(a * (n + 1))
    ku = math.ceil((1 - a) * (n + 1))
    lo_vals = mu_oof - r
    hi_vals = mu_oof + r
    lower = np.full(len(mu_oof), -np.inf) if kl < 1 else np.partition(lo_vals, kl - 1, axis=1)[:, kl - 1]
    upper = np.full(len(mu_oof), np.inf) if ku > n else np.partition(hi_vals, ku - 1, axis=1)[:, ku - 1]
    return lower, upper


def cv_plus_from_folds(residuals_by_fold: np.ndarray, mu: np.ndarray, alpha: float):
    """CV+ from the cross-conformal fold scores: residuals (K, m), fold predictions mu (T, K)."""
    K, m = residuals_by_fold.shape
    return cv_plus(residuals_by_fold.ravel(), np.repeat(mu, m, axis=1), alpha)


def loo_min_norm(X: np.ndarray, y: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out min-norm OLS: residuals |y_i - mu_{-i}(x_i)| (n,) and predictions mu_{-i}(x_test) (T, n),
    in closed form (no refits) when the design has full rank, by n stacked pseudo-inverses otherwise.

    - p < n (X^T X invertible): with the hat matrix H = X (X^T X)^{-1} X^T and r = y - X beta,
      beta_{-i} = beta - (X^T X)^{-1} x_i r_i / (1 - h_ii), so the LOO residual is r_i / (1 - h_ii).
    - p >= n (G = X X^T invertible, every fit interpolates): beta_{-i} = X_{-i}^T G_{-i}^{-1} y_{-i}, and with
      A = G^{-1} the block-inverse identity gives G_{-i}^{-1} y_{-i} = (c - A e_i c_i / A_ii)_{-i}, c = A y;
      the LOO residual is c_i / A_ii.
    """
    X, y = np.asarray(X, float), np.asarray(y, float)
    xt = np.atleast_2d(np.asarray(x_test, float))
    n, p = X.shape
    if p < n:
        gram = X.T @ X
        if np.linalg.cond(gram) < 1e10:
            inv = np.linalg.inv(gram)
            beta = inv @ (X.T @ y)
            r = y - X @ beta
            h = np.einsum("ij,jk,ik->i", X, inv, X)
            if np.all(h < 1 - 1e-8):
                w = r / (1 - h)  # beta_{-i} = beta - inv x_i w_i
                return np.abs(w), (xt @ beta)[:, None] - (xt @ inv @ X.T) * w[None, :]
    else:
        G = X @ X.T
        if np.linalg.cond(G) < 1e10:
            A = np.linalg.inv(G)
            c = A @ y
            coef = c[:, None] - A * (c / np.diag(A))[None, :]  # column i: G_{-i}^{-1} y_{-i}, zero at i
            return np.abs(c / np.diag(A)), (xt @ X.T) @ coef
    keep = ~np.eye(n, dtype=bool)  # rank-deficient: refit each
    Xs = np.stack([X[keep[i]] for i in range(n)])  # (n, n-1, p)
    ys = np.stack([y[keep[i]] for i in range(n)])  # (n, n-1)
    beta = np.einsum("ipn,in->ip", np.linalg.pinv(Xs), ys)  # (n, p)
    return np.abs(y - np.einsum("ip,ip->i", X, beta)), xt @ beta.T


def full_conformal_linear(X: np.ndarray, y: np.ndarray, x_test: np.ndarray, alpha: float) -> SetBatch:
    """Exact full-conformal sets of min-norm OLS (no intercept) for the rows of x_test."""
    n = len(y)
    x_test = np.atleast_2d(np.asarray(x_test, float))
    a = exact_level(alpha)
    need = math.floor(a * (n + 1))  # member <=> 1 + count > need
    parts = []
    for x in x_test:
        Xa = np.vstack([X, x])
        H = Xa @ np.linalg.pinv(Xa)
        IH = np.eye(n + 1) - H
        if np.max(np.abs(IH)) < 1e-9:  # the fit interpolates: every residual is 0, every y conforms
            parts.append(SetBatch(1, np.zeros(1, np.int64), np.full(1, -np.inf), np.full(1, np.inf)))
            continue
        A = IH[:, :n] @ y
        B = IH[:, n]
        parts.append(_full_one(A, B, need))
    return SetBatch.concat(parts)


def _full_one(A: np.ndarray, B: np.ndarray, need: int) -> SetBatch:
    a0, b0 = A[-1], B[-1]
    Ai, Bi = A[:-1], B[:-1]
    # (Ai + Bi y)^2 - (a0 + b0 y)^2 = qa y^2 + qb y + qc >= 0
    qa, qb, qc = Bi**2 - b0**2, 2 * (Ai * Bi - a0 * b0), Ai**2 - a0**2
    tol = 1e-12 * max(1.0, float(np.max(np.abs(A))), float(np.max(np.abs(B))))
    roots = []
    lin = np.abs(qa) <= tol**2
    with np.errstate(divide="ignore", invalid="ignore"):
        r_lin = np.where(lin & (np.abs(qb) > tol**2), -qc / qb, np.nan)
        disc = qb**2 - 4 * qa * qc
        sq = np.sqrt(np.where(~lin & (disc >= 0), disc, np.nan))
        roots = np.concatenate([r_lin, (-qb - sq) / (2 * qa), (-qb + sq) / (2 * qa)])
    bp = np.unique(roots[np.isfinite(roots)])

    def member(yv: np.ndarray) -> np.ndarray:
        ri = np.abs(Ai[None, :] + Bi[None, :] * yv[:, None])
        r0 = np.abs(a0 + b0 * yv)
        # ties within rounding count as ties (interpolating fits give residuals ~1e-15)
        count = np.sum(ri >= r0[:, None] - tol, axis=1)
        return 1 + count > need

    if len(bp) == 0:
        ok = bool(member(np.zeros(1))[0])
        return SetBatch(1, np.zeros(int(ok), np.int64), np.full(int(ok), -np.inf), np.full(int(ok), np.inf))
    span = max(1.0, bp[-1] - bp[0])
    inside = np.concatenate([[bp[0] - span], 0.5 * (bp[1:] + bp[:-1]), [bp[-1] + span]])
    return runs_to_sets(member(inside)[None, :], bp[None, :])
