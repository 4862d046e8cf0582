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


def test_planted_expression_is_found_at_its_length(len3):
    rows = apo_front(*len3, max_length=5)
    by_len = {r["EquationLength"]: r for r in rows}
    assert by_len[3]["EquationStructure"] == "Sub(xdata[0],xdata[1])"
    assert by_len[3]["R2"] >= 1 - 1e-8
    assert by_len[1]["R2"] < 0.99
    assert [r["EquationLength"] for r in rows] == [1, 3, 5]


def test_fronts_are_equal_across_runs(len3):
    assert apo_front(*len3, max_length=5) == apo_front(*len3, max_length=5)
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
