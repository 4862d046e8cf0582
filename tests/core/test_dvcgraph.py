"""flows.dvcgraph's reading of a DVC process: it ends when the process ends, even when something the process
left behind still holds the pipe (a stage's pool worker that outlived it, in a process group of its own: the
flow must not wait for it)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from flows.dvcgraph import _lines
from icml25 import procs


def test_the_output_ends_with_the_process_not_with_what_it_left_holding_the_pipe(tmp_path):
    pidfile = tmp_path / "orphan.pid"
    script = (
        f"echo first; setsid sh -c 'echo $$ > {pidfile}; sleep 30; echo never' & "
        "echo 'To track the changes with git'; echo last; sleep 0.5"
    )
    proc = procs.spawn(["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
    start = time.monotonic()
    try:
        lines = list(_lines(proc, poll=0.1))
    finally:
        procs.stop(proc, grace=1)
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
    assert lines == ["first", "last"]  # DVC's git hint left out, the orphan's line never waited for
    assert pidfile.exists() and time.monotonic() - start < 10
