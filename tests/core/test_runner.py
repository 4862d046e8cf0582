"""The stage runner: atomic outputs (a failing stage leaves the previous artifact and no temp files), the
sections a stage sees, and named random streams."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from icml25 import random as streams
from icml25.registry import Paper
from icml25.runner import run_stage

SLUG = "model_independence"


@dataclass(frozen=True)
class Train:
    steps: int = field(default=3, metadata={"ge": 1})
    fail: bool = False


def _train(ctx):
    assert set(vars(ctx.params)) == {"train"}  # a stage sees its own section only
    ctx.write_json("model.json", {"steps": ctx.params.train.steps, "draw": float(ctx.rng("init").random())})
    (ctx.out / "partial.bin").write_bytes(b"x" * 10)
    if ctx.params.train.fail:
        raise RuntimeError("boom")


def _params(tmp_path, **train):
    import yaml

    sections = {"seed": 0, "prepare": {}, "validate": {}, "train": train, "evaluate": {}, "report": {}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"profile": "quick", "papers": {SLUG: sections}}))


@pytest.fixture()
def fake_paper(monkeypatch):
    monkeypatch.setattr(
        "icml25.runner.load_paper", lambda slug: Paper(SLUG, "test", "none", {"train": Train})
    )
    monkeypatch.setattr("icml25.runner.load_stage", lambda slug, stage: SimpleNamespace(run=_train))


def test_failed_stage_keeps_previous_output(tmp_path, fake_paper):
    _params(tmp_path, steps=5)
    run_stage(tmp_path, SLUG, "train")
    out = tmp_path / "data" / SLUG / "trained" / "main"
    written = json.loads((out / "model.json").read_text())
    assert written == {"steps": 5, "draw": float(streams.rng(0, "init").random())}
    assert oct(out.stat().st_mode & 0o777) == "0o755"
    _params(tmp_path, steps=7, fail=True)
    with pytest.raises(RuntimeError, match="boom"):
        run_stage(tmp_path, SLUG, "train")
    assert json.loads((out / "model.json").read_text()) == written
    assert sorted(p.name for p in out.parent.iterdir()) == ["main"]  # no temp folder left behind
    timing = tmp_path / ".dvc" / "tmp" / "icml25-timing" / SLUG / "train.json"
    assert json.loads(timing.read_text())["wall_s"] >= 0


def test_named_streams_are_deterministic_and_independent():
    a = streams.rng(7, "folds", 3).random(4)
    assert (a == streams.rng(7, "folds", 3).random(4)).all()
    others = [
        streams.rng(8, "folds", 3),
        streams.rng(7, "fold", 3),
        streams.rng(7, "folds", 4),
        streams.rng(7, "folds"),
    ]
    assert all(not (a == g.random(4)).any() for g in others)
    assert streams.seed_for(7, "init") == streams.seed_for(7, "init") != streams.seed_for(7, "init", 1)
    assert 0 <= streams.seed_for(7, "init") < 2**32
    for bad in (-1, 1.5, True):
        with pytest.raises((TypeError, ValueError)):
            streams.rng(7, "x", bad)


def test_user_files_are_named_relative_to_the_papers_input_folder(tmp_path):
    import logging

    from icml25.errors import UserError
    from icml25.paths import PaperPaths
    from icml25.stage import StageContext

    ctx = StageContext(
        SLUG,
        "prepare",
        SimpleNamespace(),
        PaperPaths(tmp_path, SLUG),
        0,
        "quick",
        logging.getLogger("t"),
        tmp_path,
    )
    assert (
        ctx.input_path("real_csv", "real.csv") == (tmp_path / "data" / SLUG / "input" / "real.csv").resolve()
    )
    assert ctx.input_path("root", "planetoid/Cora").name == "Cora"
    for bad in ("/etc/passwd", "../../params.yaml", "a/../../x.csv"):
        with pytest.raises(UserError, match=rf"papers\.{SLUG}\.prepare\.real_csv: .* must be a path inside "):
            ctx.input_path("real_csv", bad)


def test_a_silent_stage_says_it_is_still_running_and_a_talkative_one_is_left_alone(caplog):
    """The house rule: a stage longer than 30 s logs at least every 30 s (here every 0.2 s)."""
    import logging
    import time

    from icml25.runner import heartbeat

    log = logging.getLogger("icml25.test.heartbeat")
    with caplog.at_level(logging.INFO, logger=log.name):
        with heartbeat(log, time.perf_counter(), every=0.2):
            time.sleep(0.75)
        silent = [r.getMessage() for r in caplog.records if "still running" in r.getMessage()]
        caplog.clear()
        with heartbeat(log, time.perf_counter(), every=0.2):
            for i in range(8):
                log.info("step %d", i)
                time.sleep(0.09)
        talkative = [r.getMessage() for r in caplog.records if "still running" in r.getMessage()]
    assert 2 <= len(silent) <= 4 and silent[0].startswith("still running (0 min 00 s")
    assert talkative == []
    assert log.filters == []
