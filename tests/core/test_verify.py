"""icml25.verify: each claim of a recompute against the committed one (verdict recomputed from value, op and
threshold, and value within the claim's tolerance), and `icml25 verify` on a scratch git checkout: it agrees within
tolerance, names a drift beyond it, a changed verdict and a stored `passed` that contradicts its value, exits
non-zero for each, refuses a truncated claims.json in one line, and verifies only a paper whose report ran since
its claims.json was committed (a re-run that wrote identical bytes agrees)."""

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
    old, new = rec(0.071, threshold=0.05), rec(0.012, 0, threshold=0.05)
    (c,) = v.compare("ghost", {"claims": {"x": old}}, {"claims": {"x": new}})
    assert c.describe() == "ghost/x regressed: held (0.071) -> failed (0.012), tolerance 0.01"
    assert c.delta == pytest.approx(-0.059)


def test_verdicts_are_recomputed_from_value_op_and_threshold_and_a_contradicting_passed_is_named():
    """A stored `passed` is never trusted: 250 against `<= 200` fails whatever the file says (a regression, not a
    drift), and the record that says otherwise is named as inconsistent, on either side."""
    old, new = rec(150, op="<=", threshold=200, tol=1), rec(250, op="<=", threshold=200, tol=1)
    (c,) = v.compare("p", {"claims": {"x": old}}, {"claims": {"x": new}})  # both store passed: 1
    assert (c.status, c.inconsistent, c.agrees) == (v.REGRESSED, ("recomputed",), False)
    assert c.describe() == (
        "p/x regressed: held (150) -> failed (250), tolerance 1; the recomputed claims.json stores passed=1 but "
        "250 <= 200 is false (an inconsistent file)"
    )
    (c,) = v.compare("p", {"claims": {"x": new | {"passed": 0}}}, {"claims": {"x": old | {"passed": 0}}})
    assert (c.status, c.inconsistent) == (v.RECOVERED, ("recomputed",))
    # same verdict and value, but the committed record contradicts itself: not an agreement
    (c,) = v.compare("p", {"claims": {"x": new}}, {"claims": {"x": new | {"passed": 0}}})
    assert (c.status, c.inconsistent, c.agrees) == (v.AGREES, ("committed",), False)
    assert v.held(rec(0.5)) and not v.held(rec(None)) and not v.held(rec(0.9, op="~"))


@pytest.fixture()
def checkout(tmp_path) -> Path:
    """A git checkout holding params.yaml (two papers' sections: quick to load), dvc.yaml and their committed
    claims."""
    import yaml

    from icml25.scratch import dvc_env

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["papers"] = {slug: params["papers"][slug] for slug in ("ghost", "issm")}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    shutil.copy2(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    for slug in ("ghost", "issm"):
        (tmp_path / "reports" / slug).mkdir(parents=True)
        doc = {"paper": slug, "profile": "quick", "claims": {"a": rec(0.9), "b": rec(0.2, 0, tol=0)}}
        (tmp_path / "reports" / slug / "claims.json").write_text(json.dumps(doc))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "claims"]):
        subprocess.run(["git", *args], cwd=tmp_path, env=dvc_env(), check=True)
    return tmp_path


def _edit(root: Path, slug: str, cid: str, **fields) -> None:
    """A recompute of ``slug`` whose claim ``cid`` came out as ``fields``, with the runner's record of it."""
    from icml25.paths import PaperPaths
    from icml25.runner import record_run

    path = root / "reports" / slug / "claims.json"
    doc = json.loads(path.read_text())
    doc["claims"][cid].update(fields)
    path.write_text(json.dumps(doc))
    record_run(PaperPaths(root, slug), "report", 0.1)


def _commit(root: Path, message: str) -> None:
    from icml25.scratch import dvc_env

    for args in (["add", "-A"], ["commit", "-qm", message]):
        subprocess.run(["git", *args], cwd=root, env=dvc_env(), check=True)


def test_icml25_verify_agrees_within_tolerance_and_exits_1_beyond_it(checkout, monkeypatch, capsys):
    from icml25.cli import main

    monkeypatch.chdir(checkout)
    _edit(checkout, "ghost", "a", value=0.905)
    _edit(checkout, "issm", "a", value=0.9)  # a re-run that wrote the committed bytes
    assert main(["verify", "ghost", "issm"]) == 0
    out = capsys.readouterr().out
    assert out == "ghost: all 2 claims agree with HEAD\nissm: all 2 claims agree with HEAD\n"
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
    _edit(checkout, "issm", "b", value=0.2)
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


def test_icml25_verify_names_a_stored_passed_that_contradicts_its_value_as_a_regression(
    checkout, monkeypatch, capsys
):
    from icml25.cli import main

    monkeypatch.chdir(checkout)
    _edit(checkout, "ghost", "a", value=0.3)  # below its threshold of 0.5, the file still says passed: 1
    assert main(["verify", "ghost"]) == 1
    cap = capsys.readouterr()
    assert (
        "  ghost/a regressed: held (0.9) -> failed (0.3), tolerance 0.01; the recomputed claims.json stores "
        "passed=1 but 0.3 >= 0.5 is false (an inconsistent file)\n" in cap.out
    )
    assert "1 verdict(s) changed" in cap.err and "1 claim(s) store a `passed` that their value" in cap.err


def test_icml25_verify_does_not_pass_a_paper_that_did_not_run_since_its_claims_were_committed(
    checkout, monkeypatch, capsys
):
    from icml25.cli import main

    monkeypatch.chdir(checkout)
    _edit(checkout, "issm", "a", value=0.905)
    assert (
        main(["verify", "ghost", "issm", "--all"]) == 1
    )  # ghost never ran: nothing verified, no claim listed
    cap = capsys.readouterr()
    assert cap.out == (
        "ghost: not re-run since HEAD, nothing verified: no run of report@ghost is recorded in this checkout\n"
        "issm: all 2 claims agree with HEAD\n  issm/a agrees: held (0.9) -> held (0.905), tolerance 0.01\n"
        "  issm/b agrees: failed (0.2) -> failed (0.2), tolerance 0\n"
    )
    assert cap.err.startswith("icml25 verify: 1 paper(s) not re-run since HEAD, not verified: ghost (")
    # the run whose claims.json was then committed is not a re-run of it
    _commit(checkout, "issm's run")
    assert main(["verify", "issm"]) == 1
    assert "issm: not re-run since HEAD, nothing verified: its last run (" in capsys.readouterr().out
    # nor is a file edited (or restored by git) after its last run
    _edit(checkout, "issm", "a", value=0.91)
    subprocess.run(["git", "checkout", "-q", "--", "reports/issm/claims.json"], cwd=checkout, check=True)
    assert main(["verify", "issm"]) == 1
    assert "reports/issm/claims.json is not the file its last run (" in capsys.readouterr().out


def test_a_report_run_that_wrote_the_committed_bytes_verifies_as_agreeing(checkout, monkeypatch, capsys):
    """The runner itself (report stage, its output faked) records the run: identical bytes are a verified recompute."""
    from types import SimpleNamespace

    from icml25.cli import main
    from icml25.runner import run_stage

    path = checkout / "reports" / "ghost" / "claims.json"
    committed = path.read_bytes()
    monkeypatch.setattr("icml25.runner.load_stage", lambda slug, stage: SimpleNamespace())
    monkeypatch.setattr(
        "icml25.reporting.write_report", lambda ctx, module: (ctx.out / "claims.json").write_bytes(committed)
    )
    path.unlink()  # the run writes it anew
    run_stage(checkout, "ghost", "report")
    run = json.loads((checkout / ".dvc" / "tmp" / "icml25-timing" / "ghost" / "report.json").read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True).stdout
    assert run["stage"] == "report" and run["commit"] == head.strip() and run["finished"].endswith("+00:00")
    assert path.read_bytes() == committed
    monkeypatch.chdir(checkout)
    assert main(["verify", "ghost"]) == 0
    assert capsys.readouterr().out == "ghost: all 2 claims agree with HEAD\n"


def test_a_run_in_a_local_workers_checkout_counts(checkout, monkeypatch, capsys):
    """`icml25 run --workers N` runs the papers in git worktrees under runs/workers/ and brings their reports back:
    the worker's record of the run that wrote these bytes counts."""
    from icml25.cli import main
    from icml25.paths import PaperPaths
    from icml25.runner import record_run

    tree = checkout / "runs" / "workers" / "w1"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree)], cwd=checkout, check=True)
    record_run(PaperPaths(tree, "ghost"), "report", 0.1)  # its claims.json: the committed bytes, as here
    monkeypatch.chdir(checkout)
    assert main(["verify", "ghost"]) == 0
    assert capsys.readouterr().out == "ghost: all 2 claims agree with HEAD\n"


def test_icml25_verify_refuses_a_truncated_claims_json_in_one_line_naming_it(checkout, monkeypatch):
    from tests.helpers import assert_refused, run_tool

    monkeypatch.chdir(checkout)
    path = checkout / "reports" / "ghost" / "claims.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    assert_refused(*run_tool("verify", "ghost"), "reports/ghost/claims.json is not valid JSON")
    path.write_text(text)
    committed = checkout / "reports" / "issm" / "claims.json"
    committed.write_text('{"paper": "issm", "claims": {"a": {"value": 0.9, "op": ">=", ')
    _commit(checkout, "a truncated claims.json")
    assert_refused(
        *run_tool("verify", "ghost", "issm"),
        "reports/issm/claims.json as committed at HEAD is not valid JSON",
    )
    committed.write_text('{"paper": "issm", "claims": [1, 2]}')
    _commit(checkout, "not a claims document")
    assert_refused(*run_tool("verify", "issm"), "is not a claims document")
