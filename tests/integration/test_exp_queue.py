"""A two-point parameter sweep through DVC's experiment queue on the smoke profile (README: "Parameter sweeps
with DVC experiments").

A scratch copy holding one paper (neuroalgebraic: its smoke pipeline takes seconds and its descent claims depend
on the number of gradient steps) is reproduced by `dvc repro` and committed (the baseline); two experiments are
queued with `dvc exp run --queue -S papers.neuroalgebraic.train.steps=...` (one with the target
`report@neuroalgebraic`, one without) and run by `dvc queue start -j 2` in DVC's temporary workspaces
(.dvc/tmp/exps). Checked: both succeed, each carries its own param value and every declared claim of the paper as
a metric, the claims move the way the steps make them (50 steps leave the descent unconverged, so
`singular_attraction` fails; 3000 hold it), `dvc exp show` lists both, the experiments' timing.json keeps the
wall times of the stages they did not re-run, and the workspace is untouched. The queue's workers are stopped at
the end whatever happens (`dvc queue stop --kill`, then by PID)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT, alive, declared_claims, dvc, wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]

SLUG = "neuroalgebraic"
KEY = f"papers.{SLUG}.train.steps"
POINTS = {"steps-50": 50, "steps-3000": 3000}
CLAIMS = f"reports/{SLUG}/claims.json"
QUEUE_TIMEOUT_S = 900.0


def git(work: Path, *args: str) -> str:
    from icml25.scratch import dvc_env

    return subprocess.run(
        ["git", *args], cwd=work, env=dvc_env(), capture_output=True, text=True, check=True
    ).stdout


def start_queue(work: Path, jobs: int) -> str:
    """`dvc queue start -j jobs`; its output. Not through a pipe: the workers' launcher (dvc-task's
    multiprocessing child) inherits stdout and stderr, so a captured `dvc queue start` returns only when the
    workers exit, after the queue is empty; a file does not wait."""
    import sys

    from icml25.scratch import dvc_env

    log = work.parent / "queue-start.log"
    with log.open("w") as out:
        subprocess.run(
            [sys.executable, "-m", "dvc", "queue", "start", "-j", str(jobs)],
            cwd=work,
            env=dvc_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            check=True,
            timeout=120,
        )
    return log.read_text()


def queue_processes(work: Path) -> set[int]:
    """The queue's processes of ``work``: the workers its pid files name, and every process whose current folder
    is ``work`` or inside it (the daemonised `dvc queue start`, the workers, `dvc exp exec-run` and its stages in
    .dvc/tmp/exps/tmp*), this test's own process excepted."""
    found = set()
    for f in (work / ".dvc" / "tmp" / "exps" / "celery").glob("*.pid"):
        text = f.read_text().strip()
        if text.isdigit():
            found.add(int(text))
    root = str(work.resolve())
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + os.sep):
            found.add(int(name))
    return {p for p in found if alive(p)}


def stop_queue(work: Path) -> None:
    """`dvc queue stop --kill`, then wait for the queue's processes to go; SIGKILL by PID what is left."""
    dvc(work, "queue", "stop", "--kill", check=False)
    if wait_gone(queue_processes(work), timeout=30):
        return
    for pid in queue_processes(work):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert wait_gone(queue_processes(work), timeout=10), f"queue processes left: {queue_processes(work)}"


def wait_for_queue(work: Path, names) -> dict[str, str]:
    """Poll `dvc queue status` until none of ``names`` is queued or running; their statuses."""
    deadline = time.monotonic() + QUEUE_TIMEOUT_S
    while True:
        rows = [line.split() for line in dvc(work, "queue", "status").stdout.splitlines()]
        status = {row[1]: row[-1] for row in rows if len(row) >= 2 and row[1] in names}
        if len(status) == len(names) and not {"Queued", "Running"} & set(status.values()):
            return status
        assert time.monotonic() < deadline, f"the queue did not finish in {QUEUE_TIMEOUT_S:.0f} s: {status}"
        time.sleep(5)


@pytest.fixture()
def baseline(tmp_path):
    """A committed scratch copy holding only SLUG under the smoke profile, reproduced once; the queue's workers
    are stopped when the test ends, however it ends."""
    from icml25.scratch import make_scratch

    work = make_scratch(ROOT, "smoke", dest=tmp_path / "repo", papers=[SLUG])
    try:
        dvc(work, "repro")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", "baseline: dvc repro on the smoke profile")
        yield work
    finally:
        stop_queue(work)


def test_a_two_point_sweep_through_the_queue(baseline):
    work = baseline
    before = (work / CLAIMS).read_bytes()
    for name, steps in POINTS.items():
        target = (
            [f"report@{SLUG}"] if steps == 50 else []
        )  # both forms: one paper's chain, the whole pipeline
        out = dvc(work, "exp", "run", "--queue", "-n", name, "-S", f"{KEY}={steps}", *target).stdout
        assert f"Queued experiment '{name}'" in out
    start = time.monotonic()
    assert "Started '2' new experiments task queue workers" in start_queue(work, 2)
    assert queue_processes(work), "no queue worker is running"
    status = wait_for_queue(work, POINTS)
    print(f"queue: two experiments in {time.monotonic() - start:.0f} s")
    logs = {n: dvc(work, "queue", "logs", n, check=False).stdout[-3000:] for n in POINTS}
    assert status == dict.fromkeys(POINTS, "Success"), logs

    shown = json.loads(dvc(work, "exp", "show", "--json").stdout)
    (base,) = [b for b in shown if b["name"] == "master"]
    exps = {e["name"]: e for e in base["experiments"] or []}
    assert set(exps) == set(POINTS)
    ids = declared_claims(SLUG)
    claims = {}
    for name, steps in POINTS.items():
        assert exps[name]["executor"]["state"] == "success"
        data = exps[name]["revs"][0]["data"]
        assert data["params"]["params.yaml"]["data"]["papers"][SLUG]["train"]["steps"] == steps
        doc = data["metrics"][CLAIMS]["data"]
        assert doc["paper"] == SLUG and doc["profile"] == "smoke" and list(doc["claims"]) == ids
        claims[name] = doc["claims"]
        timing = json.loads(git(work, "show", f"{data['rev']}:reports/{SLUG}/timing.json"))
        assert {"prepare", "validate", "train", "evaluate"} <= set(timing["wall_s"]), (
            timing
        )  # skipped ones kept
    # the claims move the way the steps make them: unconverged descent fails the attraction claim
    short, long = claims["steps-50"]["singular_attraction"], claims["steps-3000"]["singular_attraction"]
    assert short["value"] < long["value"] and (short["passed"], long["passed"]) == (0, 1)
    assert claims["steps-50"]["dims_shallow"] == claims["steps-3000"]["dims_shallow"]  # upstream of train

    table = dvc(work, "exp", "show", "--md", "--only-changed").stdout
    assert all(f"[{name}]" in table for name in POINTS) and "claims.singular_attraction.value" in table
    # the sweep ran in DVC's temporary workspaces: the checkout is as it was
    assert git(work, "status", "--porcelain") == ""
    assert (work / CLAIMS).read_bytes() == before
    assert not list((work / ".dvc" / "tmp" / "exps").glob("tmp*"))
