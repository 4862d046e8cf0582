"""tmvml: the method's own properties, each able to fail for a broken implementation.

- t-SVD: FFT along mode 3, per-slice SVD and inverse FFT give back the (real) tensor; ``slice_spectra`` is the
  per-slice SVD and conjugate-symmetric; ``prox_tensor`` with tau = 0 is the identity for both penalties, its output
  is real, and its half-spectrum + conjugate-symmetry fill equals a naive prox that decomposes every slice (n3 even
  and odd).
- The scalar LTR prox (fixed point) reaches the global minimum of (x - s)^2 / 2 + t (1 - exp(-x / delta)) over
  x >= 0 found by a fine grid, for random (s, t, delta) and for built cases with the minimiser at 0 and with two
  local minima; ``one_step`` is max(s - (t / delta) exp(-s / delta), 0) and is not the exact prox.
- The TNN prox is soft thresholding of every Fourier slice's singular values at t = tau scale n3.
- The LTR tends to the sum of the slices' ranks (n3 x the tubal rank of a planted tensor) as delta -> 0, never
  exceeds the number of nonzero singular values nor TNN / delta; ``tubal_rank`` of a planted rank-r tensor is r;
  ``t_product`` is the block-circulant product.
- ``prox_tensor`` minimises 1/2 ||G - A||_F^2 + tau ||G||_P: no random perturbation does better (TNN: convex, any
  size; LTR: small ones, and the TNN prox's point, A and 0 are no better either).
- ADMM: converges with mu = 1.2 to an objective below the zero start's and its own first iterate's; for the TNN it
  reaches the optimum an independent solver (FISTA with the same prox) finds; mu = 1 with rho = 1e-3 does not
  converge in 50 iterations and dual_sign = -1 diverges; rotate / unrotate.
- TMvML: shapes, padding and PCA, lam -> 0 gives the per-view least squares (PerViewRidge), lam -> inf gives the
  label frequencies, bad input is a UserError naming it.
- Metrics: a hand-built example computed by hand and scikit-learn on random data.
- Data: the packaged Yeast, gzip fixtures, parse_ranges / read_table refusals, the synthetic and planted generators.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from icml25.errors import UserError
from models.tmvml import admm as admm_mod
from models.tmvml import data, metrics, model, tensor


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# ------------------------------------------------------------------------------------------------ t-SVD identities
SHAPES = [(5, 3, 1), (4, 6, 2), (6, 4, 5), (5, 5, 6), (3, 7, 7), (7, 2, 8)]


@pytest.mark.parametrize("shape", SHAPES)
def test_fft_slice_svd_and_inverse_fft_give_back_the_real_tensor(shape):
    a = _rng(0).normal(size=shape)
    abar = np.fft.fft(a, axis=2)
    u, s, vt = np.linalg.svd(np.moveaxis(abar, 2, 0), full_matrices=False)
    back = np.fft.ifft(np.moveaxis((u * s[:, None, :]) @ vt, 0, 2), axis=2)
    assert np.abs(back.imag).max() < 1e-12
    assert np.allclose(back.real, a, atol=1e-12)
    # slice_spectra is exactly these singular values, and they come in conjugate pairs s_k = s_{n3 - k}
    spec = tensor.slice_spectra(a)
    n3 = shape[2]
    naive = np.stack([np.linalg.svd(abar[:, :, k], compute_uv=False) for k in range(n3)])
    assert spec.shape == (n3, min(shape[:2]))
    assert np.allclose(spec, naive, atol=1e-12)
    assert np.allclose(spec[1:], spec[1:][::-1], atol=1e-12)


@pytest.mark.parametrize("penalty", tensor.PENALTIES)
@pytest.mark.parametrize("shape", SHAPES)
def test_prox_tensor_with_tau_zero_is_the_identity(shape, penalty):
    a = _rng(1).normal(size=shape)
    out = tensor.prox_tensor(a, 0.0, penalty, delta=0.7)
    assert out.dtype == np.float64 and out.shape == a.shape
    assert np.abs(out - a).max() < 1e-10


def _naive_prox(a, tau, penalty, delta, scale, prox="fixed_point"):
    """The prox decomposing every Fourier slice (no conjugate-symmetry shortcut)."""
    n3 = a.shape[2]
    abar = np.fft.fft(a, axis=2)
    out = np.empty_like(abar)
    for k in range(n3):
        u, s, vt = np.linalg.svd(abar[:, :, k], full_matrices=False)
        x = tensor.prox_scalar(s, tau * scale * n3, penalty, delta, prox)
        out[:, :, k] = (u * x) @ vt
    back = np.fft.ifft(out, axis=2)
    assert np.abs(back.imag).max() < 1e-10 * (
        1 + np.abs(back.real).max()
    )  # the exact prox of a real A is real
    return back.real


@pytest.mark.parametrize("prox", tensor.PROX)
@pytest.mark.parametrize("penalty", tensor.PENALTIES)
@pytest.mark.parametrize("n3", [1, 2, 3, 4, 5, 6, 7, 8])
def test_prox_tensor_symmetry_fill_matches_the_all_slices_prox(n3, penalty, prox):
    g = _rng(10 + n3)
    zeroed = 0
    for trial, (n1, n2) in enumerate([(6, 4), (3, 5), (5, 5)]):
        a = g.normal(size=(n1, n2, n3)) * g.uniform(0.2, 1.5)
        tau, delta, scale = g.uniform(0.2, 1.5), g.uniform(0.3, 2), (1.0, 1.0 / n3)[trial % 2]
        out = tensor.prox_tensor(a, tau, penalty, delta, scale, prox)
        assert np.isrealobj(out) and out.shape == a.shape
        ref = _naive_prox(a, tau, penalty, delta, scale, prox)
        assert np.allclose(out, ref, atol=1e-10), (n3, n1, n2, np.abs(out - ref).max())
        assert np.abs(out - a).max() > 1e-6
        zeroed += int((tensor.slice_spectra(out) < 1e-9).sum())
    assert zeroed > 0  # the threshold did something: some singular values were set to 0


# ------------------------------------------------------------------------------------------------ scalar prox
def _f(x, s, t, delta):
    return 0.5 * (x - s) ** 2 + t * (1.0 - np.exp(-x / delta))


def _grid_min(s, t, delta, points=200_001):
    """The minimum over x >= 0 on a fine grid: the objective increases beyond s, so [0, s] is enough."""
    xs = np.linspace(0.0, s, points)
    f = _f(xs, s, t, delta)
    i = int(f.argmin())
    return xs[i], f[i], f


def _check_scalar_prox(s, t, delta):
    x = float(tensor.prox_scalar(np.array([s]), t, "ltr", delta, "fixed_point")[0])
    assert 0.0 <= x <= s + 1e-12
    xg, fg, f = _grid_min(s, t, delta)
    fx = _f(x, s, t, delta)
    assert fx <= fg + 1e-10 * (1 + t), (s, t, delta, x, xg, fx - fg)  # as good as the grid's best
    return x, xg, f


def test_ltr_scalar_prox_is_the_global_minimiser_on_random_cases():
    g = _rng(2)
    zeros = interior = 0
    for _ in range(150):
        delta = 10 ** g.uniform(-2, 1)
        s = g.uniform(0, 6) * delta
        t = 10 ** g.uniform(-2, 1) * delta**2 * g.uniform(0.1, 3)
        x, xg, _ = _check_scalar_prox(s, t, delta)
        zeros += x == 0.0
        interior += x > 0
    assert zeros > 10 and interior > 10  # both kinds of answer occur


# two local minima: t / delta^2 > 1 and delta (1 + ln(t / delta^2)) < s < t / delta (0 and an interior point)
TWO_MINIMA = [
    (4.0, 5.0, 1.0),  # the interior minimum wins
    (3.0, 5.0, 1.0),  # 0 wins
    (3.4, 5.0, 1.0),
    (3.45, 5.0, 1.0),
    (0.30, 0.05, 0.1),
    (0.45, 0.05, 0.1),
    (7.0, 20.0, 2.0),
    (8.5, 20.0, 2.0),
]


@pytest.mark.parametrize("s,t,delta", TWO_MINIMA)
def test_ltr_scalar_prox_picks_the_better_of_two_local_minima(s, t, delta):
    x, xg, f = _check_scalar_prox(s, t, delta)
    # the grid shows two local minima: one at 0 (f increasing there) and one inside
    inside = np.flatnonzero((f[1:-1] < f[:-2]) & (f[1:-1] <= f[2:])) + 1
    assert f[1] > f[0] and len(inside) == 1
    assert (x == 0.0) == (f[0] <= f[inside[0]])
    if abs(f[0] - f[inside[0]]) > 1e-6:
        assert abs(x - xg) < 1e-3 * max(s, 1)


@pytest.mark.parametrize(
    "s,t,delta",
    [
        (0.5, 1.0, 1.0),
        (0.0, 1.0, 1.0),
        (1.0, 1.0, 1.0),
        (0.05, 0.01, 0.1),
        (2.0, 3.0, 0.5),
        (1e-6, 1e-3, 1e-3),
    ],
)
def test_ltr_scalar_prox_is_zero_when_zero_is_the_minimiser(s, t, delta):
    x, xg, f = _check_scalar_prox(s, t, delta)
    assert f.argmin() == 0 and x == 0.0


def test_ltr_scalar_prox_near_the_convexity_boundary():
    # t = delta^2: the objective is convex with zero curvature at 0, where the fixed point iteration is slowest
    for delta in (0.1, 1.0, 3.0):
        t = delta**2
        for s in t / delta * np.array([0.5, 0.99, 1.0, 1.01, 1.1, 2.0]):
            _check_scalar_prox(s, t, delta)


def test_ltr_scalar_prox_is_elementwise_and_one_step_is_the_formula():
    g = _rng(3)
    s = np.abs(g.normal(size=40)) * 3
    t, delta = 2.0, 0.8
    vec = tensor.prox_scalar(s, t, "ltr", delta, "fixed_point")
    one = np.array([tensor.prox_scalar(np.array([v]), t, "ltr", delta)[0] for v in s])
    assert np.allclose(vec, one, atol=1e-9)
    step = tensor.prox_scalar(s, t, "ltr", delta, "one_step")
    assert np.array_equal(step, np.maximum(s - (t / delta) * np.exp(-s / delta), 0.0))
    # one weighted thresholding step is not the exact prox: its objective is never lower and sometimes higher
    assert (_f(vec, s, t, delta) <= _f(step, s, t, delta) + 1e-12).all()
    assert (_f(step, s, t, delta) - _f(vec, s, t, delta)).max() > 1e-3
    with pytest.raises(ValueError, match="penalty 'l1'"):
        tensor.prox_scalar(s, t, "l1")
    with pytest.raises(ValueError, match="prox 'newton'"):
        tensor.prox_scalar(s, t, "ltr", delta, "newton")


# ------------------------------------------------------------------------------------------------ TNN prox
def test_tnn_prox_is_soft_thresholding():
    g = _rng(4)
    s = np.abs(g.normal(size=30)) * 2
    for t in (0.0, 0.3, 1.0, 10.0):
        assert np.array_equal(tensor.prox_scalar(s, t, "tnn"), np.maximum(s - t, 0.0))
    cut = kept = 0
    for shape in [(6, 4, 5), (4, 6, 6), (5, 5, 1)]:
        a = g.normal(size=shape) * 2
        n3 = shape[2]
        for tau, scale in [(0.1, 1.0), (0.4, 1.0), (1.0, 1.0 / n3)]:
            out = tensor.prox_tensor(a, tau, "tnn", scale=scale)
            t = tau * scale * n3
            want = np.maximum(tensor.slice_spectra(a) - t, 0.0)
            assert np.allclose(tensor.slice_spectra(out), want, atol=1e-10), (shape, tau, scale)
            cut, kept = cut + int((want == 0).sum()), kept + int((want > 0).sum())
    assert cut > 0 and kept > 0  # some values are cut to 0, others only shrunk


# ------------------------------------------------------------------------------------------------ LTR, ranks
def test_t_product_is_the_block_circulant_product():
    g = _rng(5)
    a, b = g.normal(size=(4, 3, 5)), g.normal(size=(3, 2, 5))
    c = data.t_product(a, b)
    n3 = a.shape[2]
    want = np.stack([sum(a[:, :, j] @ b[:, :, (k - j) % n3] for j in range(n3)) for k in range(n3)], 2)
    assert c.shape == (4, 2, 5) and np.allclose(c, want, atol=1e-12)


@pytest.mark.parametrize("rank", [1, 2])
def test_planted_has_the_tubal_rank_and_ltr_tends_to_the_sum_of_slice_ranks(rank):
    shape = (12, 5, 7)
    star, noisy = data.planted(_rng(6), shape, rank=rank, noise=0.0)
    assert np.array_equal(star, noisy)
    assert tensor.tubal_rank(star) == rank
    spec = tensor.slice_spectra(star)
    assert ((spec > 1e-8 * spec.max()).sum(1) == rank).all()  # every Fourier slice has rank r
    top = spec.max()
    values = [tensor.ltr(star, d * top) for d in (10.0, 1.0, 1e-2, 1e-4, 1e-9)]
    assert all(b > a for a, b in zip(values, values[1:], strict=False))  # increasing as delta falls
    assert values[-1] == pytest.approx(shape[2] * rank, abs=1e-3)  # n3 x the tubal rank
    assert values[0] < 0.5 * shape[2] * rank
    assert tensor.ltr(star, 1e-9 * top, scale=1.0 / shape[2]) == pytest.approx(rank, abs=1e-3)
    # with noise the tubal rank is full
    _, noisy = data.planted(_rng(6), shape, rank=rank, noise=0.3)
    assert tensor.tubal_rank(noisy) == min(shape[:2])


def test_ltr_is_below_the_rank_count_and_tnn_over_delta():
    g = _rng(7)
    for _ in range(20):
        shape = tuple(int(v) for v in g.integers(1, 7, size=3))
        a = g.normal(size=shape) * g.uniform(0.01, 10)
        if g.uniform() < 0.3:
            a = data.t_product(g.normal(size=(shape[0], 1, shape[2])), g.normal(size=(1, shape[1], shape[2])))
        spec = tensor.slice_spectra(a)
        count = int((spec > 1e-10 * max(spec.max(), 1e-300)).sum())
        for delta in (1e-3, 0.1, 1.0, 30.0):
            for scale in (1.0, 0.25):
                value = tensor.ltr(a, delta, scale)
                assert 0.0 <= value <= scale * count + 1e-9
                assert value <= tensor.tnn(a, scale) / delta * (1 + 1e-12) + 1e-12
                assert value == pytest.approx(scale * (1 - np.exp(-spec / delta)).sum(), rel=1e-12)
        assert tensor.tnn(a) == pytest.approx(spec.sum(), rel=1e-12)
    # n3 = 1: the TNN is the nuclear norm of the matrix
    m = g.normal(size=(5, 3, 1))
    assert tensor.tnn(m) == pytest.approx(np.linalg.svd(m[:, :, 0], compute_uv=False).sum(), rel=1e-12)
    assert tensor.tubal_rank(np.zeros((3, 4, 5))) == 0


# ------------------------------------------------------------------------------------------------ prox optimality
def _prox_objective(gt, a, tau, penalty, delta, scale):
    reg = tensor.ltr(gt, delta, scale) if penalty == "ltr" else tensor.tnn(gt, scale)
    return 0.5 * ((gt - a) ** 2).sum() + tau * reg


@pytest.mark.parametrize("shape", [(6, 4, 5), (5, 5, 4)])
def test_tnn_prox_beats_random_perturbations(shape):
    g = _rng(8)
    a = g.normal(size=shape) * 2
    tau, scale = 0.3, 1.0
    p = tensor.prox_tensor(a, tau, "tnn", scale=scale)
    best = _prox_objective(p, a, tau, "tnn", 1.0, scale)
    for i in range(200):
        eps = 10.0 ** (-3 + 3 * i / 200)  # from 1e-3 to 1
        q = p + eps * g.normal(size=shape)
        assert best <= _prox_objective(q, a, tau, "tnn", 1.0, scale) + 1e-12, eps


@pytest.mark.parametrize("shape", [(6, 4, 5), (5, 5, 4)])
def test_ltr_prox_beats_small_perturbations_and_the_tnn_point(shape):
    g = _rng(9)
    a = g.normal(size=shape) * 2
    for tau, delta, scale in [(0.3, 1.0, 1.0), (0.5, 0.3, 1.0), (2.0, 2.0, 1.0 / shape[2])]:
        p = tensor.prox_tensor(a, tau, "ltr", delta, scale)
        best = _prox_objective(p, a, tau, "ltr", delta, scale)
        for i in range(100):
            eps = 10.0 ** (-4 + 2 * i / 100)
            q = p + eps * g.normal(size=shape)
            assert best <= _prox_objective(q, a, tau, "ltr", delta, scale) + 1e-12, (tau, delta, eps)
        others = [tensor.prox_tensor(a, tau, "tnn", scale=scale), a, np.zeros_like(a)]
        others.append(tensor.prox_tensor(a, tau, "ltr", delta, scale, "one_step"))
        for other in others:
            assert best <= _prox_objective(other, a, tau, "ltr", delta, scale) + 1e-12


# ------------------------------------------------------------------------------------------------ ADMM
def _problem(seed=1, n=60, d=6, q=5, views=3):
    g = _rng(seed)
    xs = [g.normal(size=(n, d)) for _ in range(views)]
    y = (g.normal(size=(n, q)) > 0).astype(float) - 0.5
    return xs, y


def test_rotate_and_unrotate():
    w = _rng(10).normal(size=(4, 3, 5))
    r = tensor.rotate(w)
    assert r.shape == (4, 5, 3)
    for v in range(5):
        for k in range(3):
            assert np.array_equal(r[:, v, k], w[:, k, v])
    assert np.array_equal(tensor.unrotate(r), w)
    assert np.array_equal(tensor.rotate(tensor.unrotate(r)), r)


@pytest.mark.parametrize("penalty", tensor.PENALTIES)
@pytest.mark.parametrize("lam", [1.0, 5.0])
def test_admm_converges_and_lowers_the_objective(penalty, lam):
    xs, y = _problem()
    res = admm_mod.admm(xs, y, lam, penalty=penalty, mu=1.2, tol=1e-4, max_iter=300)
    assert res.converged and res.iterations < 300
    assert len(res.residuals) == res.iterations and res.residuals[-1] < 1e-4
    assert all(r >= 1e-4 for r in res.residuals[:-1])  # it stops at the first residual below tol
    final = admm_mod.objective(xs, y, res.w, lam, penalty)
    zero = admm_mod.objective(xs, y, np.zeros_like(res.w), lam, penalty)
    first = admm_mod.objective(xs, y, admm_mod.admm(xs, y, lam, penalty=penalty, max_iter=1).w, lam, penalty)
    assert final < zero - 1.0
    assert final < first


@pytest.mark.parametrize("lam", [5.0, 10.0])
def test_admm_reaches_the_tnn_optimum_of_an_independent_solver(lam):
    """For the (convex) TNN problem ADMM and FISTA with the same prox find the same minimiser."""
    xs, y = _problem()
    d, q, views = xs[0].shape[1], y.shape[1], len(xs)
    step = 1.0 / (2 * max(np.linalg.eigvalsh(x.T @ x).max() for x in xs))
    w = np.zeros((d, q, views))
    z, tk = w.copy(), 1.0
    for _ in range(300):
        grad = np.stack([2 * x.T @ (x @ z[:, :, v] - y) for v, x in enumerate(xs)], 2)
        new = tensor.unrotate(tensor.prox_tensor(tensor.rotate(z - step * grad), lam * step, "tnn"))
        tn = (1 + np.sqrt(1 + 4 * tk * tk)) / 2
        z, w, tk = new + (tk - 1) / tn * (new - w), new, tn
    res = admm_mod.admm(xs, y, lam, penalty="tnn", tol=1e-8)
    assert res.converged
    got, want = (admm_mod.objective(xs, y, v, lam, "tnn") for v in (res.w, w))
    assert got == pytest.approx(want, rel=1e-7, abs=1e-6)
    assert np.abs(res.w - w).max() < 1e-3
    assert np.abs(w).max() > 1e-2  # not the trivial solution 0


def test_admm_without_a_growing_rho_or_with_a_flipped_dual_step_does_not_converge():
    xs, y = _problem()
    fixed = admm_mod.admm(xs, y, 5.0, mu=1.0, rho=1e-3, max_iter=50)
    assert not fixed.converged and fixed.iterations == 50 and len(fixed.residuals) == 50
    assert min(fixed.residuals) >= 1e-4
    flipped = admm_mod.admm(xs, y, 5.0, dual_sign=-1.0, max_iter=100)
    assert not flipped.converged and flipped.iterations == 100
    assert flipped.residuals[-1] > 1e6 * flipped.residuals[0]  # it diverges
    ok = admm_mod.admm(xs, y, 5.0, max_iter=100)  # the same budget with the defaults converges
    assert ok.converged


# ------------------------------------------------------------------------------------------------ the estimator
def _views(seed=3, n=40, dims=(6, 8, 7), q=4, test_rows=20):
    g = _rng(seed)
    z = g.normal(size=(n + test_rows, 3))
    xs = [z @ g.normal(size=(3, d)) + g.normal(size=(n + test_rows, d)) for d in dims]
    y = (z @ g.normal(size=(3, q)) + g.normal(size=(n + test_rows, q)) > 0).astype(int)
    return [x[:n] for x in xs], y[:n], [x[n:] for x in xs], y[n:]


@pytest.mark.parametrize("common_dim", [None, "pca"])
def test_tmvml_shapes_padding_and_pca(common_dim):
    views, y, test, _ = _views()
    m = model.TMvML(lam=10.0, common_dim=common_dim).fit(views, y)
    d = 8 if common_dim is None else 6
    assert m.w_.shape == (d, 4, 3) and m.converged_
    f = m.decision_function(test)
    assert f.shape == (20, 4) and np.isfinite(f).all()
    p = m.predict(test)
    assert p.shape == (20, 4) and set(np.unique(p)) <= {0, 1}
    assert np.array_equal(p, (f >= 0.5).astype(int))
    assert np.array_equal(m.predict(test, threshold=0.2), (f >= 0.2).astype(int))
    if common_dim == "pca":
        assert [pc.shape for pc in m.pcas_] == [(6, 6), (8, 6), (7, 6)]
        for pc in m.pcas_:  # orthonormal directions
            assert np.allclose(pc.T @ pc, np.eye(6), atol=1e-10)
    else:
        assert m.pcas_ == [None, None, None]


@pytest.mark.parametrize("penalty", tensor.PENALTIES)
def test_tmvml_with_a_tiny_lam_is_the_per_view_least_squares(penalty):
    views, y, test, _ = _views()
    ls = model.PerViewRidge(lam=1e-6).fit(views, y).decision_function(test)
    ridge = (
        model.PerViewRidge(lam=0.5).fit(views, y).decision_function(test)
    )  # the first ADMM iterate (rho = 1)
    m = model.TMvML(lam=1e-6, penalty=penalty, tol=1e-10, max_iter=2000).fit(views, y)
    assert m.converged_
    f = m.decision_function(test)
    assert np.abs(f - ls).max() < 1e-4
    assert np.abs(ridge - ls).max() > 1e-3  # the comparison can tell least squares from a ridge
    # PCA of equal-width views is a rotation of each view: the same least squares
    eq_views, eq_y, eq_test, _ = _views(seed=4, dims=(5, 5, 5))
    eq_ls = model.PerViewRidge(lam=1e-6).fit(eq_views, eq_y).decision_function(eq_test)
    pca = model.TMvML(lam=1e-6, penalty=penalty, tol=1e-10, max_iter=2000, common_dim="pca").fit(
        eq_views, eq_y
    )
    assert np.abs(pca.decision_function(eq_test) - eq_ls).max() < 1e-4


@pytest.mark.parametrize("common_dim", [None, "pca"])
def test_tmvml_standardises_each_feature_on_the_training_rows(common_dim):
    """A feature's unit and origin do not matter: each view is standardised with the training rows' moments."""
    views, y, test, _ = _views()
    g = _rng(14)
    scales = [10.0 ** g.uniform(-2, 2, size=v.shape[1]) for v in views]
    shifts = [g.normal(size=v.shape[1]) * 50 for v in views]
    moved = [v * a + b for v, a, b in zip(views, scales, shifts, strict=True)]
    moved_test = [v * a + b for v, a, b in zip(test, scales, shifts, strict=True)]
    for est in (model.TMvML(lam=10.0, common_dim=common_dim), model.PerViewRidge(lam=10.0)):
        f = est.fit(views, y).decision_function(test)
        assert np.allclose(est.fit(moved, y).decision_function(moved_test), f, atol=1e-6)


def test_tmvml_with_a_huge_lam_predicts_the_label_frequencies():
    views, y, test, _ = _views()
    m = model.TMvML(lam=1e7, penalty="tnn").fit(views, y)
    assert np.allclose(m.decision_function(test), y.mean(0), atol=1e-3)
    nob = model.TMvML(lam=1e7, penalty="tnn", bias=False).fit(views, y)
    assert np.allclose(nob.decision_function(test), 0.0, atol=1e-3)
    freq = model.LabelFrequency().fit(views, y).decision_function(test)
    assert np.allclose(freq, np.tile(y.mean(0), (20, 1)))


def test_tmvml_refuses_bad_input_naming_it():
    views, y, test, _ = _views()
    m = model.TMvML(lam=10.0)
    with pytest.raises(UserError, match="view 2 has 39 rows, view 1 has 40"):
        m.fit([views[0], views[1][:-1], views[2]], y)
    nan = views[2].copy()
    nan[3, 1] = np.nan
    with pytest.raises(UserError, match="view 3: NaN"):
        m.fit([views[0], views[1], nan], y)
    with pytest.raises(UserError, match="labels must be 0 or 1"):
        m.fit(views, y * 2)
    with pytest.raises(UserError, match="Y has shape"):
        m.fit(views, y[:-1])
    with pytest.raises(UserError, match="non-empty list"):
        m.fit([], y)
    for name in ("lam", "delta"):
        for bad in (0.0, -1.0, float("nan")):
            with pytest.raises(UserError, match=f"{name} {bad}"):
                model.TMvML(**{name: bad})
    with pytest.raises(UserError, match="penalty 'nuclear'"):
        model.TMvML(penalty="nuclear")
    with pytest.raises(UserError, match="prox 'exact'"):
        model.TMvML(prox="exact")
    with pytest.raises(UserError, match="common_dim 'max'"):
        model.TMvML(common_dim="max")
    m.fit(views, y)
    with pytest.raises(UserError, match="2 views given; the model was fitted on 3"):
        m.decision_function(test[:2])
    with pytest.raises(UserError, match="2 views given"):
        m.predict(test[:2])


# ------------------------------------------------------------------------------------------------ metrics
def test_metrics_on_a_hand_built_example():
    y = np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 0, 1]])
    f = np.array([[0.9, 0.8, 0.2, 0.1], [0.7, 0.6, 0.4, 0.3], [0.2, 0.55, 0.1, 0.6]])
    # one-error: row 1 top label 0 relevant, row 2 top label 0 irrelevant, row 3 top label 3 relevant -> 1/3
    assert metrics.one_error(y, f) == pytest.approx(1 / 3)
    m = metrics.all_metrics(y, f)
    assert set(m) == set(metrics.NAMES)
    assert m["one_error"] == pytest.approx(1 / 3)
    # ranks (1 = top): row 1 relevant at ranks 1, 3; row 2 at 2; row 3 at 2, 1, 3 -> coverage (3 + 2 + 3) / 3 - 1
    assert m["coverage"] == pytest.approx(8 / 3 - 1)
    # wrongly ordered (relevant, irrelevant) pairs: row 1 (2 vs 1) 1 of 4; row 2 (1 vs 0) 1 of 3; row 3 0 of 3
    assert m["ranking_loss"] == pytest.approx((1 / 4 + 1 / 3 + 0) / 3)
    # precision at each relevant label's rank: row 1 (1/1 + 2/3) / 2; row 2 1/2; row 3 (2/2 + 1/1 + 3/3) / 3
    assert m["ap"] == pytest.approx(((1 + 2 / 3) / 2 + 1 / 2 + 1) / 3)
    # label sets at 0.5: [1 1 0 0], [1 1 0 0], [0 1 0 1] -> 2 + 1 + 1 wrong of 12; tp 4, fp 2, fn 2
    assert m["hamming"] == pytest.approx(4 / 12)
    assert m["micro_f1"] == pytest.approx(2 * 4 / (2 * 4 + 2 + 2))
    # a row without a relevant label does not count for the one-error
    y0, f0 = np.vstack([y, [0, 0, 0, 0]]), np.vstack([f, [0.1, 0.2, 0.3, 0.4]])
    assert metrics.one_error(y0, f0) == pytest.approx(1 / 3)
    assert metrics.one_error(np.zeros((2, 3)), f[:2, :3]) == 0.0


def test_metrics_match_scikit_learn_on_random_data():
    from sklearn.metrics import (
        coverage_error,
        f1_score,
        hamming_loss,
        label_ranking_average_precision_score,
        label_ranking_loss,
    )

    g = _rng(11)
    for _ in range(5):
        y = (g.uniform(size=(50, 6)) < 0.35).astype(int)
        y[y.sum(1) == 0, g.integers(0, 6)] = 1
        f = g.uniform(size=(50, 6)) * 0.6 + y * g.uniform(0, 0.5)
        m = metrics.all_metrics(y, f, threshold=0.45)
        pred = (f >= 0.45).astype(int)
        assert m["ap"] == pytest.approx(label_ranking_average_precision_score(y, f))
        assert m["ranking_loss"] == pytest.approx(label_ranking_loss(y, f))
        assert m["coverage"] == pytest.approx(coverage_error(y, f) - 1)
        assert m["hamming"] == pytest.approx(hamming_loss(y, pred))
        assert m["micro_f1"] == pytest.approx(f1_score(y, pred, average="micro"))
        top = f.argmax(1)
        assert m["one_error"] == pytest.approx(np.mean([y[i, top[i]] == 0 for i in range(50)]))
        assert all(isinstance(v, float) for v in m.values())
    assert metrics.HIGHER_IS_BETTER.keys() == set(metrics.NAMES)


# ------------------------------------------------------------------------------------------------ data
def test_read_yeast_on_the_packaged_file():
    views, y, labels = data.read_yeast()
    assert [v.shape for v in views] == [(2417, 79), (2417, 24)]
    assert y.shape == (2417, 14) and set(np.unique(y)) == {0, 1}
    assert labels == [f"Class{i}" for i in range(1, 15)]
    assert all(np.isfinite(v).all() for v in views)


def _yeast_fixture(path, atts=103, rows=5, seed=12):
    g = _rng(seed)
    header = [f"Att{i}" for i in range(1, atts + 1)] + [f"Class{i}" for i in range(1, 15)]
    x = np.round(g.normal(size=(rows, atts)), 4)
    y = (g.uniform(size=(rows, 14)) < 0.4).astype(int)
    with gzip.open(path, "wt") as fh:
        fh.write(",".join(header) + "\n")
        for xr, yr in zip(x, y, strict=True):
            fh.write(",".join([repr(float(v)) for v in xr] + [str(int(v)) for v in yr]) + "\n")
    return x, y


def test_read_yeast_on_gzip_fixtures(tmp_path):
    path = tmp_path / "tiny.csv.gz"
    x, y = _yeast_fixture(path)
    views, got, labels = data.read_yeast(path)
    assert [v.shape for v in views] == [(5, 79), (5, 24)]
    assert np.allclose(views[0], x[:, :79]) and np.allclose(views[1], x[:, 79:])
    assert np.array_equal(got, y) and len(labels) == 14
    bad = tmp_path / "short.csv.gz"
    _yeast_fixture(bad, atts=10)
    with pytest.raises(UserError, match="10 Att and 14 Class columns; Yeast has 103 and 14"):
        data.read_yeast(bad)


def test_parse_ranges():
    cols = ["a", "b", "c", "d", "e"]
    assert data.parse_ranges("1-3,5", cols, "view 1") == [0, 1, 2, 4]
    assert data.parse_ranges("b, d", cols, "view 1") == [1, 3]
    assert data.parse_ranges("4 - 5,a", cols, "view 1") == [3, 4, 0]
    with pytest.raises(UserError, match=r"view 2 '1-6': '1-6' runs past the last column \(5\)"):
        data.parse_ranges("1-6", cols, "view 2")
    with pytest.raises(UserError, match="a column is named twice"):
        data.parse_ranges("1-3,2", cols, "view 1")
    with pytest.raises(UserError, match="a column is named twice"):
        data.parse_ranges("1,a", cols, "view 1")
    for spec in ("1,,2", "", "1,"):
        with pytest.raises(UserError, match="an empty item"):
            data.parse_ranges(spec, cols, "labels")
    with pytest.raises(UserError, match="'3-1' is not a range"):
        data.parse_ranges("3-1", cols, "labels")
    with pytest.raises(UserError, match="column 9 is outside 1-5"):
        data.parse_ranges("9", cols, "labels")
    with pytest.raises(UserError, match="'zz' is neither"):
        data.parse_ranges("zz", cols, "labels")


def _table(tmp_path, rows):
    path = tmp_path / "t.csv"
    path.write_text("a,b,c,d,y1,y2\n" + "\n".join(rows) + "\n")
    return path


def test_read_table_reads_and_refuses_naming_the_problem(tmp_path):
    good = ["1,2,3,4,0,1", "5,6,7,8,1,1", "9,10,11,12,0,0"]
    path = _table(tmp_path, good)
    xs, y, names = data.read_table(path, ["1-2", "c,d"], "5-6")
    assert [x.tolist() for x in xs] == [[[1, 2], [5, 6], [9, 10]], [[3, 4], [7, 8], [11, 12]]]
    assert y.tolist() == [[0, 1], [1, 1], [0, 0]] and names == ["y1", "y2"]
    xs, y, names = data.read_table(path, ["1-2"], "")
    assert y is None and names == []
    with pytest.raises(UserError, match="views 1 and 2 overlap at column 'b'"):
        data.read_table(path, ["1-2", "2-3"], "5-6")
    with pytest.raises(UserError, match="labels and view 2 overlap at column 'y1'"):
        data.read_table(path, ["1-2", "3-5"], "5-6")
    bad_label = _table(tmp_path, ["1,2,3,4,0,1", "5,6,7,8,1,1", "9,10,11,12,2,0"])
    with pytest.raises(UserError, match="label column 'y1', row 3: .*2.* is not 0 or 1"):
        data.read_table(bad_label, ["1-2", "3-4"], "5-6")
    nan = _table(tmp_path, ["1,2,3,4,0,1", "5,6,,8,1,1", "9,10,11,12,0,0"])
    with pytest.raises(UserError, match="view 2, column 'c', row 2: missing or not a number"):
        data.read_table(nan, ["1-2", "3-4"], "5-6")
    text = _table(tmp_path, ["1,2,3,4,0,1", "5,x,7,8,1,1", "9,10,11,12,0,0"])
    with pytest.raises(UserError, match="view 1, column 'b', row 2"):
        data.read_table(text, ["1-2", "3-4"], "5-6")
    with pytest.raises(UserError, match="not a readable CSV"):
        data.read_table(tmp_path / "absent.csv", ["1"], "")


def test_synthetic_views_widths_and_label_prevalence():
    for seed in range(3):
        views, y = data.synthetic(_rng(seed), 1000, q=8, dims=(30, 40, 50))
        assert [v.shape for v in views] == [(1000, 30), (1000, 40), (1000, 50), (1000, 30)]
        assert y.shape == (1000, 8) and set(np.unique(y)) == {0, 1}
        prevalence = y.mean(0)
        assert ((prevalence > 0.1) & (prevalence < 0.6)).all(), prevalence
        assert abs(prevalence.mean() - 0.3) < 0.05  # the 70% point: about 30%
        # the noise view is unrelated to the labels, the others are not
        corr = [np.abs(np.corrcoef(np.c_[v, y].T)[: v.shape[1], v.shape[1] :]).max() for v in views]
        assert max(corr[:3]) > 0.3 and corr[3] < 0.2
    views, y = data.synthetic(_rng(0), 200, q=3, dims=(4, 5), noise_view=False, shared=True)
    assert [v.shape for v in views] == [(200, 4), (200, 5)] and y.shape == (200, 3)


def test_planted_noise_ratio():
    star, noisy = data.planted(_rng(13), (30, 6, 10), rank=1, noise=0.3)
    assert tensor.tubal_rank(star) == 1
    ratio = np.sqrt(((noisy - star) ** 2).mean()) / np.sqrt((star**2).mean())
    assert ratio == pytest.approx(0.3, abs=0.03)
