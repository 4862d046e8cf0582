"""The two-sample energy distance and its permutation test.

For samples X (n) and Y (m), with D the Euclidean distances, the energy distance (the V-statistic) is

    E = 2 mean_{x, y} |x - y| - mean_{x, x'} |x - x'| - mean_{y, y'} |y - y'|     (>= 0; 0 iff the laws agree)

(not its square root, as scipy's 1-D ``energy_distance`` reports). The permutation test relabels the pooled
sample P times; p = (1 + #{E_perm >= E}) / (P + 1), so its floor is 1 / (P + 1). With a in {0, 1}^N marking
the first group, the within-group sums are a'Da and b'Db (b = 1 - a) and the cross sum a'Db = a'D1 - a'Da, so
every permutation costs one row of a matrix product.
"""

from __future__ import annotations

import numpy as np


def distances(z: np.ndarray) -> np.ndarray:
    """(N, N) Euclidean distances between the rows of z, float64."""
    z = np.asarray(z, np.float64)
    sq = (z * z).sum(1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * z @ z.T
    np.fill_diagonal(d2, 0.0)
    return np.sqrt(np.maximum(d2, 0.0))


def _energy(D: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Energy distances for the group indicators ``a`` (P, N) of the pooled distances D."""
    n = a.sum(1)
    m = a.shape[1] - n
    aD = a @ D
    within_a = (aD * a).sum(1)
    cross = aD.sum(1) - within_a
    within_b = D.sum() - within_a - 2.0 * cross
    return 2.0 * cross / (n * m) - within_a / (n * n) - within_b / (m * m)


def energy_distance(x: np.ndarray, y: np.ndarray) -> float:
    x, y = np.asarray(x, np.float64).reshape(len(x), -1), np.asarray(y, np.float64).reshape(len(y), -1)
    a = np.r_[np.ones(len(x)), np.zeros(len(y))][None]
    return float(_energy(distances(np.vstack([x, y])), a)[0])


def permutation_test(
    x: np.ndarray, y: np.ndarray, permutations: int = 999, seed: int = 0
) -> tuple[float, float]:
    """(energy distance, permutation p-value) of X against Y."""
    x, y = np.asarray(x, np.float64).reshape(len(x), -1), np.asarray(y, np.float64).reshape(len(y), -1)
    n, N = len(x), len(x) + len(y)
    D = distances(np.vstack([x, y]))
    observed = float(_energy(D, np.r_[np.ones(n), np.zeros(N - n)][None])[0])
    rng = np.random.default_rng(seed)
    a = np.zeros((permutations, N))
    for i in range(permutations):
        a[i, rng.permutation(N)[:n]] = 1.0
    null = _energy(D, a)
    p = (1 + int((null >= observed - 1e-12).sum())) / (permutations + 1)
    return observed, p
