"""icml25.verify: each claim of a recompute against the committed one (verdict, and value within the claim's
tolerance), and `icml25 verify` on a scratch git checkout: it agrees within tolerance, names a drift beyond it
and a changed verdict, and exits non-zero for both."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from icml25 import verify as v
from tests.helpers import ROOT


def rec(value, passed=1, tol=0.01, **more):
    return {
        "value": value,
        "passed": passed,
        "op": ">=",
        "threshold": 0.5,
        "kind": "result",
        "tolerance": tol,
    } | more


def test_each_claim_is_classified():
    old = {
        "claims": {"same": rec(0.9), "moved": rec(0.9), "lost": rec(0.9), "won": rec(0.1, 0), "gone": rec(1)}
    }
    new = {
        "claims": {
            "same": rec(0.905),
            "moved": rec(0.95),
            "lost": rec(0.4, 0),
            "won": rec(0.6),
            "new": rec(1),
        }
    }
    got = {c.claim: c.status for c in v.compare("p", old, new)}
    assert got == {
        "same": v.AGREES,
        "moved": v.DRIFTED,
        "lost": v.REGRESSED,
        "won": v.RECOVERED,
        "new": v.NEW,
        "gone": v.GONE,
    }
    assert list(got) == [
        "same",
        "moved",
        "lost",
        "won",
        "new",
        "gone",
    ]  # the recompute's order, then the gone


def test_the_tolerance_is_the_recomputes_then_the_committed_and_zero_without_either():
    assert (
        v.classify(rec(0.9, tol=0.2), rec(1.0, tol=0.0)) == v.DRIFTED
    )  # the code's current declaration wins
    assert v.classify(rec(0.9, tol=0.2), {k: x for k, x in rec(1.0).items() if k != "tolerance"}) == v.AGREES
    bare = {"value": 0.9, "passed": 1}
    assert (
        v.classify(bare, {**bare}) == v.AGREES
        and v.classify(bare, {**bare, "value": 0.9 + 1e-12}) == v.DRIFTED
    )
    assert v.tolerance_of(None, None) == 0.0
    # a value that is not a finite number agrees only with another such value
    assert v.classify(rec(None, 0), rec(None, 0)) == v.AGREES
    assert v.classify(rec(None, 0), rec(0.1, 0)) == v.DRIFTED


def test_describe_names_paper_claim_both_verdicts_and_values():
    (c,) = v.compare("ghost", {"claims": {"x": rec(0.071)}}, {"claims": {"x": rec(0.012, 0)}})
    assert c.describe() == "ghost/x regressed: held (0.071) -> failed (0.012), tolerance 0.01"
    assert c.delta == pytest.approx(-0.059)


@pytest.fixture()
def checkout(tmp_path) -> Path:
    """A git checkout holding params.yaml, dvc.yaml and two papers' committed claims."""
    from icml25.scratch import dvc_env

    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    for slug in ("ghost", "issm"):
        (tmp_path / "reports" / slug).mkdir(parents=True)
        doc = {"paper": slug, "profile": "quick", "claims": {"a": rec(0.9), "b": rec(0.2, 0, tol=0)}}
        (tmp_path / "reports" / slug / "claims.json").write_text(json.dumps(doc))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "claims"]):
        subprocess.run(["git", *args], cwd=tmp_path, env=dvc_env(), check=True)
    return tmp_path


def _edit(root: Path, slug: str, cid: str, **fields) -> None:
    path = root / "reports" / slug / "claims.json"
    doc = json.loads(path.read_text())
    doc["claims"][cid].update(fields)
    path.write_text(json.dumps(doc))


def test_icml25_verify_agrees_within_tolerance_and_exits_1_beyond_it(checkout, monkeypatch, capsys):
    from icml25.cli import main

    monkeypatch.chdir(checkout)
    _edit(checkout, "ghost", "a", value=0.905)
    assert main(["verify", "ghost", "issm"]) == 0
    out = capsys.readouterr().out
    assert "ghost: all 2 claims agree with HEAD\n" in out
    assert "issm: all 2 claims agree with HEAD (the file is the committed one" in out
    _edit(checkout, "issm", "b", value=0.25)
    assert main(["verify", "ghost", "issm"]) == 1
    cap = capsys.readouterr()
    assert (
        "issm: 1 of 2 claims differ from HEAD\n  issm/b drifted: failed (0.2) -> failed (0.25), tolerance 0"
        in cap.out
    )
    assert "1 paper(s) differ from HEAD beyond their claims' tolerances (no verdict changed)" in cap.err


def test_icml25_verify_exits_1_on_a_changed_verdict_and_lists_every_claim_with_all(
    checkout, monkeypatch, capsys
):
    from icml25.cli import main

    monkeypatch.chdir(checkout)
    _edit(checkout, "ghost", "a", value=0.4, passed=0)
    assert main(["verify", "ghost", "--all"]) == 1
    cap = capsys.readouterr()
    assert "  ghost/a regressed: held (0.9) -> failed (0.4), tolerance 0.01\n  ghost/b agrees" in cap.out
    assert "1 verdict(s) changed" in cap.err


def test_icml25_verify_refuses_bad_input_in_one_line(checkout, monkeypatch):
    from tests.helpers import assert_refused, run_tool

    monkeypatch.chdir(checkout)
    for argv, message in (
        (["verify", "nope"], "unknown paper 'nope'"),
        (["verify", "ghost", "--against", "no-such-rev"], "'no-such-rev' is not a git revision"),
    ):
        assert_refused(*run_tool(*argv), message)
