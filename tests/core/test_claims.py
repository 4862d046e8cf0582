"""Claim kinds (DESIGN.md, claims contract): a claim says whether it is evidence (`result`), an implementation
check (`invariant`) or a stand-in's output (`simulated`); every result names a test in which a stub or broken
method fails it, and that test exists, names the claim and computes its verdict through the paper's report."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from icml25.claims import Claim, claim, contract_problems, declared, describe, tally
from icml25.params import implemented, load_params
from icml25.registry import load_stage


def _fn(ev):
    return 1.0


def test_a_claim_declares_its_kind_and_a_result_its_stub_test():
    with pytest.raises(TypeError, match="kind"):
        claim(">=", 1, statement="s", source="x", tol=0)(_fn)  # no default: every paper chooses
    with pytest.raises(ValueError, match="kind must be one of .* got 'proof'"):
        claim(">=", 1, kind="proof", statement="s", source="x", tol=0)(_fn)
    with pytest.raises(ValueError, match="names the test in which a stub"):
        claim(">=", 1, kind="result", statement="s", source="x", tol=0)(_fn)
    with pytest.raises(ValueError, match="got 'stubs::fails'"):
        claim(">=", 1, kind="result", statement="s", source="x", tol=0, killed_by="stubs::fails")(_fn)
    with pytest.raises(ValueError, match="killed_by is for result claims"):
        claim(">=", 1, kind="invariant", statement="s", source="x", tol=0, killed_by="test_a.py::test_b")(_fn)
    c = claim(
        ">=",
        1,
        kind="result",
        statement="s",
        source="x",
        tol=0.01,
        killed_by="test_a.py::test_b",
        paper="0.9",
    )(_fn)
    assert c.verdict(*c.evaluate(None)) == {
        "statement": "s",
        "source": "x",
        "value": 1.0,
        "op": ">=",
        "threshold": 1.0,
        "passed": 1,
        "kind": "result",
        "killed_by": "test_a.py::test_b",
        "tolerance": 0.01,
        "paper": "0.9",
    }
    rec = claim("<", 1, kind="simulated", statement="s", source="x", tol=0)(_fn).verdict(0.5)
    assert "killed_by" not in rec and "paper" not in rec and rec["tolerance"] == 0


def test_a_claim_declares_how_far_a_recompute_may_move_it():
    with pytest.raises(TypeError, match="tol"):
        claim(">=", 1, kind="invariant", statement="s", source="x")(_fn)  # no default: every claim says
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="tol must be a finite number >= 0"):
            claim(">=", 1, kind="invariant", statement="s", source="x", tol=bad)(_fn)


def test_every_declared_claim_has_a_tolerance(root):
    for slug in implemented(load_params(root)):
        for c in declared(load_stage(slug, "report")):
            assert c.tol >= 0 and (c.paper is None or (isinstance(c.paper, str) and 0 < len(c.paper) < 120))


def test_the_contract_requires_a_kind_and_a_results_stub_test():
    ok = {
        "statement": "s",
        "source": "x",
        "value": 1.0,
        "op": ">=",
        "threshold": 0.5,
        "passed": 1,
        "tolerance": 0,
    }
    doc = {"paper": "p", "profile": "q", "claims": {"a": ok, "b": {**ok, "kind": "result"}}}
    assert contract_problems(doc) == [
        "a: kind must be one of ['result', 'invariant', 'simulated'], got None",
        "b: a result claim names its stub-killing test (killed_by)",
    ]
    no_tol = {k: v for k, v in ok.items() if k != "tolerance"} | {"kind": "invariant"}
    assert contract_problems({**doc, "claims": {"c": no_tol, "d": {**no_tol, "tolerance": -1}}}) == [
        "c: tolerance must be a finite number >= 0 (what a recompute may move), got None",
        "d: tolerance must be a finite number >= 0 (what a recompute may move), got -1",
    ]


def test_tally_counts_each_kind_apart_and_results_first():
    claims = {
        "r1": {"kind": "result", "passed": 1},
        "r2": {"kind": "result", "passed": 0},
        "i": {"kind": "invariant", "passed": 1},
        "s1": {"kind": "simulated", "passed": 1},
        "s2": {"kind": "simulated", "passed": 0},
    }
    counts = tally(claims)
    assert counts == {"result": (1, 2), "invariant": (1, 1), "simulated": (1, 2)}
    assert describe(counts) == (
        "1/2 results held; 1/1 invariant held; 2 simulated (1 held; shown, not counted as paper results)"
    )
    assert describe(counts, short=True) == "1/2 results, 1/1 inv, 2 sim"
    only_checks = tally({"i": {"kind": "invariant", "passed": 1}})
    assert describe(only_checks) == "0/0 results held; 1/1 invariant held"  # no results is said, not hidden


def _stub_tests(slug: str) -> list[tuple[Claim, Path]]:
    return [
        (c, Path(__file__).parents[1] / "papers" / slug / c.killed_by.split("::")[0])
        for c in declared(load_stage(slug, "report"))
        if c.kind == "result"
    ]


@pytest.mark.parametrize("slug", implemented(load_params(Path(__file__).parents[2])))
def test_every_result_names_a_stub_test_that_exists_and_evaluates_it(slug):
    """The named test is a function of tests/papers/<slug>/<file>, it names the claim's id, and the file
    computes verdicts with tests.helpers.claim_verdict (the report's own claim function), so the stub fails the
    claim as the report would compute it, not a copy of it."""
    for c, path in _stub_tests(slug):
        test = c.killed_by.split("::")[1]
        assert path.exists(), f"{slug}.{c.id}: killed_by names {path}, which does not exist"
        tree = ast.parse(path.read_text())
        fns = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert test in fns, f"{slug}.{c.id}: {path.name} defines no {test}"
        strings = {n.value for n in ast.walk(fns[test]) if isinstance(n, ast.Constant)}
        assert c.id in strings, f"{slug}.{c.id}: {test} never names the claim {c.id!r}"
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert "claim_verdict" in names, f"{slug}.{c.id}: {path.name} never calls tests.helpers.claim_verdict"


def test_the_index_counts_each_kind_apart(tmp_path):
    """reports/README.md: results held / total always, the other kinds where a paper has them, planned papers
    and implemented papers without a report as '-'."""
    from icml25 import io
    from icml25.paths import PaperPaths
    from icml25.reporting import write_index

    def rec(kind, passed):
        return {
            "statement": "s",
            "source": "x",
            "value": 1.0,
            "op": ">=",
            "threshold": 0.5,
            "passed": passed,
            "kind": kind,
            **({"killed_by": "test_a.py::test_b"} if kind == "result" else {}),
        }

    claims = {
        "r1": rec("result", 1),
        "r2": rec("result", 0),
        "i": rec("invariant", 1),
        "s": rec("simulated", 1),
    }
    path = PaperPaths(tmp_path, "ghost").claims
    path.parent.mkdir(parents=True)
    io.write_json(path, {"paper": "ghost", "profile": "quick", "claims": claims})
    only_sim = PaperPaths(tmp_path, "gsm_infinite").claims
    only_sim.parent.mkdir(parents=True)
    io.write_json(
        only_sim, {"paper": "gsm_infinite", "profile": "quick", "claims": {"s": rec("simulated", 0)}}
    )
    text = write_index(tmp_path, ["ghost", "gsm_infinite", "lsmooth_gd"])
    rows = {
        line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| ") and " | " in line
    }
    assert "| results held | invariants held | simulated held |" in text
    assert rows["[ghost](ghost/README.md)"].endswith("| implemented | 1/2 | 1/1 | 1/1 |")
    assert rows["[gsm_infinite](gsm_infinite/README.md)"].endswith("| implemented | 0/0 | - | 0/1 |")
    assert rows["lsmooth_gd"].endswith("| implemented | - | - | - |")  # no report yet
    assert rows["ucb_ogd"].endswith("| planned | - | - | - |")
