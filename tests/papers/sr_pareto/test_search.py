"""sr_pareto's search: enumeration against an independent brute force, the Karva space, fitting, fronts."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from icml25.tables import numeric_table
from models.sr_pareto.batch import fit_batched
from models.sr_pareto.data import planted
from models.sr_pareto.fit import compile_expr, degree, fit_protocol
from models.sr_pareto.front import apo_front, evaluate_all, expressions, standardize
from models.sr_pareto.grammar import (
    C,
    count_official_style,
    enumerate_full,
    enumerate_karva,
    karva_structures,
    length,
    n_constants,
    show,
)

OPS = ("Pow", "Mul", "Add", "Sub", "Div")


def shapes(n_ops: int):
    """Every full binary tree with n_ops internal nodes (Catalan(n_ops) of them), leaves as None."""
    if n_ops == 0:
        yield None
        return
    for left in range(n_ops):
        for a in shapes(left):
            for b in shapes(n_ops - 1 - left):
                yield (a, b)


def brute_force(n_features: int, max_ops: int) -> tuple[dict[int, set[str]], int]:
    """All trees (shape x operators x leaves), canonicalised by string rules written independently here:
    'c' op 'c' -> 'c'; Add/Mul children sorted as strings. Returns {length: strings} and the raw tree count."""
    leaves = [f"x{i}" for i in range(n_features)] + ["c"]

    def fill(shape, ops, lv):
        if shape is None:
            return next(lv), 1
        op = next(ops)
        (a, na), (b, nb) = fill(shape[0], ops, lv), fill(shape[1], ops, lv)
        if a == "c" and b == "c":
            return "c", 1
        if op in ("Add", "Mul") and b < a:
            a, b = b, a
        return f"{op}({a},{b})", 1 + na + nb

    out: dict[int, set[str]] = {}
    raw = 0
    for n in range(max_ops + 1):
        for shape in shapes(n):
            for ops in itertools.product(OPS, repeat=n):
                for lv in itertools.product(leaves, repeat=n + 1):
                    raw += 1
                    s, size = fill(shape, iter(ops), iter(lv))
                    out.setdefault(size, set()).add(s)
    return out, raw


@pytest.mark.parametrize(("d", "max_ops"), [(1, 3), (2, 2)])
def test_enumeration_equals_brute_force(d, max_ops):
    want, raw = brute_force(d, max_ops)
    catalan = [1, 1, 2, 5]
    assert raw == sum(catalan[n] * 5**n * (d + 1) ** (n + 1) for n in range(max_ops + 1))
    got = enumerate_full(d, 2 * max_ops + 1)
    assert {n: {show(e) for e in es} for n, es in got.items()} == want
    assert all(len(es) == len(set(es)) for es in got.values())  # each expression once


def test_karva_head_3_space():
    assert len(karva_structures(3)) == 151
    # the spec's counts of the official generator (structures de-duplicated, leaf assignments not)
    assert [count_official_style(d, 3) for d in (1, 2, 3)] == [1232, 7803, 26254]
    full = {show(e) for es in enumerate_full(2, 7).values() for e in es}
    karva = enumerate_karva(2, 3)
    assert {show(e) for es in karva.values() for e in es} <= full

    # of the five 3-operator tree shapes, Karva L = 3 reaches only the balanced one
    def shape(e):
        return "l" if len(e) < 3 else (shape(e[1]), shape(e[2]))

    three = {shape(e) for e in karva[7]}
    assert three == {(("l", "l"), ("l", "l"))}
    assert any(show(e) == "Add(Mul(Mul(x0,x1),c),c)" for e in enumerate_full(2, 7)[7])
    assert not any(show(e) == "Add(Mul(Mul(x0,x1),c),c)" for e in karva[7])


def test_pow_protects_its_base_and_div_by_zero_is_invalid():
    X = np.array([[-2.0, -1.0, 0.5, 3.0]])
    f = compile_expr(("Pow", ("x", 0), C))
    np.testing.assert_allclose(f(np.array([0.5]), X), np.sqrt([2.0, 1.0, 0.5, 3.0]))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    bad = ("Div", C, ("Sub", ("x", 0), ("x", 0)))  # c / (x0 - x0)
    assert math.isnan(fit_protocol(bad, X, y).r2)
    assert math.isnan(fit_batched([bad], X, y)[0].r2)


@pytest.fixture(scope="module")
def len3():
    X, y, _ = numeric_table(planted("planted_len3", 60, 0), "target", min_rows=5, reject_constant=True)
    return X, y


@pytest.fixture(scope="module")
def front5(len3):
    return apo_front(*len3, max_length=5)


def test_planted_expression_is_found_at_its_length(front5):
    rows = front5
    by_len = {r["EquationLength"]: r for r in rows}
    assert by_len[3]["EquationStructure"] == "Sub(xdata[0],xdata[1])"
    assert by_len[3]["R2"] >= 1 - 1e-8
    assert by_len[1]["R2"] < 0.99
    assert [r["EquationLength"] for r in rows] == [1, 3, 5]


def test_fronts_are_equal_across_runs(len3, front5):
    assert apo_front(*len3, max_length=5) == front5
    assert apo_front(*len3, max_length=3, optimizer="BFGS") == apo_front(
        *len3, max_length=3, optimizer="BFGS"
    )


@pytest.mark.slow  # the BFGS protocol over 853 expressions, twice (one of them in two joblib workers): ~10 s
def test_every_expression_is_evaluated_whatever_the_chunking(len3):
    Xt, yz, _ = standardize(*len3)
    exprs = expressions(2, 5)
    assert len(exprs) == 853  # 3 + 34 + 816
    one = evaluate_all(exprs, Xt, yz, "BFGS", chunk=len(exprs))
    parts = evaluate_all(exprs, Xt, yz, "BFGS", chunk=97, n_jobs=2)  # 853 = 8 x 97 + 77: a remainder chunk
    assert len(parts) == len(exprs)
    assert all((math.isnan(a.r2) and math.isnan(b.r2)) or a == b for a, b in zip(one, parts, strict=True))


def test_fast_path_is_exact_where_linear_and_never_below_bfgs_there(len3):
    Xt, yz, _ = standardize(*len3)
    linear = [e for e in expressions(2, 5) if n_constants(e) and degree(e) <= 1]
    fast = fit_batched(linear, Xt, yz)
    for e, f in zip(linear[:60], fast[:60], strict=True):
        bfgs = fit_protocol(e, Xt, yz)
        assert f.r2 >= bfgs.r2 - 1e-9, show(e)
        assert f.nit == 0 and length(e) <= 5


def test_planted_sets_declare_whether_karva_reaches_them():
    """The evaluate stage takes each planted set's reachability by Karva L = 3 from its declaration (so that a
    broken Karva enumeration cannot move it): the declaration must match the enumeration."""
    from models.sr_pareto.data import PLANTED, planted_info
    from models.sr_pareto.evaluation import karva_space

    space = karva_space(2, 3)
    for name, (_, plant) in PLANTED.items():
        assert planted_info(name)["karva3"] == (plant.expression in space), name
    assert {n for n, (_, p) in PLANTED.items() if not p.karva3} == {"planted_len7_chain", "planted_len7_pow"}
    X = planted("planted_len7_chain", 50, 3)[["x0", "x1"]].to_numpy()
    assert np.corrcoef(X.T)[0, 1] == pytest.approx(0.8, abs=1e-12)


def test_optimizer_candidates_are_the_best_and_a_seeded_sample():
    from models.sr_pareto.fit import INVALID, Fit
    from models.sr_pareto.search import optimizer_candidates

    exprs = expressions(2, 5)
    rng = np.random.default_rng(0)
    fits = [Fit(float(r), 0.0, (), 0) if r > 0.1 else INVALID for r in rng.random(len(exprs))]
    got = optimizer_candidates(exprs, fits, 5, top=10, sample=20, seed=1)
    assert got == optimizer_candidates(exprs, fits, 5, top=10, sample=20, seed=1)
    assert len(got) == 30 == len(set(got))
    assert all(length(e) == 5 and n_constants(e) for e in got)
    pool = [i for i, e in enumerate(exprs) if length(e) == 5 and n_constants(e)]
    best = sorted((i for i in pool if not math.isnan(fits[i].r2)), key=lambda i: -fits[i].r2)[:10]
    assert {exprs[i] for i in best} <= set(got)
    assert got != optimizer_candidates(exprs, fits, 5, top=10, sample=20, seed=2)


def test_batched_fits_do_not_depend_on_the_batch(len3):
    """Levenberg-Marquardt keeps each member's J^T J across rejected steps and its predictions across accepted
    ones: a member fitted in a group of many gets the same constants as fitted alone."""
    Xt, yz, _ = standardize(*len3)
    hard = [e for e in expressions(2, 5) if degree(e) > 1][::4]
    together = fit_batched(hard, Xt, yz)
    for e, f in zip(hard[::8], together[::8], strict=True):
        alone = fit_batched([e], Xt, yz)[0]
        assert (math.isnan(f.r2) and math.isnan(alone.r2)) or f == alone, show(e)


def test_karva_space_is_fitted_on_its_own(len3):
    """search.fit_karva: every Karva expression gets the protocol's fit (those the all-trees protocol already ran
    are taken from it, and equal a fresh run), and the fast path's fits refined over the Karva space."""
    from models.sr_pareto.search import fit_dataset

    ops = ("Mul", "Add")
    Xt, yz, _ = standardize(*len3)
    res = fit_dataset(*len3, 7, 11284, 3, 3, karva_head=3, ops=ops)
    space, prot = res["karva"]["protocol"]
    assert space == expressions(2, 7, "karva3", ops) and len(space) == 183
    assert res["karva"]["fitted"] == sum(length(e) > 3 for e in space)
    for e, f in list(zip(space, prot, strict=True))[::20]:
        assert f == fit_protocol(e, Xt, yz), show(e)
    fast = dict(zip(res["exprs"], res["fast"], strict=True))
    kspace, kfast = res["karva"]["fast"]
    assert kspace == space and all(k.r2 >= fast[e].r2 - 1e-12 for e, k in zip(space, kfast, strict=True))


def test_the_lm_screen_stops_on_convergence_and_at_its_cap():
    """A planted power y = |x|^0.7 (nonlinear in its constant: the LM screen, not the closed form) is recovered and
    stops on convergence well before the 30-iteration cap; with a cap of 2 it stops at the cap, short of it."""
    from models.sr_pareto import batch

    g = np.random.default_rng(0)
    X = g.uniform(0.5, 2.0, (1, 200))
    y = X[0] ** 0.7
    e = ("Pow", ("x", 0), C)
    fit = fit_batched([e], X, y)[0]
    assert fit.params[0] == pytest.approx(0.7, abs=1e-6) and 0 < fit.nit < 30
    parts = batch.decompose(e)
    group = batch.Group(parts[0], parts[2], np.array([parts[1]]), np.array([parts[3]]), X)
    c, nit = batch.levenberg_marquardt(group, np.array([0]), np.array([[-0.5]]), y, iters=2)
    assert nit[0] == 2 and abs(c[0, 0] - 0.7) > 1e-3


def test_the_batched_score_is_the_scalar_score_bit_for_bit():
    """fit_batched scores each member by one evaluation of its group; the scalar path (the compiled expression,
    fit._result) at the same constants gives the same MSE to the bit."""
    from models.sr_pareto.fit import _result

    X, y, _ = numeric_table(planted("planted_len5", 200, 3), "target", min_rows=5, reject_constant=True)
    Xt, yz, _ = standardize(X, y)
    exprs = expressions(Xt.shape[0], 5)
    fits = fit_batched(exprs, Xt, yz)
    valid = [(e, f) for e, f in zip(exprs, fits, strict=True) if not math.isnan(f.mse)]
    assert len(valid) > 0.9 * len(exprs)
    for e, f in valid:
        assert _result(compile_expr(e), np.asarray(f.params), Xt, yz, f.nit).mse == f.mse, show(e)
