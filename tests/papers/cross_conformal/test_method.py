"""cross_conformal: the algorithm's own properties (hand-computed sets, the alpha' identity, nesting, exactness
against a fine grid, coverage on exchangeable data, the baselines)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.cross_conformal import CrossConformalRegressor, alpha_prime
from models.cross_conformal.baselines import (
    cv_plus,
    cv_plus_from_folds,
    full_conformal_linear,
    loo_min_norm,
    split_interval,
)
from models.cross_conformal.core import (
    METHODS,
    FoldScores,
    covered,
    cross_sets,
    exact_level,
    grid_sets,
    member,
    statistic,
)
from models.cross_conformal.data import ols_replicate
from models.cross_conformal.regressor import MinNormOLS, random_folds

# Two folds of two points: residuals {1, 3} around mu_1 = 0 and {2, 4} around mu_2 = 10.
HAND = FoldScores(np.array([[3.0, 1.0], [4.0, 2.0]]))
HAND_MU = np.array([[0.0, 10.0]])


def test_fold_pvalues_on_a_hand_computed_example():
    counts = HAND.counts(HAND_MU, np.array([[0.5, 2.0, 9.0, 20.0]]))
    # y = 0.5: |0.5 - 0| = 0.5 <= 1, 3 -> C_1 = 2; |0.5 - 10| = 9.5 > 4 -> C_2 = 0
    assert counts[0].tolist() == [[2, 0], [1, 0], [0, 2], [0, 0]]
    assert statistic("mean", counts, m=2)[0].tolist() == pytest.approx(
        [(3 / 3 + 1 / 3) / 2, (2 / 3 + 1 / 3) / 2, (1 / 3 + 1) / 2, 1 / 3]
    )
    assert statistic("vovk", counts, m=2)[0].tolist() == pytest.approx([3 / 5, 2 / 5, 3 / 5, 1 / 5])


def test_hand_computed_sets_are_unions_of_intervals():
    sets = cross_sets(HAND, HAND_MU, 0.4, ["mod", "vovk", "e-mod"]).sets
    # mod at 0.4: (2 + C_1 + C_2)/6 > 0.4 <=> C_1 + C_2 >= 1: [-3, 3] U [6, 14]
    assert sets["mod"].as_lists() == [[(-3.0, 3.0), (6.0, 14.0)]]
    assert sets["mod"].widths().tolist() == [14.0]
    # Vovk: (1 + C_1 + C_2)/5 > 0.4 <=> C_1 + C_2 >= 2: [-1, 1] U [8, 12] (the folds' intervals never overlap)
    assert sets["vovk"].as_lists() == [[(-1.0, 1.0), (8.0, 12.0)]]
    # e-mod: pbar_1 = p_1 > 0.4 <=> C_1 >= 1, and pbar_2 = pbar > 0.4: [-3, 3]
    assert sets["e-mod"].as_lists() == [[(-3.0, 3.0)]]
    # endpoints belong to the sets (closed), points just outside do not
    y = np.array([3.0, 3.0 + 1e-9, 6.0 - 1e-9, 6.0])
    assert covered(HAND, np.repeat(HAND_MU, 4, 0), y, 0.4, "mod").tolist() == [True, False, False, True]


def test_alpha_prime_identity_holds_exactly_for_every_count():
    rng = np.random.default_rng(0)
    for K, m in [(2, 2), (5, 20), (10, 34), (3, 7), (20, 5)]:
        n = K * m
        for alpha in (0.05, 0.1, 0.2, 0.25, 0.3, 0.45):
            ap = alpha_prime(alpha, n, K)
            assert ap == exact_level(alpha) + (1 - exact_level(alpha)) * Fraction(K - 1, n + K)
            counts = rng.integers(0, m + 1, size=(50, 40, K))
            vovk = member("vovk", exact_level(alpha), counts, m)
            mod_prime = member("mean", ap, counts, m)
            assert np.array_equal(vovk, mod_prime), (K, m, alpha)
            # and both agree with the real-valued formulas wherever they are not tied
            p_cc = statistic("vovk", counts, m)
            assert np.array_equal(vovk, p_cc > alpha)


def test_exact_thresholds_decide_ties_by_the_definition():
    # m = 19, K = 5: pbar = total / 100, so pbar = 0.1 exactly at total = 10, which is not > 0.1
    counts = np.zeros((1, 1, 5), dtype=int)
    counts[0, 0, 0] = 5  # total = 5 + 5 = 10
    assert not member("mean", exact_level(0.1), counts, m=19)[0, 0]
    counts[0, 0, 0] = 6
    assert member("mean", exact_level(0.1), counts, m=19)[0, 0]


def _scores(draw_seed: int, K: int, m: int, T: int):
    rng = np.random.default_rng(draw_seed)
    res = np.abs(rng.standard_normal((K, m))) * rng.uniform(0.5, 2.0)
    mu = rng.normal(0, 1.5, size=(T, K))
    return FoldScores(res), mu, rng.random(T)


def _inside(inner: list, outer: list) -> bool:
    """Interval-level inclusion: every interval of ``inner`` lies in one interval of ``outer``."""
    return all(any(lo2 <= lo and hi <= hi2 for lo2, hi2 in outer) for lo, hi in inner)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    K=st.integers(2, 8),
    m=st.integers(1, 15),
    alpha=st.floats(0.01, 0.49),
)
def test_nesting_holds_for_exact_sets(seed, K, m, alpha):
    scores, mu, u = _scores(seed, K, m, T=6)
    cs = cross_sets(scores, mu, alpha, list(METHODS), u=u)
    assert not cs.nesting_violations().any()
    lists = {k: v.as_lists() for k, v in cs.sets.items()}
    for t in range(len(mu)):
        assert _inside(lists["eu-mod"][t], lists["e-mod"][t])
        assert _inside(lists["e-mod"][t], lists["mod"][t])
        assert _inside(lists["u-mod"][t], lists["mod"][t])
        assert _inside(lists["eu-cross"][t], lists["e-cross"][t])
        for lo_hi in zip(lists["mod"][t][:-1], lists["mod"][t][1:], strict=True):  # sorted, disjoint
            assert lo_hi[0][1] < lo_hi[1][0]


@pytest.mark.parametrize("seed,K,m", [(1, 5, 20), (2, 2, 7), (3, 10, 4), (4, 3, 1)])
def test_exact_sets_agree_with_a_fine_grid(seed, K, m):
    scores, mu, u = _scores(seed, K, m, T=4)
    alpha = 0.1 if m >= 10 else 0.3
    cs = cross_sets(scores, mu, alpha, list(METHODS), u=u)
    grid = np.linspace(-12, 12, 48_001)
    for name in METHODS:
        for t in range(len(mu)):
            on_grid = covered(
                scores, np.repeat(mu[t : t + 1], len(grid), 0), grid, alpha, name, np.repeat(u[t], len(grid))
            )
            from_sets = np.zeros(len(grid), bool)
            for lo, hi in cs.sets[name].intervals(t):
                from_sets |= (lo <= grid) & (grid <= hi)
            assert np.array_equal(on_grid, from_sets), (name, t)


# ------------------------------------------------------------------ e-mod against an independent grid evaluation
#: (seed, K, m, alpha): a tie-prone case first ((m + 1) alpha = 2: pbar_1 = alpha exactly when C_1 = 1).
GRID_CASES = [(21, 5, 19, 0.1), (22, 10, 9, 0.1), (23, 3, 7, 0.3), (24, 2, 4, 0.25), (25, 8, 24, 0.05)]


def grid_min_running_mean(
    residuals: np.ndarray, mu: np.ndarray, alpha: float, grid: np.ndarray
) -> np.ndarray:
    """e-mod's membership on a y grid straight from the definition, sharing no code with core: for fold k (rows
    of ``residuals`` (K, m) in the split's fold order) and candidate y, R^k(y) = |y - mu_k|,
    C_k(y) = #{i in S_k : R_i >= R^k(y)}, p_k = (1 + C_k)/(m + 1), pbar_k = (1/k) sum_{j<=k} p_j, and y is in the
    set iff min_k pbar_k > alpha, compared in integers: sum_{j<=k} (1 + C_j) * den > num * k * (m + 1) with
    alpha = num/den as written in decimal."""
    K, m = residuals.shape
    num, den = Fraction(str(alpha)).as_integer_ratio()
    score = np.abs(grid[:, None] - mu[None, :])  # (P, K)
    c = (residuals[None, :, :] >= score[:, :, None]).sum(axis=2)  # (P, K)
    running = np.cumsum(1 + c, axis=1)  # sum_{j<=k} (1 + C_j)
    k = np.arange(1, K + 1)
    return np.all(running * den > num * k * (m + 1), axis=1)


def e_mod_grid_check(seed: int, K: int, m: int, alpha: float, T: int = 4, points: int = 20_001) -> dict:
    """Production e-mod sets (core.cross_sets) against :func:`grid_min_running_mean` for T test points of random
    fold residuals and predictions: ``far`` counts grid points where the two disagree farther than one grid step
    from an endpoint of the production set; ``width`` is the largest |production width - grid width| in grid
    steps (grid width = step x member points; at most about 2 per interval when they agree)."""
    rng = np.random.default_rng(seed)
    res = np.abs(rng.standard_normal((K, m))) * rng.uniform(0.5, 2.0)  # unsorted, in fold order
    mu = rng.normal(0, 1.5, size=(T, K))
    lo, hi = mu.min() - res.max() - 1, mu.max() + res.max() + 1
    grid = np.linspace(lo, hi, points)
    step = grid[1] - grid[0]
    sets = cross_sets(FoldScores(res), mu, alpha, ["e-mod"]).sets["e-mod"]
    far, width = 0, 0.0
    for t in range(T):
        truth = grid_min_running_mean(res, mu[t], alpha, grid)
        ours = np.zeros(points, bool)
        ends = []
        for a, b in sets.intervals(t):
            ours |= (a <= grid) & (grid <= b)
            ends += [a, b]
        near = np.zeros(points, bool)
        for e in ends:
            near |= np.abs(grid - e) <= step
        far += int(np.sum((ours != truth) & ~near))
        width = max(width, abs(sets.widths()[t] - step * truth.sum()) / step)
    return {"far": far, "width": width, "intervals": int(sets.n_intervals().max())}


def test_e_mod_sets_agree_with_an_independent_grid_of_min_k_pbar_k():
    for case in GRID_CASES:
        got = e_mod_grid_check(*case)
        assert got["far"] == 0, (case, got)
        assert got["width"] <= 2 * got["intervals"] + 1, (case, got)


def _broken_e(kind: str):
    """core.member with a broken e-statistic: "fold_min" (min_k p_k, no running mean), "reversed" (running means
    over the folds in reverse order), "ge" (pbar_k >= alpha: ties decided the wrong way)."""
    real = member

    def broken(name, level, counts, m, u=None, totals=None):
        if name != "e":
            return real(name, level, counts, m, u, totals)
        K = counts.shape[-1]
        if kind == "fold_min":
            return np.all(1 + counts > int(level * (m + 1)), axis=-1)
        if kind == "reversed":
            return real("e", level, counts[..., ::-1], m)
        run = np.cumsum(1 + counts, axis=-1)
        return np.all(run * level.denominator >= level.numerator * np.arange(1, K + 1) * (m + 1), axis=-1)

    return broken


@pytest.mark.parametrize("kind", ["fold_min", "reversed", "ge"])
def test_a_broken_e_mod_fails_the_independent_grid_check(monkeypatch, kind):
    from models.cross_conformal import core

    monkeypatch.setattr(core, "member", _broken_e(kind))
    assert sum(e_mod_grid_check(*case)["far"] for case in GRID_CASES) > 0


def test_official_grid_construction_ends_runs_at_the_first_failing_point():
    grid = np.linspace(-5, 5, 11)  # step 1
    sets = grid_sets(HAND, HAND_MU, grid, 0.4, "mod")
    # members on the grid: -3..3 -> the run starts at -3 and ends at the first failing point, 4; the second
    # fold's interval [6, 14] is truncated at the grid's end 5 and never starts (5 is the last point)
    assert sets.as_lists() == [[(-3.0, 4.0)]]


def test_split_conformal_covers_exchangeable_data():
    rng = np.random.default_rng(5)
    hits = []
    for _ in range(1500):
        cal = np.abs(rng.standard_normal(19))
        test = abs(rng.standard_normal())
        lo, hi = split_interval(cal, np.zeros(1), 0.1)
        hits.append(lo[0] <= test <= hi[0])
    cov, se = np.mean(hits), np.sqrt(0.09 / 1500)
    assert 0.9 - 3 * se <= cov <= 0.9 + 1 / 20 + 3 * se  # 1 - alpha <= coverage <= 1 - alpha + 1/(m + 1)


def test_split_interval_is_infinite_when_the_level_needs_more_points():
    lo, hi = split_interval(np.ones(5), np.zeros(2), 0.1)  # ceil(0.9 * 6) = 6 > 5
    assert np.all(np.isinf(lo)) and np.all(np.isinf(hi))


def test_mod_cross_covers_and_e_mod_is_smaller_on_the_ols_simulation():
    rng = np.random.default_rng(11)
    cov = {"mod": [], "e-mod": []}
    width = {"mod": [], "e-mod": []}
    for _ in range(60):
        X, y, _ = ols_replicate(rng, 100, 20, n_test=20)
        ccr = CrossConformalRegressor(MinNormOLS(), n_folds=5, random_state=int(rng.integers(1 << 30)))
        ccr.fit(X[:100], y[:100])
        cs = ccr.predict_sets(X[100:], 0.1, ["mod", "e-mod"])
        for k in cov:
            cov[k].append(cs.sets[k].contains(y[100:]).mean())
            width[k].append(cs.sets[k].widths().mean())
    assert np.mean(cov["mod"]) >= 0.8
    assert np.mean(width["e-mod"]) < 0.95 * np.mean(width["mod"])


def test_cv_plus_from_folds_and_jackknife_plus_match_explicit_fits():
    rng = np.random.default_rng(3)
    X, y, _ = ols_replicate(rng, 30, 4, n_test=5)
    Xtr, ytr, Xt = X[:30], y[:30], X[30:]
    ccr = CrossConformalRegressor(MinNormOLS(), n_folds=5, random_state=0).fit(Xtr, ytr)
    mu = ccr.fold_predictions(Xt)
    lo, hi = cv_plus_from_folds(ccr.scores_.residuals, mu, 0.1)
    res, mu_oof = [], []
    for k, model in enumerate(ccr.models_):
        inside = ccr.folds_ == k
        res.append(np.abs(ytr[inside] - model.predict(Xtr[inside])))
        mu_oof.append(np.repeat(model.predict(Xt)[:, None], inside.sum(), 1))
    lo2, hi2 = cv_plus(np.concatenate([np.sort(r) for r in res]), np.concatenate(mu_oof, 1), 0.1)
    # cv_plus only uses the multiset {mu_{-k(i)} -+ R_i}: sorting the residuals inside folds changes nothing
    assert np.allclose(lo, lo2) and np.allclose(hi, hi2)
    for p in (4, 29, 45):  # the hat-matrix closed form, the refit fallback (square X_{-i}), the kernel form
        X, y, _ = ols_replicate(rng, 30, p, n_test=5)
        Xtr, ytr, Xt = X[:30], y[:30], X[30:]
        loo_res, loo_mu = loo_min_norm(Xtr, ytr, Xt)
        for i in range(30):
            keep = np.arange(30) != i
            beta = np.linalg.pinv(Xtr[keep]) @ ytr[keep]
            assert loo_res[i] == pytest.approx(abs(ytr[i] - Xtr[i] @ beta), rel=1e-6, abs=1e-9)
            assert np.allclose(loo_mu[:, i], Xt @ beta, rtol=1e-6, atol=1e-9)


def test_full_conformal_is_exact_and_whole_line_when_interpolating():
    rng = np.random.default_rng(8)
    X, y, _ = ols_replicate(rng, 25, 3, n_test=3)
    sets = full_conformal_linear(X[:25], y[:25], X[25:], 0.1)
    grid = np.linspace(-15, 15, 6001)
    for t in range(3):
        brute = []
        for yy in grid:  # refit with (x_t, yy) appended, rank its residual
            Xa, ya = np.vstack([X[:25], X[25 + t]]), np.append(y[:25], yy)
            r = np.abs(ya - Xa @ (np.linalg.pinv(Xa) @ ya))
            brute.append((1 + np.sum(r[:-1] >= r[-1] - 1e-12)) / 26 > 0.1)
        brute = np.array(brute)
        ivs = sets.intervals(t)
        mine = np.array([any(lo <= g <= hi for lo, hi in ivs) for g in grid])
        edges = np.array([min(abs(g - b) for iv in ivs for b in iv) < 0.01 for g in grid])
        assert np.array_equal(brute[~edges], mine[~edges])
    Xw, yw, _ = ols_replicate(rng, 10, 30, n_test=1)  # p >= n + 1: the fit interpolates
    whole = full_conformal_linear(Xw[:10], yw[:10], Xw[10:], 0.1)
    assert whole.as_lists() == [[(-np.inf, np.inf)]]


def test_regressor_is_seeded_and_drops_the_uneven_surplus():
    rng = np.random.default_rng(0)
    X, y, _ = ols_replicate(rng, 52, 3, n_test=4)
    a = CrossConformalRegressor(n_folds=5, random_state=7).fit(X[:52], y[:52])
    b = CrossConformalRegressor(n_folds=5, random_state=7).fit(X[:52], y[:52])
    assert a.n_dropped_ == 2 and a.scores_.m == 10
    assert a.predict_set(X[52:], 0.1, "u-mod") == b.predict_set(X[52:], 0.1, "u-mod")
    with pytest.raises(ValueError, match="K = 5 does not divide n = 52"):
        CrossConformalRegressor(n_folds=5, uneven="error").fit(X[:52], y[:52])
    folds = random_folds(52, 4, np.random.default_rng(1))
    assert sorted(np.bincount(folds)) == [13, 13, 13, 13]


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda c, X, y: c.fit(X, y[:-1]), "X has 40 rows but y has 39"),
        (lambda c, X, y: c.fit(np.where(np.arange(40)[:, None] == 3, np.nan, X), y), r"first: row 3"),
        (lambda c, X, y: c.fit(X, y).predict_set(X[:, :2], 0.1), "X has 2 features, the model was fit on 3"),
        (lambda c, X, y: c.fit(X, y).predict_set(X, 0.5), r"alpha must lie in \(0, 0.5\), got 0.5"),
        (lambda c, X, y: c.fit(X, y).predict_set(X, 0.1, "bogus"), "unknown method 'bogus'"),
        (lambda c, X, y: CrossConformalRegressor(n_folds=41).fit(X, y), "K = 41 exceeds"),
        (lambda c, X, y: CrossConformalRegressor(n_folds=1).fit(X, y), "integer >= 2, got 1"),
        (lambda c, X, y: c.predict_set(X, 0.1), "not fitted yet"),
    ],
)
def test_bad_inputs_raise_errors_that_name_the_value(call, message):
    rng = np.random.default_rng(0)
    X, y, _ = ols_replicate(rng, 40, 3, n_test=0)
    with pytest.raises(ValueError, match=message):
        call(CrossConformalRegressor(n_folds=5), X, y)


def test_summary_coverage_se_and_widths_on_a_planted_frame(tmp_path):
    import pandas as pd

    from models.cross_conformal.experiment import summaries, summary

    # two replicates of two test points: coverage 1 and 0.5 -> mean 0.75, SD sqrt(0.125), SE SD / sqrt(2)
    frame = pd.DataFrame(
        {
            "data": "simulation",
            "model": "ols",
            "K": 2,
            "construction": "exact",
            "method": ["mod"] * 4 + ["vovk"] * 4 + ["cv+"] * 4,
            "p": 5,
            "rep": [0, 0, 1, 1] * 3,
            "t": [0, 1] * 6,
            "covered": [True, True, True, False] * 3,
            "width": [1.0, 3.0, 2.0, np.inf] + [1.0, 3.0, 2.0, 5.0] * 2,
        }
    )
    s = summary(frame, ["construction", "method", "p"]).set_index("method")
    assert s.loc["mod", "coverage"] == 0.75 and s.loc["mod", "reps"] == 2
    assert s.loc["mod", "se"] == pytest.approx(np.sqrt(0.125) / np.sqrt(2))
    assert s.loc["vovk", "mean_width"] == 2.75 and s.loc["vovk", "median_width"] == 2.5
    assert s.loc["vovk", "width_sd"] == pytest.approx(np.std([2.0, 3.5], ddof=1))
    assert np.isinf(s.loc["mod", "mean_width"])  # an unbounded set keeps the mean infinite
    # the report reads the summary back from CSV: every float must come back exactly
    s.reset_index().to_csv(tmp_path / "s.csv", index=False)
    back = pd.read_csv(tmp_path / "s.csv", float_precision="round_trip").set_index("method")
    pd.testing.assert_frame_equal(back, s, check_exact=True)
    assert summaries(frame)["vovk_vs_cv_plus"] == {"same_width": 1.0, "wider": 0}
