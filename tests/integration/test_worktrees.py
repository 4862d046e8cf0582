"""The pieces of ``icml25 run --workers`` without Prefect (fast): worktrees that mirror the checkout and share its
DVC cache, the state digest a worker checks, and an outcome carried from a worktree back into the checkout
(lock entries, uncached outputs, `dvc checkout` from the shared cache) leaving `dvc status` clean; and the
command's refusals of bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import assert_refused, dvc, run_tool

DVC_YAML = """\
stages:
  make:
    foreach: [toy]
    do:
      cmd: python make.py
      deps:
        - make.py
      outs:
        - data/${item}/out
        - reports/${item}/summary.json:
            cache: false
"""
MAKE = """\
import json, pathlib
pathlib.Path("data/toy/out").mkdir(parents=True, exist_ok=True)
pathlib.Path("data/toy/out/numbers.txt").write_text("1 2 3\\n")
pathlib.Path("reports/toy").mkdir(parents=True, exist_ok=True)
pathlib.Path("reports/toy/summary.json").write_text(json.dumps({"n": N}))
"""


def _git(cwd: Path, *args: str) -> str:
    from icml25.scratch import dvc_env

    return subprocess.run(
        ["git", *args], cwd=cwd, env=dvc_env(), check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture()
def repo(tmp_path) -> Path:
    root = tmp_path / "main"
    root.mkdir()
    _git(root, "init", "-q")
    dvc(root, "init", "-q")
    (root / ".gitignore").write_text("runs/\n")
    (root / "dvc.yaml").write_text(DVC_YAML)
    (root / "make.py").write_text(MAKE.replace("N", "1"))
    (root / "notes.txt").write_text("tracked\n")
    dvc(root, "repro", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "toy pipeline")
    return root


def test_worktrees_mirror_the_checkout_and_share_its_cache(repo):
    from flows.worktrees import digest, prepare

    (repo / "notes.txt").write_text("edited, not committed\n")
    (repo / "new.txt").write_text("untracked\n")
    (w1,) = prepare(repo, 1, say=lambda _: None)
    assert (w1 / ".git").is_file() and w1 == repo / "runs" / "workers" / "w1"
    assert (w1 / "notes.txt").read_text() == "edited, not committed\n" and (w1 / "new.txt").exists()
    assert digest(w1) == digest(repo)
    config = (w1 / ".dvc" / "config.local").read_text()
    assert f"dir = {(repo / '.dvc' / 'cache').resolve()}" in config and "shared = group" in config
    (repo / "new.txt").unlink()
    (repo / "notes.txt").unlink()
    assert digest(w1) != digest(repo)
    prepare(repo, 1, say=lambda _: None)  # refreshed: deletions travel too
    assert not (w1 / "notes.txt").exists() and not (w1 / "new.txt").exists()
    assert digest(w1) == digest(repo)
    (w1 / "stray.txt").write_text("left by an earlier run\n")
    prepare(repo, 1, say=lambda _: None)
    assert not (w1 / "stray.txt").exists()


def test_an_outcome_brings_a_worktrees_results_back_through_the_shared_cache(repo, tmp_path):
    from flows import outcome
    from flows.worktrees import prepare

    (repo / "make.py").write_text(MAKE.replace("N", "2"))  # the checkout's stage is stale now
    assert "make@toy" in json.loads(dvc(repo, "status", "--json").stdout)
    (w1,) = prepare(repo, 1, say=lambda _: None)
    dvc(w1, "repro", "-q")
    assert not (w1 / ".dvc" / "cache").exists()  # it ran into the shared cache
    box = outcome.Outbox("run1", dir=str(tmp_path / "outbox"))
    outcome.collect(w1, "toy", box, {"ran": ["make@toy"]})
    got = outcome.fetch(repo, box, "toy", tmp_path)
    assert got.meta["stages"] == ["make@toy"] and got.meta["files"] == ["reports/toy/summary.json"]
    outcome.apply(repo, got)
    assert outcome.status(repo, ["make@toy"]) == {}
    assert json.loads(dvc(repo, "status", "--json").stdout) == {}
    assert json.loads((repo / "reports" / "toy" / "summary.json").read_text()) == {"n": 2}
    assert (repo / "data" / "toy" / "out" / "numbers.txt").read_text() == "1 2 3\n"
    outcome.discard(repo, box)
    assert not (tmp_path / "outbox" / "run1").exists()
    with pytest.raises(RuntimeError, match="no complete outcome of toy"):
        outcome.fetch(repo, box, "toy", tmp_path)


def test_run_with_workers_refuses_bad_input_in_one_line(monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    for argv, message in (
        (["run", "all", "--workers", "0"], "--workers must be at least 1, not 0"),
        (["run", "all", "--remote", "storage"], "--remote and --queue go with --workers N or --pool P"),
        (["run", "all", "--pool", "shared"], "--pool shared without --workers uses the workers of a shared"),
        (["run", "all", "--workers", "2", "--remote", "nope"], "no DVC remote 'nope'"),
        (["run", "all", "--workers", "2", "--remote", "storage"], "--remote storage: the DVC remote is not"),
        (["run", "all", "--workers", "x"], "argument --workers: invalid int value: 'x'"),
    ):
        assert_refused(*run_tool(*argv), message)
