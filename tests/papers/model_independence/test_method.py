"""Properties of the statistics of Zhu et al. (ICML 2025): MATCH, SPEARMAN, FISHER, PERMTEST, phi_U, phi_MATCH.

Each test checks a property the paper relies on (exactness, invariance, power), not just that code runs; the
stub-killer at the end shows that plausible fakes fail the same validity + power helper the real tests pass.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pytest
from scipy import stats as sps

from icml25.errors import UserError
from tests.helpers import lazy

if TYPE_CHECKING:
    import torch

# torch is imported when a test runs, never at collection (tests.helpers.lazy)
glu = lazy("models.model_independence.glu")
st = lazy("models.model_independence.stats")
api = lazy("models.model_independence.api")
perms = lazy("models.model_independence.permutations")

L = 2  # blocks of the default GLUConfig (d_in 64, d 32, h 64, 2 blocks, 10 classes): test_defaults checks
ARCH = "icml25-glu"


def init(seed: int) -> dict[str, torch.Tensor]:
    import torch

    return glu.init_weights(glu.GLUConfig(), torch.Generator().manual_seed(seed))


def perturbed(w: dict[str, torch.Tensor], scale: float, seed: int) -> dict[str, torch.Tensor]:
    """A stand-in for fine-tuning: w + scale * N(0, 1) * (per-tensor init bound)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    return {k: v + scale * v.abs().max() * torch.randn(v.shape, generator=gen) for k, v in w.items()}


@pytest.fixture(scope="module")
def x() -> torch.Tensor:
    return api.digits_inputs(200)


def acts(w: dict[str, torch.Tensor], x: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    return glu.forward(w, x, L, collect=True)[1]


def independent_pairs(n: int) -> list[tuple[dict, dict]]:
    return [(init(1000 + 2 * i), init(1001 + 2 * i)) for i in range(n)]


def test_defaults():
    """The constants above are the default model's."""
    assert glu.GLUConfig().n_blocks == L and glu.ARCHITECTURE == ARCH


# ---------------------------------------------------------------------------------------------- SPEARMAN (Alg. 3)


def test_spearman_extremes_hit_the_exact_floor_and_one():
    h = 64
    r, lp = st.spearman_log10p(np.arange(h), np.arange(h))
    assert r == 1.0
    assert lp == pytest.approx(-math.lgamma(h + 1) / math.log(10), abs=1e-12)  # -log10(64!) = -89.1
    assert math.isfinite(lp)
    r, lp = st.spearman_log10p(np.arange(h), np.arange(h)[::-1])
    assert r == -1.0 and lp == 0.0


def test_spearman_is_scipys_two_sided_p_halved():
    rng = np.random.default_rng(0)
    h = 80
    for trial in range(6):
        p1 = rng.permutation(h)
        p2 = p1.copy()
        k = 20 + 10 * trial
        p2[:k] = rng.permutation(p2[:k])  # partially shuffled: positively correlated
        if trial % 2:
            p2 = h - 1 - p2  # negatively correlated
        r, lp = st.spearman_log10p(p1, p2)
        ref = sps.spearmanr(p1, p2)
        assert r == pytest.approx(ref.statistic, abs=1e-12)
        one_sided = ref.pvalue / 2 if r > 0 else 1 - ref.pvalue / 2
        assert lp == pytest.approx(math.log10(one_sided), rel=1e-9, abs=1e-12)


def test_t_tail_is_finite_beyond_float64_and_matches_scipy_where_scipy_is():
    assert st.t_logsf(1000.0, 62) == pytest.approx(sps.t.logsf(1000.0, 62), rel=1e-10)
    assert st.t_logsf(100.0, 62) == pytest.approx(
        st._log_betainc(31.0, 0.5, 62 / (62 + 1e4)) - math.log(2), rel=1e-10
    )
    deep = [st.t_logsf(t, 11006) for t in (100.0, 300.0, 1000.0)]  # scipy returns -inf for all three
    assert all(math.isfinite(v) for v in deep) and deep[0] > deep[1] > deep[2]
    # a near-perfect matching of a large block: finite, below scipy's underflow, above the exact floor
    h = 2000
    pi = np.arange(h)
    pi[[0, 1]] = pi[[1, 0]]
    r, lp = st.spearman_log10p(pi, np.arange(h))
    assert r < 1 and -st.log10_factorial(h) <= lp < -308


# ------------------------------------------------------------------------------------------------ FISHER (Alg. 4)


def test_fisher_is_uniform_under_uniform_inputs():
    rng = np.random.default_rng(1)
    for n_blocks in (1, 3, 8):
        combined = [10 ** st.fisher_log10p(np.log10(rng.uniform(size=n_blocks))) for _ in range(1000)]
        assert sps.kstest(combined, "uniform").pvalue > 0.01


def test_fisher_single_nan_and_underflow():
    assert st.fisher_log10p([-3.7]) == pytest.approx(-3.7, abs=1e-10)
    assert st.fisher_log10p([-2.0, float("nan"), -1.0]) == st.fisher_log10p([-2.0, -1.0])
    # far below float64: the exact even-df form, P = e^{-X/2} (1 + X/2) for L = 2
    x = 2 * math.log(10) * 900
    expected = (-x / 2 + math.log1p(x / 2)) / math.log(10)
    assert st.fisher_log10p([-400.0, -500.0]) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError):
        st.fisher_log10p([float("nan")])


# ------------------------------------------------------------------------------------------------- MATCH (Alg. 2)


def test_match_recovers_a_planted_permutation_under_noise_and_scaling():
    import torch

    rng = np.random.default_rng(2)
    a = rng.standard_normal((50, 30))
    sigma = rng.permutation(50)  # row j of b is row sigma[j] of a
    scale = np.exp(rng.standard_normal(50))[:, None]
    b = a[sigma] * scale + 0.05 * rng.standard_normal((50, 30))
    expected = np.argsort(sigma)  # row i of a sits at row argsort(sigma)[i] of b
    np.testing.assert_array_equal(st.match(a, b), expected)
    np.testing.assert_array_equal(st.match(torch.tensor(a, dtype=torch.bfloat16), torch.tensor(b)), expected)
    flipped = b * rng.choice([-1.0, 1.0], size=(50, 1))
    np.testing.assert_array_equal(st.match(a, flipped, absolute=True), expected)
    assert not np.array_equal(st.match(a, flipped), expected)  # signed cosine is not sign-invariant
    a[3] = 0.0  # a zero row: cosine 0, no NaN
    assert sorted(st.match(a, b)) == list(range(50))


# --------------------------------------------------------------------------- the group Pi and the transformations


def test_random_group_element_and_adversarial_transform_preserve_the_function(x):
    import torch

    w = init(0)
    ref, _ = glu.forward(w, x, L)
    rng = np.random.default_rng(3)
    for _ in range(3):
        wp = perms.random_group_element(w, ARCH, L, rng)
        assert any(not torch.equal(wp[k], w[k]) for k in w)
        assert float((glu.forward(wp, x, L)[0] - ref).norm() / ref.norm()) < 1e-5
    wt = perms.output_preserving_transform(w, L, seed=4)
    assert not torch.allclose(
        wt[glu.up_key(0)].abs().sum(1).sort().values, w[glu.up_key(0)].abs().sum(1).sort().values
    )  # rows really rescaled
    out = glu.forward(wt, x, L)[0]
    assert float((out - ref).norm() / ref.norm()) < 1e-5


def test_a_tensor_without_a_rule_raises():
    import torch

    w = init(0)
    w["model.extra.weight"] = torch.zeros(3, 3)
    with pytest.raises(UserError, match="model.extra.weight"):
        perms.random_group_element(w, ARCH, L, np.random.default_rng(0))
    with pytest.raises(UserError, match="block 5"):
        perms.random_group_element({glu.up_key(5): torch.zeros(4, 4)}, ARCH, L, np.random.default_rng(0))


# ------------------------------------------------------------------------------------ phi_U, phi_MATCH (Eq. 2, 3)


def test_phi_u_detects_a_perturbed_copy():
    w = init(0)
    res = st.phi_u(w, perturbed(w, 0.05, seed=1), L)
    assert res.stat == "u" and len(res.per_block) == L
    assert res.log10p < -10


def test_phi_match_invariance_and_the_constrained_test_is_fooled(x):
    w1, w2 = init(0), init(1)  # an independent pair
    base = st.phi_match(acts(w1, x), acts(w2, x))
    assert base.log10p > -3
    for seed in (5, 6):  # transforming model 1: identical per-block p-values
        moved = st.phi_match(acts(perms.output_preserving_transform(w1, L, seed=seed), x), acts(w2, x))
        np.testing.assert_allclose(moved.per_block, base.per_block, rtol=0, atol=1e-12)
    # a dependent pair: transforms of either model leave phi_MATCH at its (exact) value
    ft = perturbed(w1, 0.02, seed=7)
    dep = st.phi_match(acts(w1, x), acts(ft, x))
    assert dep.log10p < -10
    for s1, s2 in ((8, None), (None, 9), (10, 11)):
        a = perms.output_preserving_transform(w1, L, seed=s1) if s1 is not None else w1
        b = perms.output_preserving_transform(ft, L, seed=s2) if s2 is not None else ft
        assert st.phi_match(acts(a, x), acts(b, x)).log10p == pytest.approx(dep.log10p, abs=1e-9)
    # the paper's prediction: a function-identical permuted copy fools phi_U but not phi_MATCH
    wt = perms.output_preserving_transform(w1, L, seed=12)
    assert st.phi_match(acts(w1, x), acts(wt, x)).log10p < -10
    assert st.phi_u(w1, wt, L).log10p > -3


def test_phi_match_with_unequal_widths_is_valid_and_detects_a_pruned_copy(x):
    """h_1 != h_2: a copy keeping 48 of 64 hidden units is detected; independent 64- vs 96-unit models are not
    (Spearman over zero-padded rows would be: the padding is matched identically for gate and up)."""
    import torch

    wide = glu.GLUConfig(d_hidden=96)
    ps = []
    for i in range(20):
        w1, w2 = init(2000 + i), glu.init_weights(wide, torch.Generator().manual_seed(3000 + i))
        ps.append(10 ** st.phi_match(acts(w1, x), acts(w2, x)).log10p)
    assert sps.kstest(ps, "uniform").pvalue > 0.01 and min(ps) > 1e-3, np.round(ps, 4)
    w = init(0)
    keep = torch.from_numpy(np.random.default_rng(0).permutation(64)[:48])
    pruned = dict(w)
    for layer in range(L):
        pruned[glu.gate_key(layer)] = w[glu.gate_key(layer)][keep]
        pruned[glu.up_key(layer)] = w[glu.up_key(layer)][keep]
        pruned[glu.down_key(layer)] = w[glu.down_key(layer)][:, keep]
    res = st.phi_match(acts(w, x), acts(pruned, x))
    assert res.per_block == pytest.approx([-st.log10_factorial(48)] * L)
    assert st.phi_match(acts(pruned, x), acts(w, x)) == res
    with pytest.raises(ValueError, match="equal widths"):
        st.phi_u(w, pruned, L)


# ------------------------------------------------------------------------------------------------ PERMTEST (Alg. 1)


def support_index(log10p: float, T: int) -> int:
    """k such that p = k/(T+1), asserting p lies on PERMTEST's support."""
    k = 10**log10p * (T + 1)
    assert abs(k - round(k)) < 1e-9, k
    assert 1 <= round(k) <= T + 1
    return round(k)


def test_permtest_support_identity_and_determinism():
    for T, (w1, w2) in zip((3, 4, 7, 9), independent_pairs(4), strict=True):
        support_index(st.permtest_l2(w1, w2, ARCH, L, T=T, seed=T).log10p, T)
    w = init(0)
    assert st.permtest_l2(w, w, ARCH, L, T=19, seed=0).log10p == pytest.approx(math.log10(1 / 20))
    w1, w2 = independent_pairs(1)[0]
    assert st.permtest_l2(w1, w2, ARCH, L, T=19, seed=3) == st.permtest_l2(w1, w2, ARCH, L, T=19, seed=3)


def test_permtest_is_uniform_on_its_support_under_h0():
    T = 19
    ks = [
        support_index(st.permtest_l2(w1, w2, ARCH, L, T=T, seed=i).log10p, T)
        for i, (w1, w2) in enumerate(independent_pairs(60))
    ]
    counts = np.bincount((np.array(ks) - 1) // 5, minlength=4)  # 4 bins of 5 support points: 15 expected each
    assert sps.chisquare(counts).pvalue > 1e-3, counts
    assert 0.35 < np.mean(ks) / (T + 1) < 0.70  # E p = (T + 2) / (2 (T + 1)) = 0.525


def test_permtest_randomises_ties():
    T = 9
    w = init(0)
    ks = [
        support_index(st.permtest(w, w, lambda a, b: 0.0, ARCH, L, T=T, seed=s).log10p, T) for s in range(300)
    ]
    counts = np.bincount(np.array(ks) - 1, minlength=T + 1)
    assert counts.min() > 0 and sps.chisquare(counts).pvalue > 1e-3, counts


def test_permtest_l2_is_fooled_by_a_permuted_copy():
    """The l2 PERMTEST compares aligned coordinates: a function-identical permuted copy looks independent."""
    w = init(0)
    smallest = math.log10(1 / 20)
    assert st.permtest_l2(w, perturbed(w, 0.02, seed=1), ARCH, L, T=19).log10p == pytest.approx(smallest)
    permuted = perms.output_preserving_transform(w, L, seed=2)
    assert st.permtest_l2(w, permuted, ARCH, L, T=19).log10p > smallest


# ------------------------------------------------------------------------------------------------- stub killer


def assert_valid_and_powerful(test_fn, n_null: int = 20, power_threshold: float = -10.0) -> None:
    """What a dependence test must do, phrased once: power (a perturbed copy is detected at log10 p below
    ``power_threshold``) and validity (over ``n_null`` independently seeded pairs the p-values are consistent
    with Unif(0, 1): KS p > 0.01 and none below 1e-3)."""
    for seed in (0, 1):
        w = init(seed)
        assert test_fn(w, perturbed(w, 0.05, seed=seed + 10)) < power_threshold, (
            "no power on a dependent pair"
        )
    ps = np.array([10 ** test_fn(w1, w2) for w1, w2 in independent_pairs(n_null)])
    assert sps.kstest(ps, "uniform").pvalue > 0.01, f"not uniform under H0: {np.round(ps, 3)}"
    assert ps.min() > 1e-3, f"a false positive under H0: {ps.min()}"


def test_real_statistics_pass_the_helper(x):
    assert_valid_and_powerful(lambda a, b: st.phi_u(a, b, L).log10p)
    assert_valid_and_powerful(lambda a, b: st.phi_match(acts(a, x), acts(b, x)).log10p)


def test_stubs_fail_the_helper():
    import torch

    rng = np.random.default_rng(0)

    def random_p(a, b):
        return math.log10(rng.uniform())

    def cosine_threshold(a, b):  # "similar up weights => dependent": no calibrated p-value
        cos = [
            float(torch.nn.functional.cosine_similarity(a[glu.up_key(i)], b[glu.up_key(i)]).mean())
            for i in range(L)
        ]
        return -20.0 if min(cos) > 0.5 else 0.0

    with pytest.raises(AssertionError, match="no power"):
        assert_valid_and_powerful(random_p)
    with pytest.raises(AssertionError, match="not uniform"):
        assert_valid_and_powerful(cosine_threshold)


# ----------------------------------------------------------------------------------------------------------
# The official code's behaviour, kept as switches (params: evaluate.match_metric, evaluate.spearman_sides)


def test_two_sided_switch_is_scipys_spearmanr():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.permutation(40), rng.permutation(40)
        r, log10p = st.spearman_log10p(a, b, sides="two")
        res = sps.spearmanr(a, b)
        assert r == pytest.approx(res.statistic)
        assert 10**log10p == pytest.approx(res.pvalue, rel=1e-6)
    with pytest.raises(ValueError, match="unknown sides 'three'"):
        st.spearman_log10p(a, b, sides="three")


def test_sqeuclidean_switch_matches_but_is_not_scale_invariant():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(1, 12)) + 0.2 * rng.normal(size=(30, 12))  # similar rows: scale dominates distance
    perm = rng.permutation(30)
    assert np.array_equal(
        st.match(a, a[perm] + 0.001 * rng.normal(size=a.shape), metric="sqeuclidean"), np.argsort(perm)
    )
    scales = np.exp(2 * rng.normal(size=(30, 1)))
    assert np.array_equal(st.match(a, (a * scales)[perm]), np.argsort(perm))  # cosine: invariant
    assert not np.array_equal(st.match(a, (a * scales)[perm], metric="sqeuclidean"), np.argsort(perm))
    with pytest.raises(ValueError, match="unknown MATCH metric"):
        st.match(a, a, metric="manhattan")


# ----------------------------------------------------------------- ties, dead and duplicated units (issue 43)


def with_dead_units(w: dict, frac: float, seed: int | None) -> dict:
    """w with ``frac`` of each block's hidden units dead (gate and up rows zeroed): at random positions drawn
    from ``seed``, or the first ones when ``seed`` is None (one pruning rule applied to two models)."""
    import torch

    out = {k: v.clone() for k, v in w.items()}
    for layer in range(L):
        n = int(frac * 64)
        idx = (
            torch.arange(n)
            if seed is None
            else torch.from_numpy(np.random.default_rng(seed + layer).permutation(64)[:n])
        )
        for key in (glu.gate_key(layer), glu.up_key(layer)):
            out[key][idx] = 0.0
    return out


def with_duplicated_units(w: dict, frac: float, seed: int) -> dict:
    """w with ``frac`` of each block's hidden units made copies of one of them (gate, up rows and down column)."""
    out = {k: v.clone() for k, v in w.items()}
    for layer in range(L):
        idx = np.random.default_rng(seed + layer).permutation(64)[: int(frac * 64)]
        for key in (glu.gate_key(layer), glu.up_key(layer)):
            out[key][idx] = out[key][idx[0]].clone()
        out[glu.down_key(layer)][:, idx] = out[glu.down_key(layer)][:, idx[:1]].clone()
    return out


NULL_CASES = {
    "dead 50%": (lambda w, i: with_dead_units(w, 0.5, i), None),
    "dead 75%": (lambda w, i: with_dead_units(w, 0.75, i), None),
    "dead 90%": (lambda w, i: with_dead_units(w, 0.9, i), None),
    "duplicated 50%": (lambda w, i: with_duplicated_units(w, 0.5, i), None),
    "all copies of one": (lambda w, i: with_duplicated_units(w, 1.0, i), None),
    "both pruned alike 50%": (
        lambda w, i: with_dead_units(w, 0.5, None),
        lambda w, i: with_dead_units(w, 0.5, None),
    ),
}


def null_pairs(case: str, n: int = 16) -> list[tuple[dict, dict]]:
    """``n`` independently seeded pairs altered as NULL_CASES[case] says."""
    alter1, alter2 = NULL_CASES[case]
    return [
        (alter1(w1, i), alter2(w2, i) if alter2 else w2) for i, (w1, w2) in enumerate(independent_pairs(n))
    ]


def assert_uniform(log10ps: list[float], what: str) -> None:
    ps = 10 ** np.array(log10ps)
    assert sps.kstest(ps, "uniform").pvalue > 0.01 and ps.min() > 1e-3, f"{what}: {np.round(ps, 4)}"


def test_tied_units_are_matched_in_uniformly_random_order():
    """MATCH on a matrix with tied units: every tied assignment is equally likely (rows and columns are both
    relabelled at random), and two tie streams give independent answers."""
    rng = np.random.default_rng(5)
    zeros, real = np.zeros((8, 5)), rng.normal(size=(8, 5))
    first = [int(st.match(zeros, real, tie_seed=s)[0]) for s in range(800)]  # all-zero: every assignment ties
    assert sps.chisquare(np.bincount(first, minlength=8)).pvalue > 1e-3
    twins = rng.normal(size=(6, 5))
    twins[1] = twins[0]  # rows 0 and 1 identical: their two columns are assigned either way
    other = twins[rng.permutation(6)] + 0.01 * rng.normal(size=(6, 5))
    swaps = [int(st.match(twins, other, tie_seed=s)[0]) for s in range(400)]
    assert len(set(swaps)) == 2 and 0.4 < np.mean(np.array(swaps) == swaps[0]) < 0.6
    with pytest.raises(ValueError, match="tie_seed must be a non-negative integer, got -1"):
        st.tie_stream(-1, 0, 0)


@pytest.mark.parametrize("case", list(NULL_CASES))
def test_the_matching_statistics_stay_valid_with_dead_and_duplicated_units(x, case):
    """Independent models, one (or both) with dead or duplicated hidden units: every matching statistic's
    p-values stay uniform. Before the fix phi_MATCH broke gate and up ties alike (90 % dead: 87 % of p-values
    below 0.01, min 2e-12) and dead units were matched among themselves (both pruned alike: p ~ 1e-36)."""
    pairs = null_pairs(case)
    activations = [(acts(a, x), acts(b, x)) for a, b in pairs]
    assert_uniform([st.phi_match(a, b).log10p for a, b in activations], f"match, {case}")
    assert_uniform([st.phi_h(a, b).log10p for a, b in activations], f"h, {case}")
    assert_uniform([st.phi_u(a, b, L).log10p for a, b in pairs], f"u, {case}")


def test_the_old_tie_handling_fails_the_same_null_check(x):
    """The check above has teeth: phi_MATCH as it was (one tie seed for gate and up, dead units matched)
    fails it on the cases the issue measured."""

    def shared_ties(a: dict, b: dict) -> float:
        per_block = []
        for a1, a2 in zip(acts(a, x), acts(b, x), strict=True):
            g1, g2, u1, u2 = (m.double().numpy().T for m in (a1["gate"], a2["gate"], a1["up"], a2["up"]))
            gate, up = st.match(g1, g2, tie_seed=0), st.match(u1, u2, absolute=True, tie_seed=0)
            per_block.append(st.spearman_log10p(gate, up)[1])
        return st.fisher_log10p(per_block)

    for case in ("dead 90%", "both pruned alike 50%"):
        with pytest.raises(AssertionError):
            assert_uniform([shared_ties(a, b) for a, b in null_pairs(case)], case)
    # independent tie streams alone are not enough: dead units kept in the matchings still agree by category
    kept = [
        st.phi_match(acts(a, x), acts(b, x), dead_units="keep").log10p
        for a, b in null_pairs("both pruned alike 50%")
    ]
    with pytest.raises(AssertionError):
        assert_uniform(kept, "dead units kept")
    with pytest.raises(ValueError, match="unknown dead_units 'drop'"):
        st.phi_u(init(0), init(1), L, dead_units="drop")


def test_dead_units_are_left_out_and_counted_and_a_pruned_copy_is_still_detected(x):
    w = init(0)
    pruned_copy = with_dead_units(perturbed(w, 0.02, seed=1), 0.5, seed=7)
    res = st.phi_match(acts(w, x), acts(pruned_copy, x))
    assert res.excluded == (32, 32) and res.log10p < -10
    assert st.phi_u(w, pruned_copy, L).excluded == (32, 32)
    assert st.phi_match(acts(w, x), acts(w, x)).excluded == (0, 0)
    nearly_dead = with_dead_units(w, 62 / 64, seed=3)  # 2 live units per block: nothing to rank
    with pytest.raises(st.DegenerateModels, match="no block has 3 or more live hidden units"):
        st.phi_match(acts(w, x), acts(nearly_dead, x))
    one_block = dict(nearly_dead)
    for key in (glu.gate_key(1), glu.up_key(1)):
        one_block[key] = w[key]  # block 1 alive again: block 0 is skipped, block 1 decides
    res = st.phi_match(acts(w, x), acts(one_block, x))
    assert math.isnan(res.per_block[0]) and res.log10p == res.per_block[1] < -10
