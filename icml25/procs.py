"""Child processes that never outlive the process that started them.

A long stage, the embedded Prefect server and the local S3 server are started by a parent that a user may stop
in any way: Ctrl-C, ``kill`` (SIGTERM), closing the terminal (SIGHUP) or ``kill -9``. The last cannot be caught,
so cleanup cannot rest on the parent's ``finally`` alone. Two mechanisms:

* :func:`spawn` starts a command under a *guard*: a small Python process (``python -m icml25.procs``) that leads
  a new session (so its process group is the command and everything the command starts), asks the kernel to
  send it SIGTERM when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``; elsewhere it polls its parent PID),
  and on SIGTERM, SIGHUP, SIGINT, the parent's death or the command's own exit stops every other member of its
  group: SIGTERM, a grace period, then SIGKILL. :func:`stop` stops a guarded command from the parent's side
  (the group, so it works even if the guard itself was killed).
* :func:`die_with_parent` is for a process that DVC starts (``python -m icml25 stage``): when ``dvc repro`` is
  killed, the stage is sent SIGTERM, which :func:`exit_on_signals` turns into ``SystemExit`` so that its
  ``finally`` blocks remove the half-written output.

The guard imports nothing heavy (start-up is about 30 ms).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

GRACE_S = 10.0
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
_PR_SET_PDEATHSIG = 1


def _pdeathsig(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent (thread) dies; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


_SHELLS = {"sh", "bash", "dash", "zsh", "fish", "ksh"}


class ProcStat(NamedTuple):
    state: str  # "R", "S", "Z" (zombie), ...
    ppid: int
    pgrp: int


def proc_stat(pid: int | str) -> ProcStat | None:
    """State, parent PID and process group of ``pid`` from Linux's /proc/<pid>/stat; None if gone or unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        state, ppid, pgrp = stat[stat.rfind(")") + 2 :].split()[:3]  # after "pid (comm) "
        return ProcStat(state, int(ppid), int(pgrp))
    except (OSError, ValueError):
        return None


def proc_pids() -> list[int]:
    """Every PID in /proc."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _ppid_of(pid: int) -> int | None:
    """The parent PID of ``pid`` (Linux /proc), None if it is gone or unknown."""
    st = proc_stat(pid)
    return None if st is None else st.ppid


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Receive ``sig`` when the parent process dies (kernel-delivered on Linux, else a 1 s polling thread).

    DVC starts a stage as ``$SHELL -c CMD``; the usual shells exec CMD, but where the shell stays in between,
    the shell's own parent (``dvc repro``) is watched too, by polling every second. Exits at once (status
    128 + sig) if the parent is already gone."""
    parent = os.getppid()
    kernel = _pdeathsig(sig)
    grandparent = _ppid_of(parent) if _comm(parent) in _SHELLS else None

    def alive() -> bool:
        if os.getppid() != parent:
            return False
        return grandparent is None or _ppid_of(parent) == grandparent

    if not kernel or grandparent is not None:

        def watch() -> None:
            while alive():
                time.sleep(1.0)
            os.kill(os.getpid(), sig)

        threading.Thread(target=watch, name="icml25-parent-watch", daemon=True).start()
    if not alive() or parent == 1:  # the parent died before the request took effect
        sys.exit(128 + int(sig))


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def exit_on_signals(signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP)) -> Iterator[None]:
    """Within the block (main thread only), SIGTERM and SIGHUP raise ``SystemExit(128 + signal)``, so that
    ``finally`` blocks and context managers run; the previous handlers are restored after. A signal this
    process ignores (``nohup`` ignores SIGHUP) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # a signal set to be ignored stays ignored: `nohup icml25 run ...` must survive the terminal's hangup
    previous = {s: signal.signal(s, _raise_exit) for s in signals if signal.getsignal(s) != signal.SIG_IGN}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def spawn(cmd: Sequence[str], *, pass_fds: Sequence[int] = (), **kwargs: Any) -> subprocess.Popen:
    """Start ``cmd`` under a guard (see the module docstring) in a new session; returns the guard's Popen.

    The guard exits with the command's status (128 + signal when a signal stopped it). ``pass_fds`` are kept
    open in the command (e.g. the checkout lock's descriptor); other keyword arguments go to ``Popen``."""
    guard = [sys.executable, "-m", "icml25.procs", str(os.getpid())]
    guard += [f"--keep-fd={fd}" for fd in pass_fds]
    return subprocess.Popen([*guard, "--", *cmd], start_new_session=True, pass_fds=tuple(pass_fds), **kwargs)


def stop(proc: subprocess.Popen, grace: float = GRACE_S) -> int | None:
    """Stop a process started by :func:`spawn` (or any session leader) and everything in its group: SIGTERM to
    the group, up to ``grace`` seconds, then SIGKILL to whatever is left, also when the wait is interrupted (a
    second Ctrl-C). Returns the exit status."""
    try:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace)
    finally:
        # the guard may be gone while members of its group are not (a guard killed with SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.wait()


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``, from /proc on Linux, else from ``ps``."""
    found = []
    if os.path.isdir("/proc/self"):
        for pid in proc_pids():
            st = proc_stat(pid)
            if st is not None and st.state != "Z" and st.pgrp == pgid:
                found.append(pid)
        return found
    out = subprocess.run(["ps", "-A", "-o", "pid=,pgid=,stat="], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and int(parts[1]) == pgid and not parts[2].startswith("Z"):
            found.append(int(parts[0]))
    return found


def _stop_others(grace: float) -> None:
    """SIGTERM every other member of this process's group, wait up to ``grace`` s, SIGKILL the rest."""
    me = os.getpid()
    pgid = os.getpgid(0)
    others = [p for p in group_members(pgid) if p != me]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while others and time.monotonic() < deadline:
            time.sleep(0.05)
            others = [p for p in group_members(pgid) if p != me]
        if not others:
            return


def _guard(argv: list[str]) -> int:
    parent = int(argv[0])
    keep = [int(a.split("=", 1)[1]) for a in argv[1:] if a.startswith("--keep-fd=")]
    cmd = argv[argv.index("--") + 1 :]
    stopping: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        stopping.append(signum)

    for s in _STOP_SIGNALS:
        if (
            signal.getsignal(s) != signal.SIG_IGN
        ):  # what the parent ignores (nohup: SIGHUP), the guard does too
            signal.signal(s, on_signal)
    _pdeathsig(signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the request took effect
        return 128 + signal.SIGTERM
    try:
        child = subprocess.Popen(cmd, pass_fds=keep)
    except OSError as exc:
        print(f"icml25: cannot start {cmd[0]}: {exc}", file=sys.stderr)
        return 127
    for fd in keep:  # only the command holds them now
        with contextlib.suppress(OSError):
            os.close(fd)
    while True:
        if stopping or os.getppid() != parent:
            signum = stopping[0] if stopping else signal.SIGTERM
            for s in _STOP_SIGNALS:
                signal.signal(s, signal.SIG_IGN)
            _stop_others(GRACE_S)
            child.wait()
            return 128 + int(signum)
        try:
            code = child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            continue
        _stop_others(2.0)  # whatever the command left behind in its group
        return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(_guard(sys.argv[1:]))
