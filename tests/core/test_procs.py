"""icml25.procs: a guarded command and everything it starts never outlive the parent, however the parent ends;
a stage started by DVC stops (running its cleanup) when `dvc repro` dies, also behind a shell that does not
exec. Every check sends real signals to real processes and reads the process table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from icml25.procs import group_members, stop
from tests.helpers import alive, cmdline, descendants, wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# the parents restore the default actions: a test run under nohup (SIGHUP ignored, inherited) must still see the
# parent die of the signal it is sent
PARENT = """
import signal, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_DFL)
from icml25 import procs
p = procs.spawn(["bash", "-c", "sleep 300 & sleep 301 & wait"])
print(p.pid, flush=True)
time.sleep(300)
"""


def _parent() -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    guard = int(proc.stdout.readline())  # the parent is up (and has restored its signal actions)
    deadline = time.monotonic() + 10
    while len(group_members(guard)) < 4 and time.monotonic() < deadline:  # guard, bash, two sleeps
        time.sleep(0.05)
    assert len(group_members(guard)) == 4
    return proc, guard


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_the_group_dies_with_its_parent(sig):
    proc, guard = _parent()
    members = group_members(guard)
    os.kill(proc.pid, sig)
    proc.wait()
    assert wait_gone(members, 10), [p for p in members if alive(p)]


def test_a_signal_to_the_guard_stops_the_group_and_its_status_says_so():
    from icml25.procs import spawn

    guard = spawn(["bash", "-c", "sleep 300 & sleep 301 & wait"])
    deadline = time.monotonic() + 10
    while len(group_members(guard.pid)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    members = group_members(guard.pid)
    os.kill(guard.pid, signal.SIGTERM)
    assert guard.wait(timeout=15) == 128 + signal.SIGTERM
    assert wait_gone(members, 5)


def test_the_commands_status_and_no_leftovers():
    from icml25.procs import spawn

    guard = spawn(["bash", "-c", "sleep 300 & exit 3"])
    assert guard.wait(timeout=15) == 3
    assert wait_gone(group_members(guard.pid), 5)
    assert spawn(["bash", "-c", "kill -TERM $$"]).wait(timeout=15) == 128 + signal.SIGTERM


def test_stop_reaches_the_group_after_the_guard_was_killed():
    from icml25.procs import spawn

    guard = spawn(["bash", "-c", "sleep 300 & sleep 301 & wait"])
    deadline = time.monotonic() + 10
    while len(group_members(guard.pid)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    members = group_members(guard.pid)
    os.kill(guard.pid, signal.SIGKILL)
    guard.wait()
    assert any(alive(p) for p in members)  # the guard alone died...
    stop(guard, grace=2)
    assert wait_gone(members, 5)  # ...and stop() ended the rest


STAGE = """
import sys, time
from pathlib import Path
from icml25.procs import die_with_parent, exit_on_signals
die_with_parent()
with exit_on_signals():
    try:
        print("running", flush=True)
        time.sleep(120)
    finally:
        Path(sys.argv[1]).write_text("cleaned up")
"""


@pytest.mark.parametrize("shell_stays", [False, True])
def test_a_stage_stops_and_cleans_up_when_its_orchestrator_dies(tmp_path, shell_stays):
    """The orchestrator (`dvc repro`) starts the stage through `$SHELL -c`; kill -9 on the orchestrator."""
    script = tmp_path / "stage.py"
    script.write_text(STAGE)
    marker = tmp_path / "marker"
    inner = f"{sys.executable} {script} {marker}" + ("; true" if shell_stays else "")
    orchestrator = textwrap.dedent(
        f"""
        import subprocess, time
        subprocess.Popen(["bash", "-c", {inner!r}])
        time.sleep(300)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", orchestrator])
    deadline = time.monotonic() + 20
    stage = []
    while not stage and time.monotonic() < deadline:
        stage = [p for p in descendants(proc.pid) if str(script) in cmdline(p)]
        time.sleep(0.05)
    assert stage
    time.sleep(0.5)  # past die_with_parent()
    tree = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert wait_gone(stage, 10)
    assert marker.read_text() == "cleaned up"
    assert wait_gone(tree, 5)


def test_an_ignored_signal_stays_ignored():
    """`nohup icml25 run ...`: SIGHUP is ignored before the run starts, and exit_on_signals keeps it so (the run
    survives the terminal's hangup); SIGTERM still raises SystemExit inside the block."""
    from icml25.procs import exit_on_signals

    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with exit_on_signals():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            with pytest.raises(SystemExit) as info:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)
            assert info.value.code == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
