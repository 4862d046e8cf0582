"""sr_pareto's compiled kernels (models/sr_pareto/kernel.py) against numpy: the vector pow against the C library,
the tree walk against the numpy group evaluation bit for bit, the pseudo-inverse against numpy's, the
Levenberg-Marquardt screen against its numpy reference, and the fast front against the protocol's."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from icml25.tables import numeric_table
from models.sr_pareto import batch
from models.sr_pareto import kernel as K
from models.sr_pareto.data import planted
from models.sr_pareto.fit import degree, paper_start
from models.sr_pareto.front import (
    best_by_length,
    evaluate_all,
    expressions,
    refine_front,
    results_table,
    standardize,
)
from models.sr_pareto.grammar import C, show


def kernel_pow(a: np.ndarray, z: np.ndarray) -> np.ndarray:
    """|a|^z elementwise by the kernel's own Pow (one node of a 3-row buffer, rows padded to a multiple of 8)."""
    a, z = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(z, dtype=float))
    n = a.size
    V = np.ones((3, (n + 7) // 8 * 8))
    V[1, :n], V[2, :n] = a.ravel(), z.ravel()
    K._node(V, 0, K.POW, 1, 2)
    return V[0, :n].reshape(a.shape)


def groups_of(exprs, X):
    """The fast path's groups of ``exprs`` (batch.fit_batched's grouping): [(Group, expression indices)]."""
    memo: dict = {}
    parts = [batch.decompose(e, memo) for e in exprs]
    by: dict[tuple, list[int]] = defaultdict(list)
    for i, p in enumerate(parts):
        by[(p[0], p[2])].append(i)
    out = []
    for (shape, kinds), idx in by.items():
        ops = np.array([parts[i][1] for i in idx]).reshape(len(idx), -1)
        feats = np.array([parts[i][3] for i in idx]).reshape(len(idx), -1)
        out.append((batch.Group(shape, kinds, ops, feats, X), idx))
    return out


def test_vector_pow_is_the_c_library_pow_to_one_ulp_and_its_special_values_exactly():
    rng = np.random.default_rng(1)
    n = 20_003  # not a multiple of 8: the padded tail goes through the same function
    a = rng.normal(size=n) * np.exp(rng.uniform(-20, 20, n))
    z = rng.normal(size=n) * np.exp(rng.uniform(-5, 3, n))
    got = kernel_pow(a, z)

    def c_pow(x, w):  # math.pow is the C library's pow; it raises where C returns inf / NaN
        try:
            return math.pow(abs(x), w)
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan

    want = np.array([c_pow(x, w) for x, w in zip(a, z, strict=True)])
    fin = np.isfinite(want) & (want != 0)
    assert fin.mean() > 0.9
    ulps = np.abs(got[fin] - want[fin]) / np.spacing(np.abs(want[fin]))
    assert ulps.max() <= 1.0
    np.testing.assert_array_equal(got[~fin], want[~fin])
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, 2.0, 1e-310, 1e308])
    A, Z = np.meshgrid(special, np.concatenate([special, [-1.0, -2.0, 3.0]]))
    with np.errstate(all="ignore"):
        want = np.power(np.abs(A), Z)  # IEEE / C99 special cases, as the C library's pow
    got = kernel_pow(A, Z)
    exact = ~np.isfinite(want) | (want == 0) | (want == 1) | ~np.isfinite(A) | ~np.isfinite(Z) | (A == 0)
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_allclose(got[~exact], want[~exact], rtol=4e-16)


@pytest.fixture(scope="module")
def mixed_groups():
    """Every tree shape up to length 7 over two features (every seventh expression: 3,585 of 25,095; one to three
    constants, every operator), on 37 rows (not a multiple of 8) with numpy's Pow replaced by the kernel's:
    then the numpy group evaluation and the kernel's must agree to the bit."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 37))
    exprs = expressions(2, 7)[::7]
    return exprs, X, groups_of(exprs, X)


def test_compiled_evaluation_is_numpys_bit_for_bit(mixed_groups, monkeypatch):
    exprs, X, groups = mixed_groups
    plain_op = batch._op
    monkeypatch.setattr(
        batch, "_op", lambda op, x, z: kernel_pow(x, z) if op == K.POW else plain_op(op, x, z)
    )
    rng = np.random.default_rng(1)
    seen_k, live_pow = set(), 0
    for g, idx in groups:
        if g.k == 0:
            continue
        seen_k.add(g.k)
        rows = np.arange(len(idx))
        c = rng.normal(size=(len(idx), g.k)) * 2
        for members in (rows, rows[::-3]):  # all members, and a reordered subset
            want = np.asarray(g.evaluate(c[members], members))
            got = g.evaluate_compiled(c[members], members)
            np.testing.assert_array_equal(got, want, err_msg=show(exprs[idx[0]]))
        _, kind, slot, *_ = g.kernel_arrays()
        live_pow += int((g.ops[:, slot[kind == K.LIVE]] == K.POW).any(axis=1).sum())
    assert seen_k == {1, 2, 3} and live_pow > 500


def test_scores_are_numpys_even_where_the_kernel_pow_differs(mixed_groups):
    """score_predictions: the kernel's values where no Pow sits above a constant, numpy's elsewhere; either way
    exactly numpy's group evaluation (the reported score's bits)."""
    _, _, groups = mixed_groups
    rng = np.random.default_rng(2)
    for g, idx in groups:
        c = rng.normal(size=(len(idx), g.k))
        np.testing.assert_array_equal(g.score_predictions(c), np.asarray(g.evaluate(c, np.arange(len(idx)))))


def test_pinv_solve_matches_numpy_pinv():
    rng = np.random.default_rng(3)
    cases = []
    for k in (1, 2, 3, 4):
        for _ in range(30):
            M = rng.normal(size=(k, k)) * np.exp(rng.uniform(-3, 3))
            cases.append(M @ M.T + np.diag(rng.uniform(0, 1, k)))  # positive definite
            B = rng.normal(size=(k, max(k - 1, 1)))
            cases.append(B @ B.T)  # rank-deficient (k >= 2)
        cases.append(np.zeros((k, k)))
        cases.append(np.diag([1e12] + [1e-9] * (k - 1)))  # badly scaled
    for A in cases:
        k = A.shape[0]
        g = rng.normal(size=k)
        x = np.empty(k)
        K.solve_pinv_sym(A, g, x, np.empty((k, k)), np.empty((k, k)))
        want = np.linalg.pinv(A) @ g
        np.testing.assert_allclose(x, want, rtol=1e-8, atol=1e-10 * np.linalg.norm(want) + 1e-300)
    x = np.ones(2)
    K.solve_pinv_sym(
        np.array([[1.0, np.nan], [np.nan, 1.0]]), np.ones(2), x, np.empty((2, 2)), np.empty((2, 2))
    )
    assert (x == 0).all()  # a non-finite system: no step


def test_compiled_lm_follows_the_numpy_reference():
    """The kernel's LM (member by member) and the numpy reference (batched) on well-posed nonlinear fits with one
    to three constants, Pow above a constant included: the same iterations and the same constants to rounding;
    a member whose start is not finite stays there with 0 iterations in both."""
    rng = np.random.default_rng(4)
    X = rng.uniform(0.5, 2.0, (2, 150))
    y = 1.3 * X[1] ** 0.6 + 0.2 + 0.3 * X[0] / (X[1] + 1.5) + rng.normal(0, 0.05, 150)
    x0, x1 = ("x", 0), ("x", 1)
    exprs = [
        ("Pow", x1, C),
        ("Div", x0, ("Add", x1, C)),
        ("Mul", C, ("Pow", x1, C)),
        ("Mul", ("Pow", x1, C), ("Add", x0, C)),
        ("Sub", ("Pow", x1, C), ("Div", C, x0)),
        ("Add", ("Mul", C, ("Pow", x1, C)), C),  # a slow valley: stops at the 30-iteration cap
        ("Add", ("Div", x0, ("Add", x1, C)), ("Pow", x1, C)),
        ("Div", ("Sub", x0, x0), ("Sub", x1, C)),  # 0 / (x1 - c): finite at the start, a flat SSE
        ("Pow", ("Sub", x1, x1), C),  # |0|^c, c < 0 at the start: inf, not finite
    ]
    assert all(degree(e) > 1 for e in exprs)
    for g, idx in groups_of(exprs, X):
        rows = np.arange(len(idx))
        c0 = np.tile(paper_start(g.k, 11284), (len(idx), 1))
        got_c, got_n = batch.levenberg_marquardt(g, rows, c0, y)
        want_c, want_n = batch.levenberg_marquardt_reference(g, rows, c0, y)
        for m, i in enumerate(idx):
            assert got_n[m] == want_n[m], show(exprs[i])
            np.testing.assert_allclose(got_c[m], want_c[m], rtol=1e-7, atol=1e-9, err_msg=show(exprs[i]))
    g, idx = groups_of(exprs[-1:], X)[0]
    c, nit = batch.levenberg_marquardt(g, np.array([0]), np.array([[-0.5]]), y)
    assert nit[0] == 0 and c[0, 0] == -0.5


def test_fast_front_is_the_protocol_front_on_a_small_space():
    """Every expression of the Karva head-length-3 space over one feature and the operators Pow, Mul, Add (170,
    with constants under and over Pow) on a planted set seen through its first feature only, fitted by the
    protocol (BFGS from the paper's start, one at a time) and by the fast path (compiled screen, then BFGS
    refinement of each length's best 25): at every length the same front expression, R^2 never lower, and equal
    to 1e-9."""
    X, y, _ = numeric_table(planted("planted_len5", 80, 1), "target", min_rows=5, reject_constant=True)
    Xt, yz, _ = standardize(X[:, :1], y)
    exprs = expressions(1, 7, "karva3", ops=("Pow", "Mul", "Add"))
    assert len(exprs) == 170
    protocol = best_by_length(results_table(exprs, evaluate_all(exprs, Xt, yz, "BFGS")))
    fast, _ = refine_front(exprs, evaluate_all(exprs, Xt, yz, "fast"), Xt, yz)
    fast = best_by_length(results_table(exprs, fast))
    assert list(fast.length) == list(protocol.length) == [1, 3, 5, 7]
    assert list(fast.expression) == list(protocol.expression)
    assert (fast.r2.to_numpy() >= protocol.r2.to_numpy() - 1e-12).all()
    np.testing.assert_allclose(fast.r2.to_numpy(), protocol.r2.to_numpy(), rtol=0, atol=1e-9)
