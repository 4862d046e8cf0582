"""Exact cross-conformal prediction sets from fold residuals (Gasparin & Ramdas, ICML 2025).

Notation. The n training points are split by a uniformly random permutation into K folds S_1..S_K of equal size
m = n/K, *in the random order of the split*. mu_{-k} is the model fit without S_k, R_i = |Y_i - mu_{-k(i)}(X_i)|
the out-of-fold residual, and for a test point x and a candidate y the fold-k test score is
R^k(y) = |y - mu_{-k}(x)|. With C_k(y) = #{i in S_k : R_i >= R^k(y)}:

- fold p-value (split conformal, calibration fold S_k):   p_k(y) = (1 + C_k(y)) / (m + 1)
- Vovk's cross-conformal (2015):                           p_CC(y) = (1 + sum_k C_k(y)) / (n + 1)
- modified cross-conformal (mod):                           pbar(y) = (1/K) sum_k p_k(y)
- running means, in the split's fold order:                 pbar_k(y) = (1/k) sum_{j<=k} p_j(y)
- with one U ~ Unif(0, 1) per test point (shared by all y):
    e-mod:  min_k pbar_k(y)                 u-mod:  pbar(y) / (2 - U)
    eu-mod: min(p_1(y) / (2 - U), min_k pbar_k(y))

Each set is {y : statistic(y) > level}. mod, e-mod, u-mod and eu-mod at level alpha have coverage >= 1 - 2 alpha
(2 pbar, 2 min_k pbar_k, 2 pbar/(2 - U) and 2 min(p_1/(2 - U), min_k pbar_k) are valid p-values: the
exchangeable and the uniformly-randomised Markov inequalities applied to e = (1/alpha)(1 - p/(2 alpha))_+).
Vovk's set is {p_CC > alpha}. Since pbar = (K + sum_k C_k)/(n + K),

    p_CC > alpha   <=>   pbar > alpha' = alpha + (1 - alpha)(K - 1)/(n + K),

so Vovk's method is mod run at alpha' (the identity); e-cross, u-cross and eu-cross are the new statistics at
alpha' (guarantee 1 - 2 alpha'). Since min_k pbar_k <= pbar_K = pbar, pbar/(2 - U) <= pbar and
eu <= e pointwise, the sets are nested for the same folds and the same U: C_eu in C_e in C_mod, C_u in C_mod.

Exact sets. Fold k's residual R_i counts towards C_k(y) exactly on the closed interval [mu_{-k}(x) - R_i,
mu_{-k}(x) + R_i], so every C_k is a step function whose steps lie at the 2n breakpoints mu_{-k}(x) +- R_i, and
one sweep over the sorted breakpoints (+1 at a left end, -1 at a right end) gives every count on every open
segment between consecutive breakpoints, with no y grid and no floating-point distance. Every statistic is
constant on a segment and, because C_k counts R_i >= R^k (closed), its value at a breakpoint is that of the
neighbouring segment nearer the fold's centre: each set is the union of the closures of its member segments, a
finite union of closed intervals whose ends are breakpoints. (Only where breakpoints of different folds tie
exactly, a probability-zero event for continuous scores, can an isolated point belong to a set without a
neighbouring segment; such points carry no length and are left out.) Coverage is decided separately, from the
counts at the test response itself (:func:`covered`), with ties counted exactly.

Membership is decided in integer arithmetic wherever the statistic is rational: pbar_k > L <=> sum_{j<=k}(1 + C_j)
> floor(L k (m + 1)) with L a Fraction of the level's decimal value, so ties such as pbar = alpha exactly are
never decided by rounding; only the U-scaled comparisons use floating point (U is continuous).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: The methods, each (statistic, level): level "alpha" or "alpha'" (the original method's effective level).
METHODS: dict[str, tuple[str, str]] = {
    "mod": ("mean", "alpha"),
    "e-mod": ("e", "alpha"),
    "u-mod": ("u", "alpha"),
    "eu-mod": ("eu", "alpha"),
    "vovk": ("vovk", "alpha"),
    "e-cross": ("e", "alpha'"),
    "u-cross": ("u", "alpha'"),
    "eu-cross": ("eu", "alpha'"),
}
ALIASES = {
    "cross": "vovk",
    "mod-cross": "mod",
    "e-mod-cross": "e-mod",
    "u-mod-cross": "u-mod",
    "eu-mod-cross": "eu-mod",
}
NEEDS_U = {"u", "eu"}
#: Guaranteed coverage of each level: 1 - 2 alpha at "alpha", 1 - 2 alpha' at "alpha'".
GUARANTEE = {"alpha": "1 - 2 alpha", "alpha'": "1 - 2 alpha - 2 (1 - alpha)(K - 1)/(n + K)"}

#: Points evaluated per chunk of test points (bounds memory: chunk x (4n + 1) x K counts).
CHUNK_POINTS = 2_000_000


def canonical_method(method: str) -> str:
    """The method's canonical name; an unknown name raises ValueError naming it and the known ones."""
    name = ALIASES.get(method, method)
    if name not in METHODS:
        raise ValueError(f"unknown method {method!r}; one of {', '.join(METHODS)} (or {', '.join(ALIASES)})")
    return name


def check_alpha(alpha: float) -> float:
    a = float(alpha)
    if not (math.isfinite(a) and 0.0 < a < 0.5):
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    return a


def exact_level(alpha: float) -> Fraction:
    """alpha as the decimal the user wrote (0.1 -> 1/10), not the binary float 0.1000000000000000055..."""
    return Fraction(repr(float(alpha)))


def alpha_prime(alpha: float | Fraction, n: int, K: int) -> Fraction:
    """alpha' = alpha + (1 - alpha)(K - 1)/(n + K): Vovk's cross-conformal is mod-cross at alpha'."""
    a = alpha if isinstance(alpha, Fraction) else exact_level(alpha)
    return a + (1 - a) * Fraction(K - 1, n + K)


def level_of(kind: str, alpha: float, n: int, K: int) -> Fraction:
    return exact_level(alpha) if kind == "alpha" else alpha_prime(alpha, n, K)


# ----------------------------------------------------------------------------------------------- statistics
def fold_pvalues(counts: np.ndarray, m: int) -> np.ndarray:
    """p_k = (1 + C_k)/(m + 1) for counts of shape (..., K)."""
    return (1.0 + counts) / (m + 1.0)


def statistic(name: str, counts: np.ndarray, m: int, u: np.ndarray | None = None) -> np.ndarray:
    """The real-valued statistic (for plots and tests); membership uses :func:`member`, which is exact."""
    p = fold_pvalues(counts, m)
    K = counts.shape[-1]
    if name == "mean":
        return p.mean(-1)
    if name == "vovk":
        return (1.0 + counts.sum(-1)) / (K * m + 1.0)
    running = np.cumsum(p, -1) / np.arange(1, K + 1)
    emin = running.min(-1)
    if name == "e":
        return emin
    scale = 2.0 - _u_like(u, counts)
    if name == "u":
        return p.mean(-1) / scale
    if name == "eu":
        return np.minimum(p[..., 0] / scale, emin)
    raise ValueError(f"unknown statistic {name!r}")


def _u_like(u: np.ndarray | None, counts: np.ndarray) -> np.ndarray:
    if u is None:
        raise ValueError("the u- and eu-variants need one U ~ Unif(0, 1) per test point")
    u = np.asarray(u, dtype=float)
    return u.reshape(u.shape + (1,) * (counts.ndim - 1 - u.ndim))


def fold_totals(counts: np.ndarray) -> np.ndarray:
    """sum_{j<=k} (1 + C_j) for k = 1..K (the numerators of the running means' (m + 1) k pbar_k)."""
    K = counts.shape[-1]
    out = np.empty(np.moveaxis(counts, -1, 0).shape, dtype=np.int64)  # fold-major, then viewed fold-last
    acc = np.zeros(counts.shape[:-1], dtype=np.int64)
    for k in range(K):
        acc += counts[..., k]
        out[k] = acc + (k + 1)
    return np.moveaxis(out, 0, -1)


def member(
    name: str,
    level: Fraction,
    counts: np.ndarray,
    m: int,
    u: np.ndarray | None = None,
    totals: np.ndarray | None = None,
) -> np.ndarray:
    """statistic > level, decided exactly where the statistic is rational (see the module docstring).

    counts: integer array (T, P, K) (or (T, K)); u: (T,) for the u- and eu-statistics; totals: fold_totals(counts)
    when already computed. Returns bool (T, P)."""
    K = counts.shape[-1]
    if totals is None:
        totals = fold_totals(counts)
    total = totals[..., -1]  # K + sum_k C_k
    if name == "vovk":  # 1 + sum_k C_k > alpha (n + 1)
        return total - (K - 1) > math.floor(level * (K * m + 1))
    if name == "mean":
        return total > math.floor(level * K * (m + 1))
    e_ok = totals[..., 0] > math.floor(level * (m + 1))
    for k in range(2, K + 1):
        e_ok &= totals[..., k - 1] > math.floor(level * k * (m + 1))
    if name == "e":
        return e_ok
    scale = 2.0 - _u_like(u, counts)
    lv = float(level)
    if name == "u":
        return total / (K * (m + 1.0)) > lv * scale
    if name == "eu":
        return (totals[..., 0] / (m + 1.0) > lv * scale) & e_ok
    raise ValueError(f"unknown statistic {name!r}")


# ----------------------------------------------------------------------------------------------- set batches
@dataclass
class SetBatch:
    """Prediction sets of T test points as flat arrays of closed intervals [lower, upper], sorted by (row, lower);
    a row with no interval has the empty set. Bounds may be -inf/+inf (an unbounded set)."""

    n_points: int
    row: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    def widths(self) -> np.ndarray:
        """Lebesgue measure of each set (the sum of its intervals' lengths; inf when unbounded)."""
        return np.bincount(self.row, weights=self.upper - self.lower, minlength=self.n_points)

    def n_intervals(self) -> np.ndarray:
        return np.bincount(self.row, minlength=self.n_points)

    def contains(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        hit = (self.lower <= y[self.row]) & (y[self.row] <= self.upper)
        return np.bincount(self.row, weights=hit.astype(float), minlength=self.n_points) > 0

    def near_boundary(self, y: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
        """Per row: y lies within rtol (relative) of one of its set's endpoints, where rounding decides
        membership (e.g. integer responses meeting a breakpoint mu + R computed in floating point)."""
        y = np.asarray(y, dtype=float)
        tol = rtol * np.maximum(1.0, np.abs(y[self.row]))
        near = (np.abs(self.lower - y[self.row]) <= tol) | (np.abs(self.upper - y[self.row]) <= tol)
        return np.bincount(self.row, weights=near.astype(float), minlength=self.n_points) > 0

    def intervals(self, i: int) -> list[tuple[float, float]]:
        lo, hi = np.searchsorted(self.row, [i, i + 1])
        return [(float(a), float(b)) for a, b in zip(self.lower[lo:hi], self.upper[lo:hi], strict=True)]

    def as_lists(self) -> list[list[tuple[float, float]]]:
        return [self.intervals(i) for i in range(self.n_points)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SetBatch):
            return NotImplemented
        return (
            self.n_points == other.n_points
            and np.array_equal(self.row, other.row)
            and np.array_equal(self.lower, other.lower)
            and np.array_equal(self.upper, other.upper)
        )

    @staticmethod
    def concat(parts: list[SetBatch]) -> SetBatch:
        offset, rows = 0, []
        for part in parts:
            rows.append(part.row + offset)
            offset += part.n_points
        return SetBatch(
            offset,
            np.concatenate(rows) if rows else np.zeros(0, int),
            np.concatenate([p.lower for p in parts]) if parts else np.zeros(0),
            np.concatenate([p.upper for p in parts]) if parts else np.zeros(0),
        )


def runs_to_sets(mask: np.ndarray, bp: np.ndarray) -> SetBatch:
    """Closed intervals from membership of the open segments between sorted breakpoints.

    mask (T, Q + 1): segment j is (bp_{j-1}, bp_j) with bp_{-1} = -inf and bp_Q = +inf. A maximal run of member
    segments s..e is the closed interval [bp_{s-1}, bp_e] (consecutive segments touch at their breakpoint, which
    belongs to the set: every statistic is upper semicontinuous). Runs separated only by zero-length segments
    (tied breakpoints) touch, and are merged."""
    T, S = mask.shape
    Q = bp.shape[1]
    if S != Q + 1:
        raise ValueError(f"mask has {S} segments for {Q} breakpoints")
    padded = np.zeros((T, S + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    step = np.diff(padded, axis=1)
    st_row, st_seg = np.nonzero(step == 1)
    en_row, en_seg = np.nonzero(step == -1)
    ext = np.concatenate([np.full((T, 1), -np.inf), bp, np.full((T, 1), np.inf)], axis=1)
    lower = ext[st_row, st_seg]  # bp_{s-1}
    upper = ext[en_row, en_seg]  # bp_e (en_seg is e + 1; ext is shifted by one)
    if len(lower) > 1:
        touch = (st_row[1:] == st_row[:-1]) & (lower[1:] <= upper[:-1])
        if touch.any():
            first = np.flatnonzero(np.concatenate([[True], ~touch]))
            upper = np.maximum.reduceat(upper, first)
            lower, st_row = lower[first], st_row[first]
    return SetBatch(T, st_row.astype(np.int64), lower.astype(float), upper.astype(float))


# ----------------------------------------------------------------------------------------------- exact sets
@dataclass
class FoldScores:
    """Out-of-fold residuals, ``residuals[k]`` sorted, of the K folds in the split's random order (K, m)."""

    residuals: np.ndarray

    def __post_init__(self) -> None:
        r = np.sort(np.asarray(self.residuals, dtype=float), axis=1)
        if r.ndim != 2 or r.shape[0] < 2 or r.shape[1] < 1:
            raise ValueError(f"fold residuals must have shape (K >= 2, m >= 1), got {r.shape}")
        if not np.all(np.isfinite(r)) or np.any(r < 0):
            raise ValueError("fold residuals must be finite and non-negative")
        self.residuals = r

    @property
    def K(self) -> int:
        return self.residuals.shape[0]

    @property
    def m(self) -> int:
        return self.residuals.shape[1]

    @property
    def n(self) -> int:
        return self.K * self.m

    def counts(self, mu: np.ndarray, y: np.ndarray) -> np.ndarray:
        """C_k(y) = #{i in S_k : R_i >= |y - mu_k|} for mu (T, K) and y (T, P): int (T, P, K)."""
        T, P = y.shape
        out = np.empty((T, P, self.K), dtype=np.int64)
        for k in range(self.K):
            d = np.abs(y - mu[:, k : k + 1])
            out[:, :, k] = self.m - np.searchsorted(self.residuals[k], d.ravel(), side="left").reshape(T, P)
        return out

    def segment_counts(self, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted breakpoints bp (T, 2n) and the counts C_k on the 2n + 1 open segments between them
        (T, 2n + 1, K), by one sweep: fold k's residual R_i contributes to C_k(y) exactly on the closed
        interval [mu_k - R_i, mu_k + R_i], so C_k on a segment is the number of fold-k intervals opened (left
        ends) minus those closed (right ends) before it. Left ends sort before right ends at equal values."""
        T = mu.shape[0]
        K, m = self.residuals.shape
        left = (mu[:, :, None] - self.residuals[None]).reshape(T, -1)
        right = (mu[:, :, None] + self.residuals[None]).reshape(T, -1)
        values = np.concatenate([left, right], axis=1)
        order = np.argsort(values, axis=1, kind="stable")
        bp = np.take_along_axis(values, order, 1)
        fold = (order % (K * m)) // m
        sign = np.where(order < K * m, 1, -1).astype(np.int32)
        delta = np.zeros((T, K, 2 * K * m + 1), dtype=np.int32)  # fold-major: the sweep runs along memory
        rows = np.arange(T)[:, None]
        delta[rows, fold, np.arange(1, 2 * K * m + 1)[None, :]] = sign
        counts = np.cumsum(delta, axis=2, out=delta)
        return bp, np.moveaxis(counts, 1, 2)


@dataclass
class CrossSets:
    """The exact sets of every requested method for one batch of test points (same folds, same U)."""

    sets: dict[str, SetBatch]
    masks: dict[str, list[np.ndarray]]  # per chunk (T_c, 2n + 1): membership of the common segments

    def nesting_violations(self) -> np.ndarray:
        """Per test point: True where eu is not within e, e not within mod, or u not within mod (exactly: all
        sets are unions of the same elementary pieces, so inclusion of the masks is inclusion of the sets)."""
        pairs = [("eu-mod", "e-mod"), ("e-mod", "mod"), ("u-mod", "mod"), ("eu-cross", "e-cross")]
        bad = []
        for c in range(len(next(iter(self.masks.values())))):
            v = None
            for inner, outer in pairs:
                if inner in self.masks and outer in self.masks:
                    w = np.any(self.masks[inner][c] & ~self.masks[outer][c], axis=1)
                    v = w if v is None else v | w
            if v is not None:
                bad.append(v)
        return np.concatenate(bad) if bad else np.zeros(0, bool)


def cross_sets(
    scores: FoldScores,
    mu: np.ndarray,
    alpha: float,
    methods: tuple[str, ...] | list[str] = tuple(METHODS),
    u: np.ndarray | None = None,
    levels: dict[str, tuple[str, Fraction]] | None = None,
) -> CrossSets:
    """Exact sets of ``methods`` for test predictions mu (T, K) (mu[:, k] = mu_{-k}(x)); u (T,) for u/eu.

    ``levels`` adds custom (statistic, level) pairs by name (e.g. mod at alpha' for the identity check)."""
    alpha = check_alpha(alpha)
    mu = np.asarray(mu, dtype=float)
    if mu.ndim != 2 or mu.shape[1] != scores.K:
        raise ValueError(f"predictions must have shape (T, K={scores.K}), got {mu.shape}")
    spec: dict[str, tuple[str, Fraction]] = {}
    for meth in methods:
        name = canonical_method(meth)
        stat, kind = METHODS[name]
        spec[name] = (stat, level_of(kind, alpha, scores.n, scores.K))
    spec.update(levels or {})
    if any(s in NEEDS_U for s, _ in spec.values()):
        if u is None:
            raise ValueError("the u- and eu-variants need u: one U ~ Unif(0, 1) per test point")
        u = np.asarray(u, dtype=float)
        if u.shape != (mu.shape[0],):
            raise ValueError(f"u must have shape ({mu.shape[0]},), got {u.shape}")
    T = mu.shape[0]
    per = max(1, CHUNK_POINTS // ((2 * scores.n + 1) * scores.K))
    parts: dict[str, list[SetBatch]] = {k: [] for k in spec}
    masks: dict[str, list[np.ndarray]] = {k: [] for k in spec}
    for lo in range(0, T, per):
        sl = slice(lo, min(T, lo + per))
        bp, counts = scores.segment_counts(mu[sl])
        totals = fold_totals(counts)
        uc = None if u is None else u[sl]
        for name, (stat, level) in spec.items():
            mask = member(stat, level, counts, scores.m, uc, totals)
            masks[name].append(mask)
            parts[name].append(runs_to_sets(mask, bp))
    return CrossSets({k: SetBatch.concat(v) for k, v in parts.items()}, masks)


def covered(
    scores: FoldScores,
    mu: np.ndarray,
    y: np.ndarray,
    alpha: float,
    method: str,
    u: np.ndarray | None = None,
    level: tuple[str, Fraction] | None = None,
) -> np.ndarray:
    """y_t in C(x_t), decided directly from the counts at y_t (no set construction)."""
    if level is None:
        stat, kind = METHODS[canonical_method(method)]
        level = (stat, level_of(kind, check_alpha(alpha), scores.n, scores.K))
    counts = scores.counts(np.asarray(mu, float), np.asarray(y, float)[:, None])
    return member(level[0], level[1], counts, scores.m, u)[:, 0]


def grid_sets(
    scores: FoldScores,
    mu: np.ndarray,
    grid: np.ndarray,
    alpha: float,
    method: str,
    u: np.ndarray | None = None,
) -> SetBatch:
    """The official code's construction (``set_cc``), for comparison: membership on a y grid; a run starting at
    grid[i] ends at the first *failing* grid point (or the last point); the last point never starts a run. The
    set is truncated to the grid's range."""
    stat, kind = METHODS[canonical_method(method)]
    level = level_of(kind, check_alpha(alpha), scores.n, scores.K)
    mu = np.asarray(mu, float)
    g = np.broadcast_to(np.asarray(grid, float), (mu.shape[0], len(grid)))
    mask = member(stat, level, scores.counts(mu, np.ascontiguousarray(g)), scores.m, u)
    mask[:, -1] = mask[:, -1] & mask[:, -2]  # a lone member at the last point starts nothing
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    step = np.diff(padded, axis=1)
    st_row, st_pos = np.nonzero(step == 1)
    en_row, en_pos = np.nonzero(step == -1)
    last = np.minimum(en_pos, g.shape[1] - 1)  # first failing point, or the last grid point
    return SetBatch(mu.shape[0], st_row.astype(np.int64), g[st_row, st_pos], g[en_row, last])
