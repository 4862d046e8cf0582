"""Interruption and concurrency, with real signals to real processes (issue 14, items 1, 2 and 5).

* `icml25 run` stopped by SIGKILL, SIGTERM or SIGHUP mid-stage: nothing it started is left in the process table
  (flow, `dvc repro`, the stage, the Prefect server), nothing is written afterwards (dvc.lock is as before), no
  half-written output remains, and the next run does not wait on a leaked lock. (DVC itself removed the stage's
  previous output before running it: `dvc checkout` restores it, see the README.)
* `dvc repro` itself killed: its stage stops and removes its temporary output.
* Two `icml25 run --profile smoke` at once: the second waits for the first (naming it) instead of deleting the
  scratch copy under it; both succeed.
* `icml25 s3 serve` killed with SIGKILL: `weed mini` and its ports go with it.

Times on 2 cores: about 35 s per interrupted run, 15 s per killed `dvc repro`, 2.5 min for the two runs, 10 s
for the S3 server.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import DVC_PAPER as SLUG
from tests.helpers import alive, clone_repo, cmdline, descendants, wait_gone

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

STAGE = f"icml25 stage {SLUG} train"


def _env() -> dict[str, str]:
    from icml25.scratch import dvc_env

    # `icml25 run` starts its own Prefect server and warm starter, as a user's does (not the test session's)
    return {k: v for k, v in dvc_env().items() if not k.startswith("PREFECT_") and k != "ICML25_WARM"}


def _default_signals() -> None:
    """In the child before exec: the default actions, whatever this test run ignores (nohup: SIGHUP)."""
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL)


def _wait_for(pid: int, needle: str, timeout: float = 180) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for p in descendants(pid) if needle in cmdline(p)]
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no process running {needle!r} below {pid} after {timeout} s")


def _slow_train(work: Path) -> str:
    """Make the paper's train stage sleep first (a stage that is surely running when the signal comes);
    returns the original source to restore."""
    path = work / "stages" / SLUG / "train.py"
    original = path.read_text()
    patched = re.sub(r"(def run\(ctx[^\n]*\n)", r"\1    __import__('time').sleep(600)\n", original, count=1)
    assert patched != original
    path.write_text(patched)
    return original


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


def _locked(work: Path, stage: str) -> dict:
    import yaml

    return yaml.safe_load((work / "dvc.lock").read_text())["stages"][stage]


def _leftovers(work: Path) -> list[str]:
    return [str(p) for p in (work / "data" / SLUG).rglob("*") if ".tmp-" in p.name or ".old-" in p.name]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_an_interrupted_run_leaves_nothing_behind_and_the_next_run_proceeds(dvc_repo, tmp_path, sig):
    work = clone_repo(dvc_repo[0], tmp_path / "repo")
    original = _slow_train(work)
    train_before = _locked(work, f"train@{SLUG}")
    log = (tmp_path / "run.log").open("w")
    cli = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "run", SLUG],
        cwd=work,
        env=_env(),
        stdout=log,
        stderr=log,
        preexec_fn=_default_signals,
    )
    stage = _wait_for(cli.pid, STAGE)
    tree = descendants(cli.pid)
    assert any("prefect server start" in cmdline(p) for p in tree), tree
    os.kill(cli.pid, sig)
    code = cli.wait(timeout=60)
    if sig != signal.SIGKILL:
        assert code == 128 + sig, (tmp_path / "run.log").read_text()
    assert wait_gone(tree, 30), [(p, cmdline(p)) for p in tree if alive(p)]
    assert not any(alive(p) for p in stage)
    after = _snapshot(work / "data" / SLUG), (work / "dvc.lock").read_text()
    time.sleep(2)
    assert (_snapshot(work / "data" / SLUG), (work / "dvc.lock").read_text()) == after  # nothing writes later
    assert _locked(work, f"train@{SLUG}") == train_before  # the interrupted stage was not recorded
    assert _leftovers(work) == []

    (work / "stages" / SLUG / "train.py").write_text(original)
    again = subprocess.run(
        [sys.executable, "-m", "flows.cli", "run", SLUG, "--lock-timeout", "20"],
        cwd=work,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "waiting" not in again.stderr  # no stale lock


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=lambda s: s.name)
def test_killing_dvc_repro_stops_its_stage(dvc_repo, tmp_path, sig):
    work = clone_repo(dvc_repo[0], tmp_path / "repo")
    _slow_train(work)
    dvc = subprocess.Popen(
        [sys.executable, "-m", "dvc", "repro", f"train@{SLUG}"],
        cwd=work,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=_default_signals,
    )
    stage = _wait_for(dvc.pid, STAGE)
    time.sleep(1)  # the stage has set itself up (a stage killed while importing has nothing to clean)
    assert list((work / "data" / SLUG).glob("trained/.main.tmp-*"))  # its temporary output exists
    os.kill(dvc.pid, sig)
    dvc.wait(timeout=30)
    assert wait_gone(stage, 15), [cmdline(p) for p in stage if alive(p)]
    assert _leftovers(work) == []


def test_two_runs_at_once_take_turns(dvc_repo, tmp_path):
    work = clone_repo(dvc_repo[0], tmp_path / "repo")
    cmd = [sys.executable, "-m", "flows.cli", "run", SLUG, "--profile", "smoke"]
    logs = [(tmp_path / f"run{i}.log").open("w+") for i in (1, 2)]
    first = subprocess.Popen(cmd, cwd=work, env=_env(), stdout=logs[0], stderr=subprocess.STDOUT)
    _wait_for(first.pid, "icml25 stage", timeout=120)  # mid-run in runs/smoke
    second = subprocess.Popen(cmd, cwd=work, env=_env(), stdout=logs[1], stderr=subprocess.STDOUT)
    codes = [first.wait(timeout=600), second.wait(timeout=600)]
    texts = [(tmp_path / f"run{i}.log").read_text() for i in (1, 2)]
    assert codes == [0, 0], texts
    assert "Traceback" not in texts[0] + texts[1]
    assert f"waiting for this checkout's run lock, held by PID {first.pid}" in texts[1]
    for text in texts:
        assert re.search(rf"^{SLUG}: \d+/\d+ results? held\b", text, re.M), text


def test_a_killed_s3_server_takes_weed_with_it(tmp_path):
    from icml25.store import free_port

    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "icml25", "s3", "serve", "--dir", str(tmp_path / "s3"), "--port", str(port)],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    for line in serve.stdout:
        if "Press Ctrl-C" in line:
            break
    tree = descendants(serve.pid)
    assert any("weed" in cmdline(p) and " mini" in cmdline(p) for p in tree), tree
    os.kill(serve.pid, signal.SIGKILL)
    serve.wait()
    assert wait_gone(tree, 20), [cmdline(p) for p in tree if alive(p)]
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", port))
