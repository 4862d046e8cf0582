"""The stage runner: atomic outputs (a failing stage leaves the previous artifact and no temp files)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from icml25.params import Empty
from icml25.registry import Claim, Paper
from icml25.runner import run_stage


@dataclass(frozen=True)
class Train:
    steps: int = field(default=3, metadata={"ge": 1})
    fail: bool = False


def _paper() -> Paper:
    paper = Paper(
        "model_independence",
        "test",
        "none",
        schema={"prepare": Empty, "validate": Empty, "train": Train, "evaluate": Empty, "report": Empty},
        claims=(Claim("c", "s", "src", ">=", 1.0),),
    )
    for name in ("prepare", "validate", "evaluate", "report"):
        paper.stage(name)(lambda ctx: None)

    @paper.stage("train")
    def train(ctx):
        (ctx.out / "model.json").write_text(json.dumps({"steps": ctx.params.train.steps}))
        (ctx.out / "partial.bin").write_bytes(b"x" * 10)
        if ctx.params.train.fail:
            raise RuntimeError("boom")

    return paper


def _params(tmp_path, **train):
    import yaml

    sections = {"seed": 0, "prepare": {}, "validate": {}, "train": train, "evaluate": {}, "report": {}}
    (tmp_path / "params.yaml").write_text(
        yaml.safe_dump({"profile": "quick", "papers": {"model_independence": sections}})
    )


def test_failed_stage_keeps_previous_output(tmp_path, monkeypatch):
    monkeypatch.setattr("icml25.runner.load_paper", lambda slug: _paper())
    _params(tmp_path, steps=5)
    run_stage(tmp_path, "model_independence", "train")
    out = tmp_path / "data" / "model_independence" / "trained" / "main"
    assert json.loads((out / "model.json").read_text()) == {"steps": 5}
    assert oct(out.stat().st_mode & 0o777) == "0o755"
    _params(tmp_path, steps=7, fail=True)
    with pytest.raises(RuntimeError, match="boom"):
        run_stage(tmp_path, "model_independence", "train")
    assert json.loads((out / "model.json").read_text()) == {"steps": 5}
    assert sorted(p.name for p in out.parent.iterdir()) == ["main"]  # no temp folder left behind
    timing = tmp_path / ".dvc" / "tmp" / "icml25-timing" / "model_independence" / "train.json"
    assert json.loads(timing.read_text())["wall_s"] >= 0
