"""Reproduction across Prefect workers (slow: about two minutes each), on two small papers of the smoke profile.

1. ``icml25 run all --workers 2``: two git worktrees under runs/workers/ on the checkout's DVC cache, two Prefect
   process workers, each paper on a worker of its own; afterwards the checkout holds every result and `dvc
   status` is clean; a second run dispatches nothing.
2. The multi-machine recipe on one machine: two clones (the "machines"), each with its own DVC cache and the
   remote pointed at a local SeaweedFS server, each running ``icml25 worker --pool``; the asking checkout runs
   ``icml25 run all --pool ... --remote storage``; the workers pull, run, push; the asking checkout ends clean
   and a third clone gets every output with plain ``dvc pull``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, dvc

pytestmark = pytest.mark.slow

PAPERS = ["neuroalgebraic", "hyper"]


def _env(**extra: str) -> dict[str, str]:
    from icml25.scratch import dvc_env

    env = {k: v for k, v in dvc_env().items() if not k.startswith("PREFECT_")}
    return env | extra


def _icml25(cwd: Path, *args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> Path:
    from icml25.scratch import make_scratch

    return make_scratch(ROOT, "smoke", dest=tmp_path_factory.mktemp("workers") / "origin", papers=PAPERS)


def _clean(repo: Path) -> None:
    out = dvc(repo, "status", "--json")
    assert json.loads(out.stdout) == {}, out.stdout


def test_two_local_workers_share_one_cache_and_leave_the_checkout_clean(origin, tmp_path):
    work = tmp_path / "repo"
    shutil.copytree(origin, work, symlinks=True)
    out = _icml25(work, "run", "all", "--workers", "2", env=_env())
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "Traceback" not in text
    done_by = dict(re.findall(r"(\w+): done by (w\d) in", text))
    assert set(done_by) == set(PAPERS) and set(done_by.values()) == {"w1", "w2"}, text
    _clean(work)
    for slug in PAPERS:
        assert json.loads((work / "reports" / slug / "claims.json").read_text())["profile"] == "smoke"
    cache = (work / ".dvc" / "cache").resolve()
    for tree in ("w1", "w2"):
        wt = work / "runs" / "workers" / tree
        assert (wt / ".git").is_file()  # a git worktree, not a clone
        config = (wt / ".dvc" / "config.local").read_text()
        assert f"dir = {cache}" in config and "shared = group" in config
        assert not (wt / ".dvc" / "cache").exists()  # the only cache is the checkout's
    assert any((cache / "runs").iterdir())  # the run cache, shared through it
    again = _icml25(work, "run", "all", "--workers", "2", env=_env())
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 of 2 papers have stale stages" in again.stdout + again.stderr
    _clean(work)


def test_workers_on_two_clones_through_the_s3_remote(origin, tmp_path):
    from flows.server import prefect_server
    from icml25 import procs
    from icml25.store import local_s3

    with local_s3(tmp_path / "s3", bucket="icml25-repro") as s3:
        settings = s3.remote_settings()

        def clone(name: str) -> Path:
            path = tmp_path / name
            subprocess.run(["git", "clone", "-q", str(asker), str(path)], check=True, env=_env())
            for option, value in settings:
                dvc(path, "remote", "modify", "--local", "storage", option, value)
            return path

        asker = tmp_path / "asker"
        shutil.copytree(origin, asker, symlinks=True)
        for option, value in settings:
            dvc(asker, "remote", "modify", "--local", "storage", option, value)
        machines = [clone("machine-a"), clone("machine-b")]
        home = tmp_path / "prefect"
        with prefect_server(home) as url:
            env = _env(PREFECT_API_URL=url, PREFECT_HOME=str(home))
            workers = [
                procs.spawn(
                    [sys.executable, "-m", "flows.cli", "worker", "--pool", "shared", "--name", m.name],
                    cwd=m,
                    env=env | {"PREFECT_WORKER_QUERY_SECONDS": "1"},
                    stdout=open(tmp_path / f"{m.name}.log", "wb"),  # noqa: SIM115 - closed with the process
                    stderr=subprocess.STDOUT,
                )
                for m in machines
            ]
            try:
                out = _icml25(asker, "run", "all", "--pool", "shared", "--remote", "storage", env=env)
                # a profile (as a GPU machine runs `--profile paper`): each side in a scratch copy of its clone
                # (runs/smoke/, with the clone's remote settings), the results back in the asker's runs/smoke/
                prof = _icml25(
                    asker,
                    "run",
                    "all",
                    "--pool",
                    "shared",
                    "--remote",
                    "storage",
                    "--profile",
                    "smoke",
                    env=env,
                )
            finally:
                for w in workers:
                    procs.stop(w, grace=15)
        text = out.stdout + out.stderr
        logs = "".join((tmp_path / f"{m.name}.log").read_text(errors="replace") for m in machines)
        assert out.returncode == 0, text + logs
        done_by = dict(re.findall(r"(\w+): done by (machine-\w) in", text))
        assert set(done_by) == set(PAPERS), text
        _clean(asker)
        ptext = prof.stdout + prof.stderr
        assert prof.returncode == 0, ptext + logs
        assert set(dict(re.findall(r"(\w+): done by (machine-\w) in", ptext))) == set(PAPERS), ptext
        _clean(asker / "runs" / "smoke")
        for m in machines:  # each machine pulled and ran in its own clone, on its own cache
            assert (m / ".dvc" / "cache").is_dir()
        assert s3.filesystem().find("icml25-repro/dvc/files/md5")  # the outputs went through S3
        left = s3.filesystem().find("icml25-repro/dvc/icml25-outbox")  # the run cleaned its outbox (SeaweedFS
        assert not [p for p in left if p.endswith(".json") or "/files/" in p]  # may keep the empty folder)

        # any machine can then `dvc pull` the results: the asking checkout commits them, a new clone pulls
        subprocess.run(["git", "add", "-A"], cwd=asker, check=True, env=_env())
        subprocess.run(["git", "commit", "-qm", "results"], cwd=asker, check=True, env=_env())
        reader = clone("reader")
        dvc(reader, "pull")
        _clean(reader)
        for slug in PAPERS:
            assert (reader / "data" / slug / "evaluated" / "main").is_dir()
