"""Singular points attract gradient descent: the sum-of-squares model f(x) = sum_{i <= r} (w_i . x)^2 = x' W W' x,
whose neuromanifold is the PSD matrices of rank <= r (a semi-algebraic set, singular where the rank is < r).

Descent on L(W) = |W W' - T|_F^2 (gradient 4 (W W' - T) W) from W_0 = scale N(0, 1), every trial in one batch.
The endpoint is singular iff s_r(W) / s_1(W) < ``SINGULAR`` = 1e-3. Prediction (Eckart-Young on the PSD cone):
the nearest point keeps T's positive eigenvalues among its r largest, so it is singular iff T has fewer than r
positive eigenvalues; its loss is the sum of squares of the eigenvalues it drops (every negative one, and the
positive ones beyond the r largest).

Control: the signed model W1 W0 (the full determinantal variety of rank <= r), L = |W1 W0 - T|_F^2; its optimum
(the truncated SVD) has rank exactly r almost surely, so descent ends singular only by accident. The singular
endpoint of the control is read from s_r(W1 W0) / s_1(W1 W0).
"""

from __future__ import annotations

import numpy as np

SINGULAR = 1e-3


def targets(trials: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """T = (G + G') / 2, G with standard normal entries: (trials, size, size)."""
    g = rng.standard_normal((trials, size, size))
    return (g + g.transpose(0, 2, 1)) / 2


def psd_descent(T: np.ndarray, W0: np.ndarray, steps: int, lr: float) -> tuple[np.ndarray, np.ndarray]:
    """(W, loss per step's end) after ``steps`` gradient steps on |W W' - T|^2, batched over trials."""
    W = W0.copy()
    for _ in range(steps):
        R = W @ W.transpose(0, 2, 1) - T
        W -= lr * 4.0 * R @ W
    R = W @ W.transpose(0, 2, 1) - T
    return W, (R**2).sum((1, 2))


def signed_descent(T: np.ndarray, A0: np.ndarray, B0: np.ndarray, steps: int, lr: float):
    """(A, B, loss) after ``steps`` gradient steps on |A B - T|^2 (A: size x r, B: r x size)."""
    A, B = A0.copy(), B0.copy()
    for _ in range(steps):
        R = A @ B - T
        A, B = A - lr * 2.0 * R @ B.transpose(0, 2, 1), B - lr * 2.0 * A.transpose(0, 2, 1) @ R
    R = A @ B - T
    return A, B, (R**2).sum((1, 2))


def ratio(M: np.ndarray, r: int) -> np.ndarray:
    """s_r(M) / s_1(M) per trial."""
    s = np.linalg.svd(M, compute_uv=False)
    return s[:, r - 1] / s[:, 0]


def singular(M: np.ndarray, r: int) -> np.ndarray:
    """s_r(M) / s_1(M) < SINGULAR per trial."""
    return ratio(M, r) < SINGULAR


def predicted_singular(T: np.ndarray, r: int) -> np.ndarray:
    """T has fewer than r positive eigenvalues."""
    return (np.linalg.eigvalsh(T) > 0).sum(1) < r


def psd_optimum_loss(T: np.ndarray, r: int) -> np.ndarray:
    """min over PSD M of rank <= r of |M - T|^2: the squares of every eigenvalue but the r largest positive."""
    ev = np.sort(np.linalg.eigvalsh(T), axis=1)[:, ::-1]
    keep = np.zeros_like(ev, dtype=bool)
    keep[:, :r] = True
    keep &= ev > 0
    return np.where(keep, 0.0, ev**2).sum(1)
