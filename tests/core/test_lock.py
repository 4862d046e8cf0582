"""The checkout's run lock (icml25.lock): exclusive across processes, names its holder, bounded waits, freed
when its holder dies in any way (SIGKILL included: the leaked Prefect concurrency slot hung every later run),
re-entrant in a process, and handed down to a child process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from icml25.lock import LockTimeout, checkout_lock, handed_down, lock_path

HOLD = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_DFL)
from pathlib import Path
from icml25.lock import checkout_lock
with checkout_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(120)
"""


def _holder(root, **kw) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(root)], stdout=subprocess.PIPE, text=True, **kw)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_waits_naming_the_holder_then_gives_up(tmp_path):
    proc = _holder(tmp_path)
    try:
        said: list[str] = []
        start = time.monotonic()
        with pytest.raises(LockTimeout, match=rf"held by PID {proc.pid} `-c {tmp_path}"):
            with checkout_lock(tmp_path, timeout=0.6, say=said.append):
                pass
        assert 0.5 < time.monotonic() - start < 5
        assert said and f"held by PID {proc.pid}" in said[0] and "waiting" in said[0]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_holder_frees_the_lock_at_once(tmp_path, sig):
    proc = _holder(tmp_path)
    os.kill(proc.pid, sig)
    proc.wait()
    start = time.monotonic()
    with checkout_lock(tmp_path, timeout=5) as fd:
        assert fd >= 0
        assert json.loads(lock_path(tmp_path).read_text())["pid"] == os.getpid()
    assert time.monotonic() - start < 1


def test_reentrant_within_a_process(tmp_path):
    with checkout_lock(tmp_path, timeout=0) as a:
        with checkout_lock(tmp_path, timeout=0) as b:
            assert a == b
        with checkout_lock(tmp_path, timeout=0):
            pass
    proc = _holder(tmp_path)  # released after the outermost block
    proc.kill()
    proc.wait()


def test_handed_down_to_a_child_that_asks_again(tmp_path):
    with checkout_lock(tmp_path, timeout=0) as fd:
        child = subprocess.run(
            [sys.executable, "-c", HOLD.replace("time.sleep(120)", "pass"), str(tmp_path)],
            env={**os.environ, **handed_down(fd)},
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.returncode == 0 and child.stdout.strip() == "held", child.stderr
    with checkout_lock(tmp_path, timeout=0):  # the child's exit did not keep it
        pass


def test_a_descriptor_of_another_file_is_not_the_lock(tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    with checkout_lock(other, timeout=0) as fd:
        monkeypatch.setenv("ICML25_LOCK_FD", str(fd))
        proc = _holder(tmp_path)  # tmp_path's lock is free, whatever the env says
        try:
            with pytest.raises(LockTimeout):
                with checkout_lock(tmp_path, timeout=0.3, say=lambda m: None):
                    pass
        finally:
            proc.kill()
            proc.wait()
