"""The test statistics of Zhu et al. (ICML 2025), all returning log10 p-values.

Notation: theta_1, theta_2 are two models' weights, L the number of GLU blocks, h the hidden (MLP) width,
U^(l), G^(l) (h x d) the up- and gate-projection weights of block l, and H_up^(l), H_gate^(l) (h x N) the
corresponding hidden activations on N shared inputs (rows = hidden units).

- :func:`match` (Alg. 2): the hidden-unit matching by a linear assignment on cosine similarities.
- :func:`spearman_log10p` (Alg. 3): the one-sided Spearman test between two permutations.
- :func:`fisher_log10p` (Alg. 4): Fisher's method across blocks.
- :func:`phi_u`, :func:`phi_h` (Eq. 2): the constrained matching tests on weights and activations.
- :func:`phi_match` (Eq. 3): the unconstrained test, robust to output-preserving transformations.
- :func:`permtest` / :func:`permtest_l2` (Alg. 1): the exact permutation test, here with phi_l2.

P-values are returned as log10 p because they underflow float64 on dependent pairs (the paper prints
epsilon = 2.2e-308 there); every value returned is finite and <= 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats
from scipy.optimize import linear_sum_assignment

from . import glu
from .permutations import random_group_element

LN10 = math.log(10.0)

TieSeed = int | np.random.SeedSequence | np.random.Generator


@dataclass(frozen=True)
class TestResult:
    """One independence test: ``stat`` names it ("u", "h", "match", "l2"), ``per_block`` holds each block's
    log10 p (empty for PERMTEST; NaN for a block left with fewer than :data:`MIN_LIVE` live units),
    ``log10p`` the combined log10 p (Fisher, or PERMTEST's exact p) and ``excluded`` each block's count of dead
    hidden units left out of the matchings, both models together (see :func:`dead_rows`)."""

    __test__ = False  # not a pytest test class despite the name

    stat: str
    per_block: tuple[float, ...]
    log10p: float
    excluded: tuple[int, ...] = ()

    @property
    def p(self) -> float:
        """The p-value itself (0.0 when it underflows float64; use ``log10p``)."""
        return 10.0**self.log10p

    def to_dict(self) -> dict[str, Any]:
        return {
            "stat": self.stat,
            "per_block": list(self.per_block),
            "log10p": self.log10p,
            "excluded": list(self.excluded),
        }


class DegenerateModels(ValueError):
    """No block has enough live hidden units to match: the test has nothing to compare."""


# --------------------------------------------------------------------------------------------------------------
# Alg. 2: MATCH


def _as_float64(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor (any dtype, bf16 included)
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def cosine_matrix(a: Any, b: Any) -> np.ndarray:
    """C_ij = <a_i, b_j> / (||a_i|| ||b_j||) over rows, in float64; a zero row has cosine 0 with everything."""
    a, b = _as_float64(a), _as_float64(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(
            f"MATCH needs two matrices with the same number of columns, got {a.shape} and {b.shape}"
        )
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    na[na == 0] = 1.0
    nb[nb == 0] = 1.0
    return (a / na) @ (b / nb).T


def match(
    a: Any, b: Any, absolute: bool = False, metric: str = "cosine", tie_seed: TieSeed = 0
) -> np.ndarray:
    """Alg. 2 MATCH: the permutation of b's rows that best aligns them with a's rows.

    With C_ij = cossim(a_i, b_j) (rows are hidden units, columns the shared coordinates: input features for
    weights, inputs for activations), MATCH solves the linear assignment problem

        pi = argmax_{pi in S_h} sum_i C_{i, pi(i)}

    exactly (``scipy.optimize.linear_sum_assignment``, a Hungarian-type solver; the paper cites
    Ramshaw-Tarjan) in float64, and returns ``perm`` with ``perm[i]`` = the row of b matched to row i of a.
    Cosine makes the matching invariant to a positive rescaling of any row; ``absolute=True`` matches on
    |C_ij| instead, which makes it invariant to any nonzero rescaling (a sign flip c_i < 0 of U's row i and
    D's column i is output-preserving too). If the row counts differ, the smaller matrix is zero-padded (the
    paper's device for h_1 != h_2) and the permutation has length max(h_a, h_b).

    ``metric="sqeuclidean"`` is the official code's behaviour in phi_MATCH (``match_wmats`` minimises squared
    Euclidean distances ||a_i - b_j||^2): kept as a switch, it is not invariant to rescaling rows.

    Ties are broken at random (ours; the paper assumes a unique optimum): the solver runs on C with its rows
    relabelled by a permutation rho and its columns by sigma, both drawn from ``tie_seed`` (an int, a
    ``SeedSequence`` or a ``Generator``), and the answer is mapped back. A unique optimum is found whatever rho
    and sigma are. When several assignments tie, the solver's deterministic choice would repeat itself on every
    call (an all-zero matrix gives the identity, which SPEARMAN reads as perfect agreement), so that two
    matchings of the same tied units would agree. With (rho, sigma) uniform the answer is exchangeable: if a
    row and column relabelling (tau_r, tau_c) leaves C unchanged (two identical rows, two zero columns), the
    answer's law is unchanged by it, so identical units are assigned in uniformly random order. Callers that
    compare two matchings (phi_MATCH's gate and up) must give them independent ``tie_seed`` streams, so that
    tied units carry no shared information. Non-finite inputs are refused.
    """
    a, b = _as_float64(a), _as_float64(b)  # once: cosine_matrix takes float64 arrays as they are
    for name, m in (("first", a), ("second", b)):
        if not np.all(np.isfinite(m)):
            raise ValueError(f"MATCH: the {name} matrix holds NaN or inf values")
    if metric == "cosine":
        c = cosine_matrix(a, b)
        if absolute:
            c = np.abs(c)
    elif metric == "sqeuclidean":
        c = -(np.sum(a**2, 1)[:, None] + np.sum(b**2, 1)[None, :] - 2.0 * a @ b.T)
    else:
        raise ValueError(f"unknown MATCH metric {metric!r}; use 'cosine' (paper) or 'sqeuclidean' (code)")
    h = max(c.shape)
    if c.shape != (h, h):
        padded = np.zeros((h, h))
        padded[: c.shape[0], : c.shape[1]] = c
        c = padded
    rng = np.random.default_rng(tie_seed)
    rho, sigma = rng.permutation(h), rng.permutation(h)
    rows, cols = linear_sum_assignment(c[np.ix_(rho, sigma)], maximize=True)
    perm = np.empty(h, dtype=np.int64)
    perm[rho[rows]] = sigma[cols]
    return perm


def tie_stream(tie_seed: int, block: int, matching: int) -> np.random.SeedSequence:
    """The tie-breaking stream of one matching: block ``block``, ``matching`` 0 (gate / the constrained tests'
    only matching) or 1 (up). Distinct (block, matching) pairs get independent streams, so that ties in two
    blocks or in the gate and up matchings of one block are broken independently (Fisher needs independent
    blocks; phi_MATCH needs the two matchings to share nothing but the models)."""
    if isinstance(tie_seed, bool) or not isinstance(tie_seed, int | np.integer) or tie_seed < 0:
        raise ValueError(f"tie_seed must be a non-negative integer, got {tie_seed!r}")
    return np.random.SeedSequence([int(tie_seed), block, matching])


def dead_rows(m: np.ndarray) -> np.ndarray:
    """The rows (hidden units) of ``m`` that are identically zero: a pruned or dead unit.

    A zero row has cosine 0 with every row of the other model, so its match is decided by ties alone, and a
    dead unit of model 1 and a dead unit of model 2 are left over together: where the other model has dead
    units too, both matchings (gate and up, or MATCH and the identity) send the dead units to the dead
    units, a shared category that SPEARMAN reads as agreement between independent models. Dead units are
    therefore left out of the matchings (ours: the paper's models have none) and counted in
    :attr:`TestResult.excluded`.
    """
    return ~np.any(m != 0.0, axis=1)


DEAD_UNITS = ("exclude", "keep")


def _live(m: np.ndarray, dead_units: str) -> np.ndarray:
    """The rows to match: all but the dead ones (``dead_units="exclude"``, ours) or all (``"keep"``: dead units
    are matched like any other, their ties broken at random; the switch that shows what exclusion changes)."""
    if dead_units not in DEAD_UNITS:
        raise ValueError(f"unknown dead_units {dead_units!r}; use 'exclude' (ours) or 'keep'")
    return ~dead_rows(m) if dead_units == "exclude" else np.ones(m.shape[0], dtype=bool)


#: A block needs at least this many live units for SPEARMAN's t law (h - 2 >= 1 degrees of freedom).
MIN_LIVE = 3


# --------------------------------------------------------------------------------------------------------------
# Alg. 3: SPEARMAN


def log10_factorial(h: int) -> float:
    """log10(h!) = lgamma(h + 1) / ln 10."""
    return math.lgamma(h + 1) / LN10


def _log_betainc(a: float, b: float, x: float) -> float:
    """ln I_x(a, b), the regularized incomplete beta function, without underflow.

    I_x(a, b) = x^a (1-x)^b / (a B(a, b)) * CF(a, b, x), with CF the continued fraction of Numerical Recipes
    (6.4), evaluated by the modified Lentz method; it converges quickly for x < (a + 1) / (a + b + 2), the only
    range used here (elsewhere I_x is not small and scipy's betainc is accurate).
    """
    if x <= 0.0:
        return -math.inf
    if x >= 1.0:
        return 0.0
    if x >= (a + 1.0) / (a + b + 2.0):
        return math.log(special.betainc(a, b, x))
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    cf = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        cf *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        cf *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    log_front = a * math.log(x) + b * math.log1p(-x) - special.betaln(a, b) - math.log(a)
    return log_front + math.log(cf)


def t_logsf(t: float, df: float) -> float:
    """ln P(T_df > t) for Student's t, finite for every finite t.

    scipy's ``stats.t.logsf`` returns -inf once the tail underflows float64; there the identity
    P(T_df > t) = I_{df/(df+t^2)}(df/2, 1/2) / 2 (t > 0) is evaluated in log space.
    """
    value = float(stats.t.logsf(t, df))
    if math.isfinite(value) or math.isnan(t) or t == math.inf:
        return value
    return _log_betainc(df / 2.0, 0.5, df / (df + t * t)) - math.log(2.0)


def spearman_log10p(
    pi1: Sequence[int] | np.ndarray, pi2: Sequence[int] | np.ndarray, sides: str = "one"
) -> tuple[float, float]:
    """Alg. 3 SPEARMAN: one-sided test that two permutations of {0..h-1} are positively correlated.

        r = 1 - 6 sum_i (pi1[i] - pi2[i])^2 / (h (h^2 - 1)),
        t = r sqrt((h - 2) / (1 - r^2)),
        p = P(T_{h-2} > t)                          (Student's t with h - 2 degrees of freedom)

    Returns (r, log10 p). The t law is the usual approximation to the exact permutation law of Spearman's rho
    (Thm 2 makes the matched permutation uniform under H_0); that exact law puts mass 1/h! on r = 1, so log10 p
    is clipped to >= -log10(h!): r = 1 gives exactly -log10(h!) and r = -1 gives 0. The paper's code calls
    ``scipy.stats.spearmanr``, which is two-sided; Alg. 3 (followed here) is one-sided. ``sides="two"``
    gives the code's two-sided p = 2 P(T_{h-2} > |t|) (capped at 1) as a switch.
    """
    if sides not in ("one", "two"):
        raise ValueError(f"unknown sides {sides!r}; use 'one' (Alg. 3) or 'two' (the official code)")
    p1, p2 = np.asarray(pi1, dtype=np.int64), np.asarray(pi2, dtype=np.int64)
    if p1.shape != p2.shape or p1.ndim != 1:
        raise ValueError(f"SPEARMAN needs two permutations of the same length, got {p1.shape} and {p2.shape}")
    h = p1.shape[0]
    if h < 2:
        return 1.0, 0.0
    ssd = float(np.sum((p1 - p2).astype(np.float64) ** 2))
    one_minus_r = 6.0 * ssd / (h * (h * h - 1.0))
    r = 1.0 - one_minus_r
    if sides == "one":
        return max(r, -1.0), _one_sided_log10p(one_minus_r, h)
    # two-sided: 2 P(T > |t|); |r| = 1 - (1 - |r|)
    one_minus_abs_r = one_minus_r if r >= 0 else 1.0 + r
    return max(r, -1.0), float(min(0.0, math.log10(2.0) + _one_sided_log10p(max(one_minus_abs_r, 0.0), h)))


def _one_sided_log10p(one_minus_r: float, h: int) -> float:
    """log10 P(T_{h-2} > t) for r = 1 - one_minus_r, floored at -log10(h!) (see :func:`spearman_log10p`)."""
    floor = -log10_factorial(h)
    r = 1.0 - one_minus_r
    if one_minus_r <= 0.0:
        return floor
    if r <= -1.0:
        return 0.0
    one_minus_r2 = one_minus_r * (1.0 + r)  # 1 - r^2 without cancellation near r = 1
    t = r * math.sqrt((h - 2) / one_minus_r2) if h > 2 else 0.0
    log10p = t_logsf(t, h - 2) / LN10 if h > 2 else 0.0
    return float(min(0.0, max(floor, log10p)))


# --------------------------------------------------------------------------------------------------------------
# Alg. 4: FISHER


def chi2_logsf_even(x: float, df: int) -> float:
    """ln P(chi^2_df > x) for even df = 2L, in closed form: P = e^{-x/2} sum_{k<L} (x/2)^k / k!."""
    if x <= 0.0:
        return 0.0
    half = x / 2.0
    terms = [k * math.log(half) - math.lgamma(k + 1) for k in range(df // 2)]
    return -half + float(special.logsumexp(terms))


def fisher_log10p(log10ps: Sequence[float] | np.ndarray) -> float:
    """Alg. 4 FISHER: combine L independent p-values p_l (given as log10 p_l) into one.

        X = -2 sum_l ln p_l = -2 ln 10 sum_l log10 p_l,      p = 1 - F_{chi^2_{2L}}(X)

    computed as ``scipy.stats.chi2.logsf``, falling back to the exact even-df closed form when scipy's value
    underflows. NaN entries are skipped (as the paper's code does); the per-block p-values must be independent
    under H_0 (Thm 3), which holds because each block has its own permutation.
    """
    values = np.asarray(log10ps, dtype=np.float64).ravel()
    values = values[~np.isnan(values)]
    if values.size == 0:
        raise ValueError("FISHER needs at least one p-value that is not NaN")
    df = 2 * values.size
    x = -2.0 * LN10 * float(np.sum(values))
    value = float(stats.chi2.logsf(x, df))
    if not math.isfinite(value):
        value = chi2_logsf_even(x, df)
    return float(min(0.0, value / LN10))


# --------------------------------------------------------------------------------------------------------------
# Eq. 2 and Eq. 3: the matching statistics


def phi_u(
    w1: Mapping[str, Any],
    w2: Mapping[str, Any],
    n_blocks: int,
    metric: str = "cosine",
    sides: str = "one",
    tie_seed: int = 0,
    dead_units: str = "exclude",
) -> TestResult:
    """phi_U (Eq. 2 with M = U^(l)): per block, SPEARMAN(MATCH(U_1^(l), U_2^(l)), id); FISHER over blocks.

    U^(l) = ``model.layers.{l}.mlp.up_proj.weight`` (h x d); the rows are hidden units and the columns the
    residual coordinates, so this is the constrained test: it assumes both models share the residual basis
    (pi_emb = id). Exact-valid under H_0 when one model's initialisation is Pi-invariant and its training
    Pi-equivariant (Thm 2, Thm 3). Dead units (zero rows) are handled as in :func:`_matched_to_identity`.
    """
    keys = [glu.up_key(layer) for layer in range(n_blocks)]
    return _matched_to_identity("u", [(w1[k], w2[k], k) for k in keys], metric, sides, tie_seed, dead_units)


def phi_h(
    acts1: Sequence[Mapping[str, Any]],
    acts2: Sequence[Mapping[str, Any]],
    metric: str = "cosine",
    sides: str = "one",
    tie_seed: int = 0,
    dead_units: str = "exclude",
) -> TestResult:
    """phi_H (Eq. 2 with M = H^(l)): per block, SPEARMAN(MATCH(H_up,1^T, H_up,2^T), id); FISHER over blocks.

    ``acts`` are lists (one per block) of dicts whose "up" entry is N x h (the up_proj outputs U^(l) r on the
    same N inputs, as hooked by the paper's code); rows of the transposed h x N matrices are matched.
    """
    _check_blocks(acts1, acts2)
    blocks = [
        (_transpose(a1["up"]), _transpose(a2["up"]), "up activations")
        for a1, a2 in zip(acts1, acts2, strict=True)
    ]
    return _matched_to_identity("h", blocks, metric, sides, tie_seed, dead_units)


def _matched_to_identity(
    stat: str,
    blocks: Sequence[tuple[Any, Any, str]],
    metric: str,
    sides: str,
    tie_seed: int,
    dead_units: str,
) -> TestResult:
    """Eq. 2 for one M: per block SPEARMAN(MATCH(M_1, M_2), id) (equal widths), then FISHER over blocks.

    The constrained tests compare unit i of one model with unit i of the other, so a unit dead in either
    model is left out at the same position in both (the union of :func:`dead_rows`): two independent models
    pruned by the same rule would otherwise have their dead units matched among themselves, close to the
    identity. Each block breaks its ties with its own stream (:func:`tie_stream`).
    """
    per_block, excluded = [], []
    for block, (m1, m2, what) in enumerate(blocks):
        a, b = (_as_float64(m) for m in _same_rows(m1, m2, what))
        live = _live(a, dead_units) & _live(b, dead_units)
        excluded.append(int(live.size - live.sum()))
        if live.sum() < MIN_LIVE:
            per_block.append(math.nan)
            continue
        perm = match(a[live], b[live], metric=metric, tie_seed=tie_stream(tie_seed, block, 0))
        per_block.append(spearman_log10p(perm, np.arange(perm.shape[0]), sides)[1])
    return TestResult(stat, tuple(per_block), _combine(per_block, excluded), tuple(excluded))


def phi_match(
    acts1: Sequence[Mapping[str, Any]],
    acts2: Sequence[Mapping[str, Any]],
    metric: str = "cosine",
    sides: str = "one",
    tie_seed: int = 0,
    dead_units: str = "exclude",
) -> TestResult:
    """phi_MATCH (Eq. 3), the unconstrained test: per block l,

        pi_gate = MATCH(H_gate,1^(l), H_gate,2^(l)),   pi_up = MATCH(H_up,1^(l), H_up,2^(l)),
        p_l = SPEARMAN(pi_gate, pi_up),                p = FISHER(p_1..p_L)

    with H^(l) = (G r or U r) on the same N inputs, transposed to h x N (rows = hidden units). An
    output-preserving transformation of a model's hidden units moves its gate and up rows together, so only a
    dependent pair has matching gate and up assignments. Up rows are matched on |cos| (``match(...,
    absolute=True)``): c_i < 0 times U's row i and 1/c_i times D's column i is output-preserving too, and
    would flip the sign of a cosine (gate rows cannot be rescaled through the SiLU).

    Invariances (exact, up to floating point): any residual permutation, and any hidden permutation and
    nonzero rescaling of model 1, leave p unchanged (the two matchings are reindexed together). Relabelling
    model 2's hidden units by tau maps (pi_gate, pi_up) to (tau o pi_gate, tau o pi_up): when the matchings
    agree (a dependent pair) p is unchanged, otherwise only its law is (Eq. 3 as written compares the label
    values of model 2).

    Ties must carry no shared information between the two matchings (ours; the paper assumes none occur):
    - the gate and up matchings break their ties with independent streams (:func:`tie_stream`), so units
      that tie in both (duplicated units: identical rows) are ordered independently in each;
    - dead units (a zero gate or up row: the unit's output silu(G r) * (U r) is zero) are left out of both
      matchings, in each model separately (:func:`dead_rows`), and counted in ``excluded``. Both
      matchings would send one model's dead units to the other's leftover (mostly dead) units, so their
      labels would agree by category, not by dependence. A block left with fewer than :data:`MIN_LIVE` live
      units contributes NaN (Fisher skips it); with none left :class:`DegenerateModels` is raised.

    Unequal widths h_1 != h_2 (the paper zero-pads; also after dead units are left out): the narrower model's
    h = min(h_1, h_2) units are matched into the wider model's (an injective map; MATCH pads with zero rows),
    and SPEARMAN compares the ranks of the h matched indices of pi_gate and pi_up. Spearman over the padded
    rows as well would be invalid: the zero rows are the leftover units' ties, for gate and up alike, which
    correlates the two matchings of independent models. With h_1 = h_2 and no dead unit this is exactly Eq. 3.

    Switches for the official code's behaviour: ``metric="sqeuclidean"`` (its ``match_wmats`` LAP on squared
    Euclidean distances) and ``sides="two"`` (its two-sided ``spearmanr``); the defaults follow the paper.
    """
    _check_blocks(acts1, acts2)
    per_block, excluded = [], []
    for block, (a1, a2) in enumerate(zip(acts1, acts2, strict=True)):
        g1, g2, u1, u2 = (_transpose(a[k]) for a, k in ((a1, "gate"), (a2, "gate"), (a1, "up"), (a2, "up")))
        live1 = _live(g1, dead_units) & _live(u1, dead_units)
        live2 = _live(g2, dead_units) & _live(u2, dead_units)
        excluded.append(int(live1.size - live1.sum() + live2.size - live2.sum()))
        g1, u1, g2, u2 = g1[live1], u1[live1], g2[live2], u2[live2]
        if g1.shape[0] > g2.shape[0]:  # the narrower model's units are the ones matched (see docstring)
            g1, g2, u1, u2 = g2, g1, u2, u1
        h = g1.shape[0]
        if h < MIN_LIVE:
            per_block.append(math.nan)
            continue
        pi_gate = match(g1, g2, metric=metric, tie_seed=tie_stream(tie_seed, block, 0))[:h]
        pi_up = match(u1, u2, absolute=True, metric=metric, tie_seed=tie_stream(tie_seed, block, 1))[:h]
        per_block.append(spearman_log10p(_ranks(pi_gate), _ranks(pi_up), sides)[1])
    return TestResult("match", tuple(per_block), _combine(per_block, excluded), tuple(excluded))


def _combine(per_block: Sequence[float], excluded: Sequence[int]) -> float:
    """FISHER over the blocks that had live units to match; none at all is :class:`DegenerateModels`."""
    if all(math.isnan(p) for p in per_block):
        raise DegenerateModels(
            f"no block has {MIN_LIVE} or more live hidden units to match (dead units left out per block: "
            f"{', '.join(str(n) for n in excluded)}): the models have nothing to compare"
        )
    return fisher_log10p(per_block)


def _ranks(pi: np.ndarray) -> np.ndarray:
    """The ranks 0..h-1 of h distinct values (the identity on a permutation of 0..h-1)."""
    ranks = np.empty_like(pi)
    ranks[np.argsort(pi, kind="stable")] = np.arange(pi.shape[0])
    return ranks


def _same_rows(a: Any, b: Any, what: str) -> tuple[Any, Any]:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"the constrained tests need equal widths: {what} have {a.shape[0]} vs {b.shape[0]} rows"
        )
    return a, b


def _transpose(x: Any) -> np.ndarray:
    return _as_float64(x).T


def _check_blocks(acts1: Sequence[Any], acts2: Sequence[Any]) -> None:
    if len(acts1) != len(acts2) or not acts1:
        raise ValueError(f"need the same positive number of blocks, got {len(acts1)} and {len(acts2)}")


# --------------------------------------------------------------------------------------------------------------
# Alg. 1: PERMTEST


def l2_distance(w1: Mapping[str, Any], w2: Mapping[str, Any]) -> float:
    """phi_l2(theta_1, theta_2) = sum_t ||theta_1,t - theta_2,t||_2 over the tensors t both models hold.

    Lower means more similar. The paper's code uses the average per-parameter distance instead, a monotone
    variant (it is also increasing in every per-tensor distance); PERMTEST only compares phi values of permuted
    copies of the same pair, so the choice changes the test's power, never its validity (Thm 1 holds for any
    phi).
    """
    import torch

    shared = [k for k in w1 if k in w2]
    if not shared:
        raise ValueError("phi_l2: the two weight dicts share no tensor names")
    total = 0.0
    for k in shared:
        a, b = w1[k], w2[k]
        if a.shape != b.shape:
            raise ValueError(f"phi_l2: {k} has shape {tuple(a.shape)} vs {tuple(b.shape)}")
        total += float(torch.linalg.vector_norm(a.double() - b.double()))
    return total


def permtest(
    w1: Mapping[str, Any],
    w2: Mapping[str, Any],
    phi: Callable[[Mapping, Mapping], float],
    arch: str,
    n_blocks: int,
    T: int = 99,
    seed: int = 0,
    stat: str = "permtest",
) -> TestResult:
    """Alg. 1 PERMTEST with a distance-like statistic phi (lower = more similar).

    Draw pi_1..pi_T ~ Unif(Pi) (the full group: residual and every block's hidden units, App. D Table 3),
    compute phi_0 = phi(theta_1, theta_2) and phi_t = phi(pi_t(theta_1), theta_2), and return

        p = (1 + #{t : phi_t < phi_0} + K) / (T + 1),      K ~ Unif{0, ..., #{t : phi_t = phi_0}}

    (exact ties randomised, as Alg. 1 requires). Under H_0, with theta_1's law Pi-invariant, the T + 1 values
    are exchangeable, so p is uniform on {1/(T+1), ..., (T+1)/(T+1)} (Thm 1): P(p <= k/(T+1)) = k/(T+1).
    Deterministic given ``seed`` (one numpy Generator draws the permutations, then K).
    """
    if T < 0:
        raise ValueError(f"PERMTEST needs T >= 0 permutations, got {T}")
    rng = np.random.default_rng(seed)
    phi0 = float(phi(w1, w2))
    phis = np.array([float(phi(random_group_element(w1, arch, n_blocks, rng), w2)) for _ in range(T)])
    less = int(np.sum(phis < phi0))
    ties = int(np.sum(phis == phi0))
    k = int(rng.integers(0, ties + 1))
    p = (1 + less + k) / (T + 1)
    return TestResult(stat, (), float(math.log10(p)))


def permtest_l2(
    w1: Mapping[str, Any], w2: Mapping[str, Any], arch: str, n_blocks: int, T: int = 99, seed: int = 0
) -> TestResult:
    """PERMTEST (Alg. 1) with phi_l2 (:func:`l2_distance`), the baseline of Xu et al. (2024); T = 99 as in the
    paper's code (so p >= 0.01). Returns ``TestResult("l2", (), log10 p)`` with p on {k/(T+1)}."""
    return permtest(w1, w2, l2_distance, arch, n_blocks, T=T, seed=seed, stat="l2")
