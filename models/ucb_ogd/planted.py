"""Planted sources with a closed-form risk and the exact minimax value F*.

Source k draws z = mu_k + sigma xi with xi uniform on the unit circle (sigma = 0.3), and

    l(theta; z) = ||theta - z||^2 / C,   C = (R + max_k ||mu_k|| + sigma)^2,   R = 3,

so 0 <= l <= 1 on the ball ||theta|| <= R. Since E xi = 0 and ||xi|| = 1,

    L_k(theta) = E l(theta; z) = (||theta - mu_k||^2 + sigma^2) / C.

The worst-source objective F(theta) = max_k L_k(theta) and its minimum F* = min_{||theta|| <= R} F(theta) come
from the dual over the simplex (convex-concave in (theta, p), so min max = max min):

    F* = max_{p in simplex} min_theta sum_k p_k L_k(theta) = (D* + sigma^2) / C,
    D(p) = sum_k p_k ||mu_k||^2 - ||sum_k p_k mu_k||^2,   theta*(p) = sum_k p_k mu_k

(the inner minimiser is the p-mean of the mu_k, inside the convex hull, hence inside the ball when every
||mu_k|| <= R). D is a concave quadratic; :func:`minimax` solves it exactly by enumerating the supports S of at
most d + 1 sources (Caratheodory: some optimal p has such a support) and solving each one's KKT system

    2 M_S M_S^T p_S + lambda 1 = a_S,   1^T p_S = 1   (a_k = ||mu_k||^2),

keeping the solutions with p_S >= 0 and a_j - 2 mu_j . theta <= lambda off the support. Geometrically theta* is
the centre of the smallest ball enclosing the mu_k and D* its squared radius. The primal value
max_k L_k(theta*) minus the dual value certifies the solution (weak duality: the gap is >= 0 for any feasible
pair, and 0 only at the optimum).

The problems of the issue: K = 5, mu = (-1, 0.2), (-1, -0.2), (-1.2, 0), (-0.8, 0), (2, 0) (four close sources
and a far one); K = 3, the first two and (2, 0). In both, max ||mu_k|| = 2 and C = 5.3^2 = 28.09.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

RADIUS = 3.0
NOISE = 0.3
MEANS: dict[int, tuple[tuple[float, float], ...]] = {
    5: ((-1.0, 0.2), (-1.0, -0.2), (-1.2, 0.0), (-0.8, 0.0), (2.0, 0.0)),
    3: ((-1.0, 0.2), (-1.0, -0.2), (2.0, 0.0)),
}


@dataclass(frozen=True)
class Minimax:
    """The solution of min_theta max_k L_k(theta): ``theta`` (the minimiser), ``weights`` (the optimal p),
    ``value`` (F* = the dual value), ``primal`` (max_k L_k(theta)) and ``gap`` (primal - value)."""

    theta: np.ndarray
    weights: np.ndarray
    value: float
    primal: float

    @property
    def gap(self) -> float:
        return self.primal - self.value


def minimax_dual(means: np.ndarray, tol: float = 1e-12) -> tuple[np.ndarray, float]:
    """argmax_p D(p) and D* over the simplex, by enumerating the supports of size <= d + 1 (module docstring)."""
    M = np.asarray(means, dtype=float)
    K, d = M.shape
    a = np.einsum("kd,kd->k", M, M)
    scale = max(1.0, float(a.max()))
    best: tuple[float, np.ndarray] | None = None
    for size in range(1, min(K, d + 1) + 1):
        for S in itertools.combinations(range(K), size):
            S = list(S)
            A = np.zeros((size + 1, size + 1))
            A[:size, :size] = 2.0 * M[S] @ M[S].T
            A[:size, size] = 1.0
            A[size, :size] = 1.0
            b = np.append(a[S], 1.0)
            if np.linalg.matrix_rank(A, tol=1e-10 * scale) < size + 1:
                continue  # affinely dependent support: a smaller one represents the same solution
            sol = np.linalg.solve(A, b)
            pS, lam = sol[:size], sol[size]
            if pS.min() < -1e-9:
                continue
            p = np.zeros(K)
            p[S] = np.clip(pS, 0.0, None)
            p /= p.sum()
            theta = p @ M
            if np.max(a - 2.0 * M @ theta) > lam + 1e-9 * scale:
                continue
            value = float(p @ a - theta @ theta)
            if best is None or value > best[0] + tol:
                best = (value, p)
    if best is None:  # cannot happen for finite means (a singleton or a pair always qualifies)
        raise RuntimeError("no KKT point found")
    return best[1], best[0]


@dataclass(frozen=True)
class Planted:
    """K planted sources (means (K, d)) on the ball of radius R with noise radius sigma (module docstring)."""

    means: np.ndarray
    radius: float = RADIUS
    noise: float = NOISE

    def __post_init__(self) -> None:
        M = np.asarray(self.means, dtype=float)
        if M.ndim != 2 or len(M) < 1:
            raise ValueError(f"means must be (K, d) with K >= 1, got shape {M.shape}")
        if np.linalg.norm(M, axis=1).max() > self.radius:
            raise ValueError("every mean must lie in the ball of radius R (the minimiser must be feasible)")
        object.__setattr__(self, "means", M)

    @property
    def n_sources(self) -> int:
        return len(self.means)

    @property
    def scale(self) -> float:
        """C = (R + max ||mu_k|| + sigma)^2."""
        return (self.radius + float(np.linalg.norm(self.means, axis=1).max()) + self.noise) ** 2

    @property
    def grad_bound(self) -> float:
        """G = 2 (R + max ||mu_k|| + sigma) / C = 2 / sqrt(C)."""
        return 2.0 / math.sqrt(self.scale)

    def risks(self, theta: np.ndarray) -> np.ndarray:
        """L_k(theta) = (||theta - mu_k||^2 + sigma^2) / C for theta (..., d): (..., K)."""
        diff = np.asarray(theta, dtype=float)[..., None, :] - self.means
        return (np.einsum("...kd,...kd->...k", diff, diff) + self.noise**2) / self.scale

    def worst(self, theta: np.ndarray) -> np.ndarray:
        """F(theta) = max_k L_k(theta)."""
        return self.risks(theta).max(axis=-1)

    def minimax(self) -> Minimax:
        """theta*, p*, F* and the primal value (module docstring)."""
        p, D = minimax_dual(self.means)
        theta = p @ self.means
        value = (D + self.noise**2) / self.scale
        return Minimax(theta=theta, weights=p, value=value, primal=float(self.worst(theta)))

    def draw(self, k: int, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws of source k: mu_k + sigma xi, xi uniform on the unit sphere (the circle in 2-d: one angle)."""
        d = self.means.shape[1]
        if d == 2:
            phi = rng.uniform(0.0, 2.0 * math.pi, n)
            xi = np.stack([np.cos(phi), np.sin(phi)], axis=1)
        else:
            xi = rng.standard_normal((n, d))
            xi /= np.linalg.norm(xi, axis=1, keepdims=True)
        return self.means[k] + self.noise * xi


def planted(K: int) -> Planted:
    """The issue's planted problem with K = 3 or 5 sources."""
    if K not in MEANS:
        raise ValueError(f"planted sources exist for K in {sorted(MEANS)}, got {K}")
    return Planted(np.array(MEANS[K]))
