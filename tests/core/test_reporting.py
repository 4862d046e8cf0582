"""The report renderer (icml25.reporting) on a small synthetic evaluated folder: claims computed from the
artifacts (a failing one stays failed, a non-finite one fails with its reason), the template rendered with the
params, figures saved, metrics with non-finite numbers, and the contract check."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from icml25.claims import claim, contract_problems
from icml25.paths import PaperPaths
from icml25.registry import Paper
from icml25.reporting import fixed, fmt, pyplot, write_report
from icml25.stage import StageContext

SLUG = "ucb_ogd"  # a catalogue slug: the renderer takes its title from the catalogue

TEMPLATE = """\
## What the paper claims

- Regret grows like sqrt(T).

## What we measured

{% if train.rounds > 10 %}
Long run: {{ train.rounds }} rounds, noise {{ train.noise | g }}, regret {{ regret | fmt }}.
{% endif %}

{{ curve }}
## What differs from the paper

- Seed {{ seed }}, profile {{ profile }}.
"""


@dataclass(frozen=True)
class Train:
    rounds: int = 100
    noise: float = 0.5


def _module(tmp_path: Path, template: str = TEMPLATE) -> ModuleType:
    mod = ModuleType("fake_report")
    (tmp_path / "report.md").write_text(template)
    mod.__file__ = str(tmp_path / "report.py")

    @claim(
        "<=",
        2.0,
        kind="result",
        statement="regret / sqrt(T)",
        source="Thm 1",
        killed_by="test_a.py::test_b",
        tol=1e-9,
        paper="regret O(sqrt(T))",
    )
    def sublinear(ev):
        s = ev.json("summary.json")
        return s["regret"] / math.sqrt(s["T"]), f"T = {s['T']}"

    @claim(">=", 0.5, kind="invariant", statement="coverage", source="Fig. 2", tol=0)
    def covers(ev):
        return ev.csv("runs.csv").coverage.min()

    @claim("<", 1.0, kind="simulated", statement="a ratio that is undefined here", source="Sec. 3", tol=0)
    def undefined(ev):
        return float("nan")

    def context(ev):
        plt = pyplot()
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [1, 4, 9])
        return {"regret": ev.json("summary.json")["regret"], "curve": ev.figure("curve.png", fig, "regret")}

    def metrics(ev):
        return {"regret": ev.json("summary.json")["regret"], "worst": float("inf")}

    mod.sublinear, mod.covers, mod.undefined, mod.context, mod.metrics = (
        sublinear,
        covers,
        undefined,
        context,
        metrics,
    )
    return mod


@pytest.fixture()
def ctx(tmp_path, monkeypatch) -> StageContext:
    monkeypatch.setattr(
        "icml25.reporting.load_paper", lambda slug: Paper(SLUG, "Zang et al. *UCB-OGD*.", "none")
    )
    paths = PaperPaths(tmp_path / "repo", SLUG)
    paths.evaluated.mkdir(parents=True)
    (paths.evaluated / "summary.json").write_text(json.dumps({"regret": 15.0, "T": 100}))
    (paths.evaluated / "runs.csv").write_text("run,coverage\n0,0.9\n1,0.3\n")
    out = tmp_path / "out"
    out.mkdir()
    params = SimpleNamespace(
        prepare=SimpleNamespace(),
        validate=SimpleNamespace(),
        train=Train(),
        evaluate=SimpleNamespace(),
        report=SimpleNamespace(),
    )
    return StageContext(SLUG, "report", params, paths, 3, "smoke", logging.getLogger("test"), out)


def test_report_from_a_synthetic_evaluated_folder(ctx, tmp_path):
    doc = write_report(ctx, _module(tmp_path))
    claims = json.loads((ctx.out / "claims.json").read_text())
    assert claims == doc and claims["paper"] == SLUG and claims["profile"] == "smoke"
    assert list(claims["claims"]) == ["sublinear", "covers", "undefined"]  # declaration order
    sub, cov, und = (claims["claims"][k] for k in ("sublinear", "covers", "undefined"))
    assert sub["value"] == 1.5 and sub["passed"] == 1 and sub["note"] == "T = 100"
    assert cov["value"] == 0.3 and cov["passed"] == 0  # a failed claim stays failed
    assert und["value"] is None and und["passed"] == 0 and "nan" in und["reason"]
    readme = (ctx.out / "README.md").read_text()
    assert readme.startswith("# Adaptive data collection across distributions (UCB-OGD)\n")
    assert (
        "Profile **smoke**: 1/1 result held; 0/1 invariant held; 1 simulated (0 held; shown, not counted as paper "
        "results). Only `result` claims are evidence" in readme
    )
    assert "| `covers` | invariant | coverage | Fig. 2 | 0.3 | >= 0.5 | **failed** |" in readme
    assert "- `sublinear`: T = 100; a stub fails it in `tests/papers/ucb_ogd/test_a.py::test_b`\n" in readme
    assert "Long run: 100 rounds, noise 0.5, regret 15.\n" in readme and "{%" not in readme
    assert "- Seed 3, profile smoke." in readme
    assert "![regret](figures/curve.png)" in readme
    assert (ctx.out / "figures" / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert "train:\n  rounds: 100\n  noise: 0.5" in readme  # the parameters the report saw
    assert json.loads((ctx.out / "metrics.json").read_text()) == {"regret": 15.0, "worst": "inf"}


def test_rendering_is_byte_identical_on_a_second_run(ctx, tmp_path):
    write_report(ctx, _module(tmp_path))
    first = {p.name: p.read_bytes() for p in ctx.out.rglob("*") if p.is_file() and p.name != "timing.json"}
    write_report(ctx, _module(tmp_path))
    assert {
        p.name: p.read_bytes() for p in ctx.out.rglob("*") if p.is_file() and p.name != "timing.json"
    } == first


def test_an_unknown_template_name_is_an_error_not_an_empty_string(ctx, tmp_path):
    import jinja2

    with pytest.raises(jinja2.UndefinedError, match="regrett"):
        write_report(ctx, _module(tmp_path, TEMPLATE.replace("{{ regret | fmt }}", "{{ regrett }}")))


def test_contract_problems_are_named():
    ok = {
        "statement": "s",
        "source": "x",
        "value": 1.0,
        "op": ">=",
        "threshold": 0.5,
        "passed": 1,
        "kind": "invariant",
        "tolerance": 0.0,
    }
    assert contract_problems({"paper": "p", "profile": "quick", "claims": {"a": ok}}, ["a"]) == []
    bad = {
        "paper": "p",
        "claims": {
            "lied": {**ok, "passed": 0},
            "typed": {**ok, "value": None},
            "kind": {**ok, "kind": "hope"},
            "fine": {**ok, "kind": "invariant"},
        },
    }
    assert contract_problems(bad, ["a"]) == [
        "missing top-level key 'profile'",
        "a: absent",
        "lied: passed=0 but 1.0 >= 0.5 is True",
        "typed: value must be one finite number, got None",
        "kind: kind must be one of ['result', 'invariant', 'simulated'], got 'hope'",
    ]
    assert contract_problems({"paper": "p", "profile": "q", "claims": [ok]}) == [
        "'claims' must be an object keyed by claim id (dvc metrics show drops lists)"
    ]


def test_numbers_print_to_their_precision():
    assert fixed(2.220446049250313e-16) == "0" and fixed(-4.4e-16) == "0"
    assert fixed(0.41807912) == "0.418079" and fixed(1.0) == "1" and fixed(0.9973104, 4) == "0.9973"
    assert fmt(5.345e-16) == "5.345e-16" and fmt(144) == "144" and fmt(0.0683) == "0.0683"
    assert fixed(float("inf")) == "inf"


def test_timing_keeps_the_stages_that_did_not_run_here_from_the_same_profile(tmp_path):
    """A queued experiment's temporary workspace starts with an empty .dvc/tmp: the stages DVC skipped there keep
    their wall times from the previous timing.json (same profile only), the stages that ran have fresh ones."""
    from icml25.reporting import _timings

    paths = PaperPaths(tmp_path, SLUG)
    paths.stage_timings.mkdir(parents=True)
    (paths.stage_timings / "train.json").write_text(json.dumps({"stage": "train", "wall_s": 2.5}))
    assert _timings(paths, "smoke") == {"paper": SLUG, "profile": "smoke", "wall_s": {"train": 2.5}}
    paths.timing.parent.mkdir(parents=True)
    old = {"paper": SLUG, "profile": "smoke", "wall_s": {"prepare": 1.0, "validate": 4.0, "train": 9.0}}
    paths.timing.write_text(json.dumps(old))
    assert _timings(paths, "smoke")["wall_s"] == {"prepare": 1.0, "validate": 4.0, "train": 2.5}
    assert _timings(paths, "quick")["wall_s"] == {"train": 2.5}  # another profile's times are never mixed in
    paths.timing.write_text(json.dumps({"paper": SLUG, "wall_s": {"prepare": 1.0}}))  # no profile recorded
    assert _timings(paths, "smoke")["wall_s"] == {"train": 2.5}


def test_captions_and_column_names_are_escaped_markdown(tmp_path):
    """Issue 43: farma's caption "mean R* against ..." rendered as italics with a stray `*`, and a column named
    "max |diff| vs ours" split its table. The caption's line is escaped (the alt text stays as written) and a
    column name's `|` is escaped like a cell's."""
    from icml25.reporting import Evaluated, md_escape, table

    ev = Evaluated(tmp_path, SimpleNamespace(), 0, "quick", "ghost")
    text = ev.figure("r.png", pyplot().figure(), "mean R* against RM calls per token (p < 0.05, `k_*`)")
    assert text == (
        "![mean R* against RM calls per token (p < 0.05, `k_*`)](figures/r.png)\n\n"
        "*mean R\\* against RM calls per token (p &lt; 0.05, `k_*`)*\n"
    )
    assert md_escape("flip <switch> at {k + 1}, see https://x.org/a_b") == (
        "flip &lt;switch&gt; at \\{k + 1\\}, see https://x.org/a_b"
    )
    head = table([{"max |diff| vs ours": 1.0}]).splitlines()[0]
    assert head == "| max \\|diff\\| vs ours |"
