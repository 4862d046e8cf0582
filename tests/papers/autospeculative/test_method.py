"""autospeculative: the algorithm's own properties, each able to fail for a broken implementation.

- The SL step of the sequential sampler is the textbook DDPM ancestral step with posterior variance beta-tilde (to
  1e-12, same noise), a whole chain too; with beta as the variance it is not.
- SL coordinates and grids: to_sl / from_sl invert each other; cosine_grid(K) has K + 1 finite, strictly increasing
  times from t_0 > 0; a repeated t (a clipped schedule) is refused naming its index.
- The mixture denoiser is the posterior mean (an importance-weighted Monte Carlo estimate agrees); Mixture.start
  draws the exact marginal of y_t0.
- A constant denoiser accepts every draft: ceil(K / L) + 2 calls per chain (2 ceil(K / L) + 1 when fresh).
- log_accept_ratio is the Gaussian log density ratio, finite at d = 37,000 where the raw ratio is 0 / 0.
- One accept-or-reflect step has the target's law N(mean_q, eta I) (KS, 20,000 draws); with fresh noise in place
  of the reflection it does not; ASD's own step with a stale mean has that law too.
- Small-K exactness: ASD (L = K = 16) passes the permutation test against the sequential sampler, draft-only fails.
- Seeds reproduce; the energy distance is the brute-force V-statistic and its permutation p has floor 1 / (P + 1);
  experiment.claims computes the gated numbers from hand-built tables; an eps prediction converts to x0.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from models.autospeculative import denoisers, experiment, samplers, sl, stats
from models.autospeculative.denoisers import Mixture


def _recording(value_of):
    """A denoiser m(y, t) = value_of(y, t) that records every (y, t) it is called with."""
    calls: list[tuple[np.ndarray, np.ndarray]] = []

    def m(y, t):
        calls.append((np.array(y), np.array(t)))
        return value_of(y, t)

    return m, calls


def _ddpm_step(x_k, x0hat, abar_k, abar_next, eps, variance="beta_tilde"):
    """The textbook DDPM ancestral step from noise level abar_k to the cleaner abar_next (> abar_k): posterior
    mean of q(x_{t-1} | x_t, x0) with alpha_t = abar_k / abar_next, plus sqrt(variance) eps."""
    alpha = abar_k / abar_next
    beta = 1.0 - alpha
    mean = (
        np.sqrt(abar_next) * beta / (1.0 - abar_k) * x0hat
        + np.sqrt(alpha) * (1.0 - abar_next) / (1.0 - abar_k) * x_k
    )
    var = (1.0 - abar_next) / (1.0 - abar_k) * beta if variance == "beta_tilde" else beta
    return mean + np.sqrt(var) * eps


# ------------------------------------------------------------------------------------------ 1. the SL step
@pytest.mark.parametrize(("abar_k", "abar_next"), [(0.3, 0.5), (0.01, 0.02), (0.9, 0.999), (1e-4, 0.7)])
def test_sl_step_is_the_ddpm_ancestral_step_with_beta_tilde(abar_k, abar_next):
    rng = np.random.default_rng(3)
    n, d = 5, 3
    x_k = rng.standard_normal((n, d))
    x0hat = rng.standard_normal((n, d))
    t = sl.snr(np.array([abar_k, abar_next]))
    eta = t[1] - t[0]
    # the noise scale matches: sqrt(eta) xi in y is sqrt(t (1 + t)) sqrt(beta_tilde) eps, so xi = eps
    beta_tilde = (1 - abar_next) / (1 - abar_k) * (1 - abar_k / abar_next)
    assert math.sqrt(t[1] * (1 + t[1]) * beta_tilde / eta) == pytest.approx(1.0, abs=1e-12)
    m, seen = _recording(lambda y, tt: x0hat)
    samplers.sequential(m, t, sl.to_sl(x_k, t[0]), np.random.default_rng(11))
    eps = np.random.default_rng(11).standard_normal((n, d))  # the draw sequential made for its one step
    assert len(seen) == 2 and np.array_equal(seen[1][1], np.full(n, t[1]))
    x_next = sl.from_sl(seen[1][0], t[1])
    expected = _ddpm_step(x_k, x0hat, abar_k, abar_next, eps)
    np.testing.assert_allclose(x_next, expected, rtol=0, atol=1e-12 * max(1.0, np.abs(expected).max()))
    # with beta (not beta-tilde) as the variance the identity breaks
    wrong = _ddpm_step(x_k, x0hat, abar_k, abar_next, eps, variance="beta")
    assert np.abs(x_next - wrong).max() > 1e-3


def test_a_whole_sequential_chain_is_the_ddpm_chain_with_the_same_noise():
    mix = Mixture.circle()
    abar = np.linspace(0.05, 0.95, 9)  # noise to data
    t = sl.snr(abar)
    n, d = 7, 2
    x = np.random.default_rng(0).standard_normal((n, d))
    res = samplers.sequential(mix, t, sl.to_sl(x, t[0]), np.random.default_rng(5))
    rng = np.random.default_rng(5)
    for k in range(len(t) - 1):
        x0hat = mix(sl.to_sl(x, np.full(n, t[k])), np.full(n, t[k]))
        x = _ddpm_step(x, x0hat, abar[k], abar[k + 1], rng.standard_normal((n, d)))
    np.testing.assert_allclose(
        res.samples, mix(sl.to_sl(x, t[-1]), np.full(n, t[-1])), rtol=1e-10, atol=1e-12
    )
    assert (res.calls == len(t)).all()


# ----------------------------------------------------------------------------------------- 2. SL and grids
def test_to_sl_and_from_sl_invert_each_other():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4))
    t = np.exp(rng.uniform(-10, 8, 6))  # one time per row
    y = sl.to_sl(x, t)
    np.testing.assert_allclose(y, x * np.sqrt(t * (1 + t))[:, None], rtol=1e-15)
    np.testing.assert_allclose(sl.from_sl(y, t), x, rtol=1e-13)
    np.testing.assert_allclose(sl.to_sl(sl.from_sl(y, 2.5), 2.5), y, rtol=1e-13)  # a scalar time


@pytest.mark.parametrize("K", [1, 2, 16, 1000, 4096])
def test_cosine_grid_is_finite_and_strictly_increasing(K):
    t = sl.cosine_grid(K)
    assert t.shape == (K + 1,) and t.dtype == np.float64
    assert np.isfinite(t).all() and t[0] > 0 and (np.diff(t) > 0).all()
    assert t[0] < 1e-5 and t[-1] > 1e4  # the cosine schedule's ends (u from 1 - EDGE to EDGE)
    np.testing.assert_allclose(t, sl.snr(sl.cosine_abar(np.linspace(1 - sl.EDGE, sl.EDGE, K + 1))))


def test_check_grid_names_the_first_bad_index():
    with pytest.raises(ValueError, match=r"t\[2\] = 2 does not exceed t\[1\] = 2"):
        sl.check_grid([1.0, 2.0, 2.0, 3.0, 3.0])
    with pytest.raises(ValueError, match=r"t\[3\]"):
        sl.check_grid([1.0, 2.0, 3.0, 2.5])
    with pytest.raises(ValueError, match=r"t\[0\] = 0.0"):
        sl.check_grid([0.0, 1.0])
    with pytest.raises(ValueError, match=r"t\[1\] = nan"):
        sl.check_grid([1.0, np.nan])
    with pytest.raises(ValueError, match="at least 2 points"):
        sl.check_grid([1.0])
    with pytest.raises(ValueError, match="K = 0"):
        sl.cosine_grid(0)


def test_grid_from_a_clipped_schedule_names_the_repeated_index():
    # a tiny schedule: entries 1 and 2 equal, so t (noisiest first) repeats at index 2
    with pytest.raises(ValueError, match=r"t\[2\] = 1 does not exceed t\[1\] = 1"):
        sl.grid_from_alphas_cumprod(np.array([0.9, 0.5, 0.5, 0.1]), 3)
    # a linear-beta DDPM schedule clipped at 0.5 from above: the cleanest grid points repeat
    abar = np.minimum(np.cumprod(1 - np.linspace(1e-4, 0.02, 1000)), 0.5)
    K = 50
    steps = np.round(np.linspace(999, 0, K + 1)).astype(int)
    first = int(np.flatnonzero(np.diff(abar[steps]) <= 0)[0]) + 1
    assert 1 < first < K
    with pytest.raises(ValueError, match=rf"t\[{first}\] ="):
        sl.grid_from_alphas_cumprod(abar, K)
    # unclipped it is accepted: K + 1 evenly spaced indices, noisiest first
    t, ts = sl.grid_from_alphas_cumprod(np.cumprod(1 - np.linspace(1e-4, 0.02, 1000)), K)
    assert ts[0] == 999 and ts[-1] == 0 and len(t) == K + 1 and (np.diff(t) > 0).all()
    with pytest.raises(ValueError, match="K = 1000"):
        sl.grid_from_alphas_cumprod(abar, 1000)


# ------------------------------------------------------------------------------------- 3. the mixture denoiser
def _asymmetric() -> Mixture:
    return Mixture(np.array([[1.0, 0.0], [3.0, 2.0], [-2.0, 1.0]]), 0.5, np.array([0.3, 0.5, 0.2]))


@pytest.mark.parametrize("mix", [Mixture.circle(), _asymmetric()], ids=["circle", "asymmetric"])
def test_mixture_denoiser_is_the_importance_weighted_posterior_mean(mix):
    rng = np.random.default_rng(0)
    x = mix.sample(200_000, rng)
    scale = np.abs(mix.means).max()
    for t, y in [(0.05, [0.1, -0.05]), (0.5, [0.4, 1.0]), (2.0, [3.0, 3.0]), (2.0, [-5.0, 4.0])]:
        y = np.array(y)
        logw = -0.5 * ((y - t * x) ** 2).sum(1) / t
        w = np.exp(logw - logw.max())
        assert w.sum() ** 2 / (w * w).sum() > 2000  # enough effective samples for the tolerance
        estimate = (w[:, None] * x).sum(0) / w.sum()
        exact = mix(y[None], np.array([t]))[0]
        np.testing.assert_allclose(exact, estimate, atol=0.03 * scale)


def test_mixture_start_draws_the_exact_marginal():
    mix = _asymmetric()
    t0 = 0.7
    y = mix.start(200_000, t0, np.random.default_rng(2))
    mean = mix.weights @ mix.means
    var_x = mix.sigma**2 + mix.weights @ mix.means**2 - mean**2  # per coordinate
    np.testing.assert_allclose(y.mean(0), t0 * mean, atol=0.01)
    np.testing.assert_allclose(y.var(0), t0**2 * var_x + t0, rtol=0.02)


# ----------------------------------------------------------------------------------- 4. a constant denoiser
@pytest.mark.parametrize(("K", "L"), [(16, 16), (16, 5), (64, 7), (10, 1), (33, 32)])
def test_a_constant_denoiser_accepts_every_draft(K, L):
    c = np.array([0.7, -1.3, 2.0])
    n = 9

    def m(y, t):
        return np.tile(c, (len(y), 1))

    t = sl.cosine_grid(K)
    y0 = np.sqrt(t[0]) * np.random.default_rng(0).standard_normal((n, 3))
    res = samplers.asd(m, t, y0, L, np.random.default_rng(1))
    rounds = math.ceil(K / L)
    assert (res.calls == rounds + 2).all() and (res.rounds == rounds).all()
    assert (res.evaluations == K + 2).all()
    assert (res.judged == n).all() and np.array_equal(res.judged, res.accepted)
    fresh = samplers.asd(m, t, y0, L, np.random.default_rng(1), frozen_mean="fresh")
    assert (fresh.calls == 2 * rounds + 1).all() and (fresh.rounds == rounds).all()
    # every draft accepted: the path is y0 + t-increments of c + the same noise as sequential's
    assert np.array_equal(res.samples, np.broadcast_to(c, (n, 3)))


def test_asd_neither_needs_a_writable_denoiser_output_nor_writes_into_it():
    t = np.array([0.5, 1.0, 1.6])
    cache: dict[tuple, np.ndarray] = {}

    def cached(y, tt):  # m(y, t) = t in every coordinate, each output kept and returned again
        return cache.setdefault(tuple(tt), np.repeat(np.asarray(tt, float)[:, None], y.shape[1], 1))

    samplers.asd(cached, t, np.zeros((3, 2)), 2, np.random.default_rng(0))
    first = cache[(0.5, 0.5, 0.5)]
    bad = np.argwhere(first != 0.5)
    problems = [f"the t = 0.5 output was overwritten at {bad[:1].tolist()}"] if len(bad) else []
    try:
        samplers.asd(
            lambda y, tt: np.broadcast_to([1.0, 2.0], y.shape),
            t,
            np.zeros((3, 2)),
            2,
            np.random.default_rng(0),
        )
    except ValueError as exc:
        problems.append(str(exc))
    assert not problems, problems


# --------------------------------------------------------------------------------- 5. the acceptance ratio
def test_log_accept_ratio_is_finite_and_correct_at_d_37000():
    d = 37_000
    rng = np.random.default_rng(4)
    xi = rng.standard_normal((3, d))
    z = np.stack([0.01 * rng.standard_normal(d), 0.05 * rng.standard_normal(d), np.zeros(d)])
    ours = samplers.log_accept_ratio(xi, z)
    assert ours.shape == (3,) and np.isfinite(ours).all() and ours[2] == 0.0
    naive = sps.norm.logpdf(xi + z).sum(1) - sps.norm.logpdf(xi).sum(1)  # float64 log space
    np.testing.assert_allclose(ours, naive, rtol=1e-9, atol=1e-7)
    assert ours[1] < -10  # far from 0: the test above is not trivial
    # the ratio of the full densities underflows: 0 / 0
    with np.errstate(invalid="ignore", divide="ignore", under="ignore"):
        raw = np.exp(sps.norm.logpdf(xi + z).sum(1)) / np.exp(sps.norm.logpdf(xi).sum(1))
    assert np.isnan(raw).all()
    # float32 inputs are computed in float64
    np.testing.assert_allclose(
        samplers.log_accept_ratio(xi.astype(np.float32), z), ours, rtol=1e-4, atol=1e-3
    )


def test_reflect_is_the_householder_reflection():
    rng = np.random.default_rng(0)
    xi, z = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    r = samplers.reflect(xi, z)
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), np.linalg.norm(xi, axis=1))
    e = z / np.linalg.norm(z, axis=1, keepdims=True)
    np.testing.assert_allclose((r * e).sum(1), -(xi * e).sum(1))  # the z-component flips
    np.testing.assert_allclose(r - (r * e).sum(1, keepdims=True) * e, xi - (xi * e).sum(1, keepdims=True) * e)
    np.testing.assert_array_equal(samplers.reflect(xi, np.zeros_like(z)), xi)


# ------------------------------------------------------------------------------ 6. one accept-or-reflect step
def _one_step(rng, n, y, m, mhat, eta, on_reject="reflect"):
    """n independent single ASD steps from y: draft with mhat, verify with m; the standardised outcome."""
    xi = rng.standard_normal((n, len(y)))
    z = np.sqrt(eta) * (mhat - m)[None].repeat(n, 0)
    ok = np.log(rng.random(n)) < np.minimum(0.0, samplers.log_accept_ratio(xi, z))
    draft = y + eta * mhat + np.sqrt(eta) * xi
    other = samplers.reflect(xi, z) if on_reject == "reflect" else rng.standard_normal((n, len(y)))
    mean_q = y + eta * m
    y_new = np.where(ok[:, None], draft, mean_q + np.sqrt(eta) * other)
    return (y_new - mean_q) / np.sqrt(eta), ok.mean()


def test_one_accept_or_reflect_step_has_the_target_law():
    rng = np.random.default_rng(20250)
    y, eta = np.array([0.3, -1.1]), 0.4
    m, mhat = np.array([1.0, -0.5]), np.array([2.3, -1.9])  # z = sqrt(eta) (mhat - m), |z| about 1.2
    assert 0.8 < np.linalg.norm(np.sqrt(eta) * (mhat - m)) < 1.5
    u, rate = _one_step(rng, 20_000, y, m, mhat, eta)
    assert 0.3 < rate < 0.8  # both branches matter
    for j in range(2):
        assert sps.kstest(u[:, j], "norm").pvalue > 1e-3, j
    fresh, _ = _one_step(rng, 20_000, y, m, mhat, eta, on_reject="fresh")
    assert min(sps.kstest(fresh[:, j], "norm").pvalue for j in range(2)) < 1e-6


def test_asd_step_with_a_stale_mean_has_the_sequential_law():
    """K = 2, L = 2 with m(y, t) a different constant per t: the first draft is accepted (z = 0), the second is
    judged against m(., t_1) != m-hat: accepted or reflected, y_2 ~ N(y_0 + eta_0 a_0 + eta_1 a_1, (eta_0 + eta_1) I)
    (recorded at the output call); draft-only (no verification) keeps the stale mean and fails."""
    t = np.array([0.5, 1.0, 1.6])
    a = {0.5: np.array([1.0, 0.0]), 1.0: np.array([-0.5, 1.5]), 1.6: np.array([0.0, 0.0])}
    m, seen = _recording(lambda y, tt: np.stack([a[float(s)] for s in tt]))
    n = 20_000
    y0 = np.tile([0.2, -0.3], (n, 1))
    res = samplers.asd(m, t, y0, 2, np.random.default_rng(7))
    assert (res.judged == n).all() and 0.2 < res.accepted[1] / n < 0.9 and res.accepted[0] == n
    y2 = seen[-1][0]
    assert np.array_equal(seen[-1][1], np.full(n, 1.6))
    u = (y2 - (y0 + 0.5 * a[0.5] + 0.6 * a[1.0])) / np.sqrt(1.1)
    for j in range(2):
        assert sps.kstest(u[:, j], "norm").pvalue > 1e-3, j
    m2, seen2 = _recording(lambda y, tt: np.stack([a[float(s)] for s in tt]))
    samplers.asd(m2, t, y0, 2, np.random.default_rng(7), draft_only=True)
    u2 = (seen2[-1][0] - (y0 + 0.5 * a[0.5] + 0.6 * a[1.0])) / np.sqrt(1.1)
    assert min(sps.kstest(u2[:, j], "norm").pvalue for j in range(2)) < 1e-6


# -------------------------------------------------------------------------------------- 7. small-K exactness
def test_asd_passes_and_draft_only_fails_the_permutation_test_at_small_K():
    mix = Mixture.circle()
    model = experiment.Model("gmm", mix, mix.start)
    t = sl.cosine_grid(16)
    seq = experiment.run_arm(model, t, "sequential", 16, 400, seed=0)
    mine = experiment.run_arm(model, t, "asd", 16, 400, seed=0)
    draft = experiment.run_arm(model, t, "draft_only", 16, 400, seed=0)
    assert mine.calls.mean() < 17 / 2  # fewer calls than the sequential sampler's K + 1
    energy, p = stats.permutation_test(mine.samples, seq.samples, 199, seed=0)
    assert p > 0.01 and energy < 0.1  # seed 0: p = 0.805
    energy, p = stats.permutation_test(draft.samples, seq.samples, 199, seed=0)
    assert p <= 0.01 and energy > 1.0


# ------------------------------------------------------------------------------------------------ 8. seeds
def test_seeds_reproduce():
    mix = Mixture.circle()
    model = experiment.Model("gmm", mix, mix.start)
    t = sl.cosine_grid(32)
    a = experiment.run_arm(model, t, "asd", 8, 50, seed=3)
    b = experiment.run_arm(model, t, "asd", 8, 50, seed=3)
    c = experiment.run_arm(model, t, "asd", 8, 50, seed=4)
    assert np.array_equal(a.samples, b.samples) and np.array_equal(a.calls, b.calls)
    assert np.array_equal(a.judged, b.judged) and np.array_equal(a.accepted, b.accepted)
    assert not np.array_equal(a.samples, c.samples)
    # the arms draw from independent streams
    s = experiment.run_arm(model, t, "sequential", 8, 50, seed=3)
    assert not np.allclose(s.samples, a.samples)


# ------------------------------------------------------------------------------------------------ 9. stats
def test_energy_distance_is_the_brute_force_v_statistic():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((7, 3)), rng.standard_normal((5, 3)) + 0.5

    def mean_dist(a, b):
        return np.mean([np.linalg.norm(p - q) for p in a for q in b])

    brute = 2 * mean_dist(x, y) - mean_dist(x, x) - mean_dist(y, y)
    assert stats.energy_distance(x, y) == pytest.approx(brute, rel=1e-12)
    # (distances come from |a|^2 + |b|^2 - 2 a.b: coincident points are about 1e-8 apart, not 0)
    assert stats.energy_distance(x, x) == pytest.approx(0.0, abs=1e-7)
    # 1-D samples: scipy reports its square root
    u, v = rng.standard_normal(9), rng.standard_normal(6)
    assert math.sqrt(stats.energy_distance(u, v)) == pytest.approx(sps.energy_distance(u, v), rel=1e-10)


def test_permutation_p_has_floor_one_over_p_plus_one_and_is_large_for_one_law():
    rng = np.random.default_rng(0)
    far = stats.permutation_test(rng.standard_normal((40, 2)), rng.standard_normal((30, 2)) + 5, 99, seed=1)
    assert far[1] == 1 / 100 and far[0] > 5
    x = rng.standard_normal((40, 2))
    assert stats.permutation_test(x, x, 99, seed=1) == (pytest.approx(0.0, abs=1e-7), 1.0)
    energy, p = stats.permutation_test(x, rng.standard_normal((50, 2)), 199, seed=2)
    assert p > 0.05, p
    # the p-value lies on the grid k / (P + 1)
    assert round(p * 200) == pytest.approx(p * 200, abs=1e-9)


# ----------------------------------------------------------------------------------------------- 10. claims
def _tables():
    Ks = [16, 64, 256]
    table = pd.DataFrame(
        [{"model": "gmm", "K": K, "L": K, "variant": "asd", "calls": 3.0 * K**0.5} for K in Ks]
        + [
            {"model": "gmm", "K": 64, "L": 8, "variant": "asd", "calls": 30.0},  # L != K: ignored
            {"model": "gmm", "K": 256, "L": 256, "variant": "fresh", "calls": 500.0},
            {"model": "digits", "K": 256, "L": 256, "variant": "asd", "calls": 200.0},
        ]
    )
    tests = pd.DataFrame(
        [
            {"model": "gmm", "K": 16, "variant": "asd", "energy": 0.01, "p": 0.2},
            {"model": "gmm", "K": 64, "variant": "asd", "energy": 0.02, "p": 0.04},
            {"model": "digits", "K": 32, "variant": "asd", "energy": 0.5, "p": 0.03},
            {"model": "gmm", "K": 256, "variant": "fresh", "energy": 0.9, "p": 0.001},
            {"model": "gmm", "K": 256, "variant": "draft_only", "energy": 2.5, "p": 0.002},
            {"model": "gmm", "K": 64, "variant": "draft_only", "energy": 9.0, "p": 0.5},
        ]
    )
    return table, tests


def test_claims_from_hand_built_tables():
    table, tests = _tables()
    c = experiment.claims(table, tests, 256)
    assert c["calls_at_K"] == pytest.approx(48.0) and c["calls_over_K"] == pytest.approx(48.0 / 256)
    assert c["rounds_slope"] == pytest.approx(0.5, abs=1e-12) and c["slope_Ks"] == [16, 64, 256]
    assert c["tests"] == 3 and c["min_p"] == 0.03 and c["min_p_at"] == "digits, K = 32"
    assert c["bonferroni_p"] == pytest.approx(3 * 0.03)
    assert c["draft_only_energy"] == 2.5 and c["draft_only_p"] == 0.002


def test_claims_are_nan_where_arms_are_missing():
    table, tests = _tables()
    c = experiment.claims(table, tests, 1024)  # no arm at K = 1024
    assert (
        math.isnan(c["calls_over_K"]) and math.isnan(c["calls_at_K"]) and math.isnan(c["draft_only_energy"])
    )
    assert c["rounds_slope"] == pytest.approx(0.5)  # the slope does not need K_big
    empty = experiment.claims(table.iloc[:0], tests.iloc[:0], 256)
    for key in ("calls_over_K", "rounds_slope", "min_p", "bonferroni_p", "draft_only_energy", "draft_only_p"):
        assert math.isnan(empty[key]), key
    assert empty["tests"] == 0 and empty["min_p_at"] == "" and empty["slope_Ks"] == []
    one = experiment.claims(table[table.K == 16], tests, 16)  # one K: no slope
    assert math.isnan(one["rounds_slope"]) and one["calls_over_K"] == pytest.approx(12.0 / 16)


# ------------------------------------------------------------------------------------------- 11. predictions
def test_an_eps_prediction_converts_to_the_x0_prediction():
    rng = np.random.default_rng(0)
    n, d = 6, 5
    x0, eps = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    t = np.exp(rng.uniform(-8, 6, n))
    abar = t / (1 + t)
    x_t = np.sqrt(abar)[:, None] * x0 + np.sqrt(1 - abar)[:, None] * eps
    y = sl.to_sl(x_t, t)
    np.testing.assert_allclose(denoisers.from_prediction(eps, y, t, "eps"), x0, rtol=1e-9, atol=1e-9)
    assert denoisers.from_prediction(x0, y, t, "x0") is x0
    with pytest.raises(ValueError, match="prediction = 'v'"):
        denoisers.from_prediction(eps, y, t, "v")
