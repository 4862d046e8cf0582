"""neuroalgebraic's method (models/neuroalgebraic): the float64 and GF(p) Jacobian ranks equal the closed forms
(Alexander-Hirschowitz for shallow z^k networks, the determinantal variety for linear ones) on the spec's cases and
do not depend on the draw; the library's Jacobian is the Jacobian of the documented forward map (reproduced here
from the same generator), its kernel is spanned by the symmetries (one rescaling per hidden neuron; gl(N1) for a
linear network), and permuting hidden neurons keeps f and permutes the Jacobian's columns (also over GF(p)); the
GF(p) Jacobian equals the float one reduced mod p on small integer inputs; rank_mod_p and matmul_mod are exact
(no int64 overflow); the numerical rank rules; the architecture's counts and its refusals; the descent trials
(PSD cone: Eckart-Young optimum and singular endpoints where predicted; the signed control non-singular); and
the claims' counts on hand-built frames."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from tests.helpers import lazy

nm = lazy("models.neuroalgebraic.neuromanifold")
rank = lazy("models.neuroalgebraic.rank")
descent = lazy("models.neuroalgebraic.descent")
experiment = lazy("models.neuroalgebraic.experiment")

P = 2**31 - 1
SHALLOW = [(3, 3, 2, 6), (4, 2, 2, 7), (5, 3, 7, 34), (3, 4, 5, 14), (4, 3, 3, 12)]  # (n, k, r, dimension)
LINEAR = [((3, 1, 3), 5), ((4, 2, 5), 14), ((5, 3, 4), 18)]


def arch(widths, degree, fixed_output=False):
    return nm.Architecture(tuple(widths), degree, fixed_output)


# ------------------------------------------------------------------------------- the spec's dimensions
@pytest.mark.parametrize(("n", "k", "r", "dim"), SHALLOW, ids=[f"{n}-{r}-1 k={k}" for n, k, r, _ in SHALLOW])
def test_shallow_ranks_equal_alexander_hirschowitz(n, k, r, dim):
    a = arch((n, r, 1), k)
    assert nm.alexander_hirschowitz(n, k, r) == dim
    assert rank.exact_rank(a) == dim
    assert rank.float_rank(a) == dim
    # defective, one below the expected count: the exceptions (5, 3, 7) and (3, 4, 5), and quadrics (k = 2, r < n:
    # O(r) acts on top of the rescalings, r n - C(r, 2) = 7)
    assert a.expected - dim == (1 if (n, k, r) in {(5, 3, 7), (3, 4, 5), (4, 2, 2)} else 0)


@pytest.mark.parametrize(("widths", "dim"), LINEAR, ids=["3-1-3", "4-2-5", "5-3-4"])
def test_linear_ranks_equal_the_determinantal_variety(widths, dim):
    a = arch(widths, 1)
    assert nm.linear_dimension(widths) == dim == widths[1] * (widths[0] + widths[2] - widths[1])
    assert a.expected == dim and a.ambient == widths[0] * widths[2]
    assert rank.exact_rank(a) == dim
    assert rank.float_rank(a) == dim


@pytest.mark.parametrize(
    ("widths", "degree"), [((5, 7, 1), 3), ((3, 5, 1), 4), ((4, 2, 5), 1), ((2, 2, 2, 1), 2)]
)
def test_one_rank_over_three_draws(widths, degree):
    a = arch(widths, degree)
    exact = {rank.exact_rank(a, seed) for seed in (0, 1, 2)}
    floats = {rank.float_rank(a, seed) for seed in (0, 1, 2)}
    assert len(exact) == 1 and exact == floats, (exact, floats)
    # and a single GF(p) draw already reads it (a random point is generic with probability ~ 1 - #params / p)
    assert rank.exact_rank(a, 7, draws=1) == exact.pop()


def test_fixed_output_shallow_networks_have_the_same_dimension():
    # a (w . x)^k with a free is a sum of k-th powers; the fixed a_i = 1 only loses a sign (even k): the
    # semi-algebraic subset has the same dimension (the rescalings are gone instead)
    for n, k, r, dim in SHALLOW:
        a = arch((n, r, 1), k, fixed_output=True)
        assert a.params == n * r and a.symmetries == 0
        assert rank.exact_rank(a) == dim, (n, k, r)


# ------------------------------------------------------------------- the library's Jacobian, reproduced
def _draw(a, seed):
    """float_jacobian's parameters and points, from the same generator in the same order."""
    import torch

    g = torch.Generator().manual_seed(seed)
    free = a.layers[:-1] if a.fixed_output else a.layers
    theta = torch.cat([torch.randn(r * c, generator=g, dtype=torch.float64) / math.sqrt(c) for r, c in free])
    x = torch.randn(rank.points_needed(a), a.widths[0], generator=g, dtype=torch.float64)
    return theta, x / x.norm(dim=1, keepdim=True)


def _weights(a, theta):
    """theta -> [W_1, ..., W_L]: layer by layer, each W (rows, cols) row-major (the last ones if fixed)."""
    import torch

    Ws, at = [], 0
    for i, (r, c) in enumerate(a.layers):
        if a.fixed_output and i == len(a.layers) - 1:
            Ws.append(torch.ones(r, c, dtype=theta.dtype))
        else:
            Ws.append(theta[at : at + r * c].reshape(r, c))
            at += r * c
    assert at == len(theta) == a.params
    return Ws


def _forward(a, theta, x):
    """f_w(x) = W_L s(... s(W_1 x)), s(z) = z^k, written independently of the library: (points * d_L,)."""
    Ws = _weights(a, theta)
    z = x.T
    for W in Ws[:-1]:
        z = (W @ z) ** a.degree
    return (Ws[-1] @ z).T.reshape(-1)


CASES = [((3, 2, 1), 3, False), ((5, 7, 1), 3, False), ((2, 2, 2, 1), 2, False), ((4, 2, 5), 1, False)]
CASES += [((3, 3, 1), 2, True), ((2, 3, 2, 1), 2, True)]


@pytest.mark.parametrize(("widths", "degree", "fixed"), CASES, ids=[str(c) for c in CASES])
def test_library_jacobian_is_the_jacobian_of_the_documented_forward_map(widths, degree, fixed):
    import torch
    from torch.func import jacfwd

    a = arch(widths, degree, fixed)
    J, s = rank.float_jacobian(a, seed=3)
    theta, x = _draw(a, 3)
    mine = jacfwd(lambda th: _forward(a, th, x))(theta)
    assert J.shape == (a.ambient, a.params) == mine.shape
    np.testing.assert_allclose(
        J.numpy(), mine.numpy(), rtol=1e-10, atol=1e-12
    )  # (torch.testing: +1 s import)
    np.testing.assert_allclose(s, torch.linalg.svdvals(mine).numpy(), rtol=1e-9, atol=1e-12)
    assert rank.rank_from_singular_values(torch.linalg.svdvals(mine).numpy()) == rank.float_rank(a, 3)


def _kernel_check(J, vectors, expected_rank):
    """Each vector is annihilated by J, they are independent, and they span J's whole kernel."""
    import torch

    V = torch.stack(vectors, dim=1)
    scale = torch.linalg.matrix_norm(J, ord=2) * torch.linalg.vector_norm(V, dim=0)
    assert (torch.linalg.vector_norm(J @ V, dim=0) / scale).max() < 1e-12
    assert torch.linalg.matrix_rank(V) == len(vectors)
    assert J.shape[1] - expected_rank == len(vectors)  # so they span the kernel


@pytest.mark.parametrize(("n", "r", "k"), [(3, 2, 3), (4, 3, 3), (3, 4, 4), (5, 3, 3)])
def test_rescalings_span_the_kernel_of_a_shallow_jacobian(n, r, k):
    """(a_i t^-k, t w_i) keeps f: at t = 1 the tangent d w_i = w_i, d a_i = -k a_i is in the kernel."""
    import torch

    a = arch((n, r, 1), k)
    J, _ = rank.float_jacobian(a, seed=1)
    theta, _ = _draw(a, 1)
    W1, W2 = _weights(a, theta)
    vectors = []
    for i in range(r):
        dW1, dW2 = torch.zeros_like(W1), torch.zeros_like(W2)
        dW1[i] = W1[i]
        dW2[0, i] = -k * W2[0, i]
        vectors.append(torch.cat([dW1.reshape(-1), dW2.reshape(-1)]))
    _kernel_check(J, vectors, nm.alexander_hirschowitz(n, k, r))
    # not every direction: the tangent with the wrong exponent (d a_i = +k a_i) is not annihilated
    wrong = vectors[0].clone()
    wrong[n * r] *= -1
    assert torch.linalg.vector_norm(J @ wrong) > 1e-3 * torch.linalg.vector_norm(wrong)


def test_rescalings_span_the_kernel_of_a_deep_jacobian():
    """(2, 2, 2, 1), k = 2: row i of W_l times t, column i of W_(l+1) times t^-k, for every hidden neuron."""
    import torch

    a = arch((2, 2, 2, 1), 2)
    J, _ = rank.float_jacobian(a, seed=2)
    theta, _ = _draw(a, 2)
    Ws = _weights(a, theta)
    vectors = []
    for layer in range(len(Ws) - 1):
        for i in range(Ws[layer].shape[0]):
            d = [torch.zeros_like(W) for W in Ws]
            d[layer][i] = Ws[layer][i]
            d[layer + 1][:, i] = -a.degree * Ws[layer + 1][:, i]
            vectors.append(torch.cat([x.reshape(-1) for x in d]))
    assert a.ambient == 5 and a.params == 10 and a.symmetries == 4
    # the 10 parameters less 4 rescalings: 6 > 5 = ambient, so the kernel is larger than the rescalings here
    assert rank.exact_rank(a) == 5
    V = torch.stack(vectors, dim=1)
    assert (J @ V).abs().max() < 1e-12 * torch.linalg.matrix_norm(J, ord=2) * V.abs().max()
    assert torch.linalg.matrix_rank(V) == 4


def test_gl_directions_span_the_kernel_of_a_linear_jacobian():
    """(W1, W2) -> (G W1, W2 G^-1): the tangents (X W1, -W2 X), X in gl(N1), N1^2 of them, are the kernel."""
    import torch

    a = arch((4, 2, 5), 1)
    J, _ = rank.float_jacobian(a, seed=0)
    theta, _ = _draw(a, 0)
    W1, W2 = _weights(a, theta)
    vectors = []
    for p, q in itertools.product(range(2), repeat=2):
        X = torch.zeros(2, 2, dtype=torch.float64)
        X[p, q] = 1.0
        vectors.append(torch.cat([(X @ W1).reshape(-1), (-W2 @ X).reshape(-1)]))
    _kernel_check(J, vectors, 14)


@pytest.mark.parametrize(("widths", "degree"), [((3, 4, 1), 3), ((2, 3, 2, 1), 2), ((3, 3, 2), 2)])
def test_permuting_hidden_neurons_keeps_f(widths, degree):
    import torch

    a = arch(widths, degree)
    theta, x = _draw(a, 5)
    x = torch.cat([x, torch.randn(7, a.widths[0], dtype=torch.float64)])
    Ws = _weights(a, theta)
    g = torch.Generator().manual_seed(0)
    for layer in range(len(Ws) - 1):
        perm = torch.randperm(Ws[layer].shape[0], generator=g)
        assert not torch.equal(perm, torch.arange(len(perm)))
        Ws[layer], Ws[layer + 1] = Ws[layer][perm], Ws[layer + 1][:, perm]
    permuted = torch.cat([W.reshape(-1) for W in Ws])
    assert not torch.allclose(permuted, theta)
    np.testing.assert_allclose(
        _forward(a, permuted, x).numpy(), _forward(a, theta, x).numpy(), rtol=1e-12, atol=1e-12
    )


# ---------------------------------------------------------------------------------- GF(p), replayed draws
class _Recorder:
    """A numpy Generator stand-in for jacobian_mod_p: records what it draws (or replays given arrays)."""

    def __init__(self, seed=0, replay=None):
        self.rng = np.random.default_rng(seed)
        self.replay = None if replay is None else list(replay)
        self.drawn = []

    def integers(self, low, high, size, dtype):
        out = self.rng.integers(low, high, size, dtype=dtype) if self.replay is None else self.replay.pop(0)
        assert out.shape == tuple(size) and out.dtype == np.int64
        self.drawn.append(out)
        return out


def test_gf_p_jacobian_permutes_its_columns_with_the_hidden_neurons():
    n, r = 3, 4
    a = arch((n, r, 1), 3)
    rec = _Recorder(seed=11)
    J = rank.jacobian_mod_p(a, rec)
    z, W1, W2 = rec.drawn
    perm = np.array([2, 0, 3, 1])
    Jp = rank.jacobian_mod_p(a, _Recorder(replay=[z, W1[perm], W2[:, perm]]))
    cols = [c for i in perm for c in range(i * n, (i + 1) * n)] + [n * r + i for i in perm]
    np.testing.assert_array_equal(Jp, J[:, cols])
    assert not np.array_equal(Jp, J)


@pytest.mark.parametrize(("widths", "degree", "fixed"), CASES, ids=[str(c) for c in CASES])
def test_gf_p_jacobian_is_the_float_jacobian_mod_p_on_small_integers(widths, degree, fixed):
    """Parameters and points in [-2, 2] (negative ones as p - v): every entry is an integer float64 holds
    exactly, so the float Jacobian of the forward map reduced mod p must equal jacobian_mod_p's."""
    import torch
    from torch.func import jacfwd

    a = arch(widths, degree, fixed)
    rng = np.random.default_rng(4)
    free = a.layers[:-1] if fixed else a.layers
    ints = [rng.integers(-2, 3, (rank.points_needed(a), a.widths[0]))]
    ints += [rng.integers(-2, 3, shape) for shape in free]
    J = rank.jacobian_mod_p(a, _Recorder(replay=[(v % P).astype(np.int64) for v in ints]))
    theta = torch.cat([torch.tensor(W, dtype=torch.float64).reshape(-1) for W in ints[1:]])
    x = torch.tensor(ints[0], dtype=torch.float64)
    Jf = jacfwd(lambda th: _forward(a, th, x))(theta).numpy()
    assert np.abs(Jf).max() < 2**52 and np.array_equal(Jf, np.round(Jf))
    expect = np.round(Jf).astype(np.int64) % P
    assert J.shape == expect.shape == (a.ambient, a.params)
    np.testing.assert_array_equal(J, expect)
    assert (J >= 0).all() and (J < P).all()


@pytest.mark.parametrize(("widths", "dim"), [*LINEAR, ((2, 5, 3), 6), ((6, 2, 2, 6), 20)])
def test_gf_p_jacobian_of_a_linear_network_has_the_closed_form_rank(widths, dim):
    a = arch(widths, 1)
    J = rank.jacobian_mod_p(a, np.random.default_rng(0))
    assert J.shape == (a.ambient, a.params) and J.dtype == np.int64
    assert rank.rank_mod_p(J) == dim == nm.linear_dimension(widths)


# ------------------------------------------------------------------------------------ exact arithmetic
def test_rank_mod_p_on_hand_matrices():
    rng = np.random.default_rng(0)
    A, B = rng.integers(-50, 50, (5, 3)), rng.integers(-50, 50, (3, 7))
    assert rank.rank_mod_p(A @ B) == 3 and rank.rank_mod_p((A @ B).T) == 3
    assert rank.rank_mod_p(np.eye(6, dtype=np.int64)) == 6
    assert rank.rank_mod_p(np.zeros((4, 5), np.int64)) == 0
    M = rng.integers(0, P, (4, 6), dtype=np.int64)
    M[3] = (2 * M[0] + 3 * M[1]) % P  # no overflow: entries below 2^31
    before = M.copy()
    assert rank.rank_mod_p(M) == 3
    np.testing.assert_array_equal(M, before)  # the input is left alone
    M[3] = (M[3] + 1) % P
    assert rank.rank_mod_p(M) == 4
    # entries are reduced mod p first: p is zero, -1 is p - 1, and a rank over Q can drop over GF(p)
    assert rank.rank_mod_p(np.array([[P, 0], [0, 2 * P]])) == 0
    assert rank.rank_mod_p(np.array([[-1, 0], [0, 1]])) == 2
    assert rank.rank_mod_p(np.array([[1, 1], [1, 1 + P]])) == 1
    assert np.linalg.matrix_rank(np.array([[1.0, 1.0], [1.0, 1.0 + P]])) == 2
    # a pivot only below the first row, and a zero column in between
    assert rank.rank_mod_p(np.array([[0, 0, 1], [0, 0, 2], [3, 0, 0]])) == 2


def test_matmul_mod_near_p_equals_big_integer_arithmetic():
    rng = np.random.default_rng(1)
    for shape in [(3, 8, 4), (5, 16, 2), (1, 1, 1)]:
        m, k, n = shape
        a = rng.integers(P - 1000, P, (m, k), dtype=np.int64)
        b = rng.integers(P - 1000, P, (k, n), dtype=np.int64)
        got = rank.matmul_mod(a, b)
        ai, bi = a.tolist(), b.tolist()
        want = [[sum(ai[i][t] * bi[t][j] for t in range(k)) % P for j in range(n)] for i in range(m)]
        assert got.dtype == np.int64 and got.tolist() == want
        if k > 1:  # the test has teeth: plain int64 sums of such products overflow
            assert ((a @ b) % P).tolist() != want


# ------------------------------------------------------------------------------------- numerical rank
def test_rank_from_singular_values_rules():
    r = rank.rank_from_singular_values
    assert r(np.array([10.0, 9.0, 8.0, 1e-12, 1e-13])) == 3  # the largest log-gap
    assert r(np.array([1e-13, 8.0, 1e-12, 10.0, 9.0])) == 3  # order does not matter
    assert r(np.array([10.0, 9.0, 8.0, 1e-5, 1e-6])) == 5  # smallest relative 1e-7 > 1e-10: full
    assert r(np.array([1.0, 1e-9])) == 2  # smallest relative 1e-9 > 1e-10: full
    assert r(np.array([1.0, 0.5, 1e-9])) == 3
    assert r(np.array([1.0, 1e-11])) == 1  # below: read at the gap
    assert r(np.array([1.0, 0.5, 0.0])) == 2  # an exact zero
    assert r(np.array([5.0])) == 1
    assert r(np.array([0.0, 0.0])) == 0 and r(np.array([])) == 0
    s = np.array([1.0, 1e-3, 1e-8, 1e-20])
    assert r(s) == 3  # gaps 3, 5, 12 decades
    assert r(s, threshold=1e-7) == 2  # the spec's fixed threshold reads another rank
    assert r(np.array([1.0, 1e-6, 1e-9]), threshold=1e-7) == 2


# ---------------------------------------------------------------------------------------- architecture
@pytest.mark.parametrize(
    ("widths", "degree", "message"),
    [
        ((5,), 2, "widths [5]"),
        ((), 2, "widths []"),
        ((3, 0, 1), 2, "width 0"),
        ((3, -2, 1), 2, "width -2"),
        ((3, 2, 1), 0, "degree 0"),
        ((3, 2.5, 1), 2, "width 2.5"),
        ((3, True, 1), 2, "width True"),
        ((3, "2", 1), 2, "width '2'"),
        ((3, 2, 1), 2.5, "degree 2.5"),
        ((3, 2, 1), True, "degree True"),
    ],
)
def test_bad_architectures_raise_naming_the_value(widths, degree, message):
    with pytest.raises(ValueError) as info:
        nm.neuromanifold(widths, degree)
    assert str(info.value).startswith(message), str(info.value)


def test_counts_on_hand_examples():
    a = nm.neuromanifold([3, 2, 1], 3)
    assert (a.params, a.ambient, a.poly_degree, a.symmetries, a.expected) == (8, 10, 3, 2, 6)
    assert a.layers == [(2, 3), (1, 2)] and a.hidden == (2,) and a.is_shallow and a.label == "3,2,1 k=3"
    d = nm.neuromanifold([2, 2, 2, 1], 2)
    assert (d.params, d.poly_degree, d.ambient, d.symmetries, d.expected) == (10, 4, 5, 4, 5)
    assert not d.is_shallow
    two = nm.neuromanifold([3, 2, 2], 2)  # two outputs: two quadrics
    assert two.ambient == 2 * math.comb(4, 2) == 12 and not two.is_shallow
    lin = nm.neuromanifold([4, 2, 5], 1)
    assert (lin.params, lin.ambient, lin.poly_degree, lin.symmetries, lin.expected) == (18, 20, 1, 4, 14)
    assert nm.linear_dimension((4, 6, 5)) == 20 and nm.linear_dimension((4, 3, 1, 5)) == 8


def test_fixed_output_changes_params_and_symmetries():
    a, f = nm.neuromanifold([3, 2, 1], 3), nm.neuromanifold([3, 2, 1], 3, fixed_output=True)
    assert (a.params, a.symmetries) == (8, 2) and (f.params, f.symmetries) == (6, 0)
    assert f.ambient == a.ambient == 10 and f.label == "3,2,1 k=3 fixed"
    d, df = nm.neuromanifold([2, 3, 2, 1], 2), nm.neuromanifold([2, 3, 2, 1], 2, fixed_output=True)
    assert (d.params, d.symmetries) == (14, 5)  # 6 + 6 + 2; rescalings at 3 + 2 hidden neurons
    assert (df.params, df.symmetries) == (12, 3)  # the last layer fixed: the first hidden layer's only
    assert (df.expected, d.expected) == (min(9, 5), min(9, 5))


def test_dimension_is_consistent_with_the_counts():
    d = nm.neuromanifold([5, 7, 1], 3).dimension(exact=True)
    assert isinstance(d, nm.Dimension)
    assert (d.params, d.symmetries, d.expected, d.computed, d.exact, d.ambient) == (42, 7, 35, 34, 34, 35)
    assert (d.defect, d.fiber, d.fills) == (1, 8, False)
    full = nm.neuromanifold([3, 4, 1], 2).dimension(exact=True)  # quadrics of rank <= 4 in 3 variables: all
    assert (full.exact, full.computed, full.ambient, full.expected) == (6, 6, 6, 6)
    assert (full.defect, full.fiber, full.fills) == (0, 16 - 6, True)
    lin = nm.neuromanifold([4, 2, 5], 1).dimension()
    assert lin.exact is None and lin.computed == 14 and lin.defect == 0 and lin.fiber == 4 and not lin.fills
    with pytest.raises(ValueError, match="ambient dimension 292825 is above the cap 5000"):
        nm.neuromanifold([50, 3, 1], 4).dimension()


# ---------------------------------------------------------------------------------------------- descent
def test_psd_descent_reaches_the_eckart_young_optimum_and_singular_where_predicted():
    rng = np.random.default_rng(0)
    trials, size, r = 50, 6, 4
    T = descent.targets(trials, size, rng)
    assert T.shape == (trials, size, size) and np.array_equal(T, T.transpose(0, 2, 1))
    W0 = 1e-3 * rng.standard_normal((trials, size, r))
    W, loss = descent.psd_descent(T, W0, 4000, 0.01)
    assert W.shape == W0.shape and loss.shape == (trials,)
    assert np.abs(W0).max() < 5e-3  # W0 is not touched
    excess = loss - descent.psd_optimum_loss(T, r)
    assert excess.max() <= 1e-3 and excess.min() >= -1e-9  # the optimum is a lower bound, and it is reached
    predicted, singular = descent.predicted_singular(T, r), descent.singular(W, r)
    assert 0 < predicted.sum() < trials  # both kinds of target occur
    assert (singular == predicted).mean() >= 0.96
    # the signed control W1 W0 reaches rank r: its optimum is the truncated SVD, singular only by accident
    A0, B0 = 1e-3 * rng.standard_normal((trials, size, r)), 1e-3 * rng.standard_normal((trials, r, size))
    A, B, control = descent.signed_descent(T, A0, B0, 4000, 0.01)
    assert A.shape == A0.shape and B.shape == B0.shape and control.shape == (trials,)
    assert descent.singular(A @ B, r).mean() <= 0.04
    s = np.linalg.eigvalsh(T)
    svd_optimum = np.sort(np.abs(s), axis=1)[:, : size - r] ** 2
    assert (control - svd_optimum.sum(1)).max() < 1e-2


def test_predicted_singular_counts_positive_eigenvalues():
    def conj(ev, seed=0):
        Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(ev), len(ev))))
        return Q @ np.diag(ev) @ Q.T

    T = np.stack([conj([1, 2, 3, -1, -2, -3]), conj([1, 2, 3, 4, -1, -2]), np.diag([1.0, 2, 3, 0, -1, -2])])
    assert descent.predicted_singular(T, 4).tolist() == [
        True,
        False,
        True,
    ]  # a zero eigenvalue is not positive
    assert descent.predicted_singular(T, 3).tolist() == [False, False, False]
    M = np.stack([np.diag([1.0, 1.0, 1e-4]), np.diag([1.0, 1.0, 1e-2])])
    assert descent.singular(M, 3).tolist() == [True, False] and descent.singular(M, 2).tolist() == [False] * 2


def _brute_psd_optimum(T, r):
    """min over subsets S of at most r eigenpairs of |sum_S max(l, 0) v v' - T|^2 (the candidates on the cone)."""
    ev, V = np.linalg.eigh(T)
    best = math.inf
    for k in range(r + 1):
        for S in itertools.combinations(range(len(ev)), k):
            M = sum((max(ev[i], 0.0) * np.outer(V[:, i], V[:, i]) for i in S), np.zeros_like(T))
            best = min(best, ((M - T) ** 2).sum())
    return best


def test_psd_optimum_loss_on_hand_matrices():
    Q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((5, 5)))
    T = Q @ np.diag([3.0, 2.0, -1.0, 0.5, -2.0]) @ Q.T
    got = descent.psd_optimum_loss(T[None], 2)
    # keep 3 and 2, drop 0.5 (beyond the 2 largest) and every negative one
    assert got == pytest.approx([0.25 + 1.0 + 4.0], abs=1e-12)
    assert got[0] == pytest.approx(_brute_psd_optimum(T, 2), abs=1e-10)
    assert descent.psd_optimum_loss(T[None], 4)[0] == pytest.approx(5.0, abs=1e-12)  # only negatives drop
    assert descent.psd_optimum_loss(-np.eye(3)[None], 2)[0] == pytest.approx(3.0)  # the optimum is 0
    batch = descent.targets(4, 4, np.random.default_rng(1))
    want = [_brute_psd_optimum(t, 3) for t in batch]
    np.testing.assert_allclose(descent.psd_optimum_loss(batch, 3), want, atol=1e-10)


# ----------------------------------------------------------------------------------------------- claims
def test_claims_counts_on_hand_built_frames():
    table = pd.DataFrame(
        [
            ("shallow", "3,2,1", 3, 6, 6, 6),
            ("shallow", "5,7,1", 3, 34, 34, 35),  # float reads one too many
            ("shallow", "4,3,1", 2, 9, 8, 9),  # exact off the closed form (and float off exact)
            ("linear", "3,1,3", 1, 5, 5, 5),
            ("linear", "4,2,5", 1, 14, 13, 13),
            ("deep", "2,2,2,1", 2, -1, 5, 5),  # no closed form: never a closed-form mismatch
        ],
        columns=["family", "widths", "degree", "closed_form", "exact", "float"],
    )
    frame = pd.DataFrame(
        {
            "singular": [True, True, False, False],
            "predicted": [True, False, False, False],
            "control_singular": [False, False, False, True],
            "excess_loss": [1e-5, 2e-4, 0.0, 3e-6],
        }
    )
    c = experiment.claims(table, frame)
    assert (c["shallow_cases"], c["shallow_mismatches"], c["shallow_first"]) == (3, 1, "4,3,1 k=2")
    assert (c["linear_cases"], c["linear_mismatches"], c["linear_first"]) == (2, 1, "4,2,5 k=1")
    assert (c["cases"], c["float_mismatches"]) == (6, 2)
    assert c["float_first"] == "5,7,1 k=3, 4,3,1 k=2"
    assert c["trials"] == 4 and c["agreement"] == 0.75 and c["singular_fraction"] == 0.5
    assert c["predicted_fraction"] == 0.25 and c["control_agreement"] == 0.5
    assert c["control_singular_fraction"] == 0.25 and c["max_excess_loss"] == 2e-4
    clean = experiment.claims(table.assign(exact=table.closed_form, float=table.closed_form), frame)
    assert clean["shallow_mismatches"] == clean["linear_mismatches"] == 0 and clean["shallow_first"] == ""
    assert clean["float_mismatches"] == 0


def test_case_row_and_closed_forms():
    row = experiment.case_row(arch((5, 7, 1), 3), seed=0)
    assert row["family"] == "shallow" and row["closed_form"] == row["exact"] == row["float"] == 34
    assert row["defect"] == 1 and row["fiber"] == 8 and row["params_minus_hidden"] == 35
    assert row["float_spec"] <= 35 and 0 < row["smallest_relative_sv"] < 1e-10
    assert experiment.closed_form(arch((2, 2, 2, 1), 2)) is None
    assert experiment.family(arch((2, 2, 2, 1), 2)) == "deep"
    assert experiment.family(arch((3, 3, 3), 1)) == "linear"
    cases = experiment.shallow_cases([3], [3], extra=1)
    assert [a.widths for a in cases] == [(3, r, 1) for r in range(1, 10 // 3 + 2)]
    assert len(experiment.linear_cases([1, 2])) == 8
