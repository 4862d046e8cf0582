"""One run at a time per checkout: an exclusive ``flock`` on ``.dvc/tmp/icml25-run.lock``.

DVC does not stop two runs in one checkout from interleaving (and ``icml25 run --profile smoke`` rebuilds
``runs/smoke/`` before DVC is even called), so every run takes this lock before it touches anything.

The lock belongs to a live process: the kernel releases an ``flock`` when the last descriptor of its open file
goes away, so a run stopped in any way (Ctrl-C, SIGTERM, SIGKILL, a closed terminal) frees it and there is no
stale lock to recover. (A Prefect global concurrency limit was used before: a killed run leaked its slot, since
the embedded server runs without the services that expire leases, and every later run waited forever.)

While the lock is busy the waiter says who holds it (PID, command, since when; the holder writes that into the
lock file) and again every 30 s; ``timeout`` bounds the wait.

A run hands the lock to its children: :func:`handed_down` gives the descriptor and environment for the child
process (``ICML25_LOCK_FD``), and a child asking for the lock of the same file finds it already held (the
descriptor refers to the same open file, so the flock is theirs jointly). Within a process the lock is
re-entrant (``reproduce_all`` holds it while each ``reproduce_paper`` asks again).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import UserError

ENV = "ICML25_LOCK_FD"
REMIND_S = 30.0
_HELD: dict[Path, list[int]] = {}  # lock file -> [descriptor, depth], in this process


class LockTimeout(UserError):
    pass


def lock_path(root: Path) -> Path:
    return Path(root).resolve() / ".dvc" / "tmp" / "icml25-run.lock"


def holder(path: Path) -> str:
    """Who holds the lock, as its holder wrote it ("PID 123 `icml25 run x` since 06:30:12")."""
    try:
        doc = json.loads(path.read_text() or "{}")
        return f"PID {doc['pid']} `{doc['command']}` since {doc['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def _inherited(path: Path) -> int | None:
    """The descriptor a parent handed down for this lock file, if any (same device and inode)."""
    raw = os.environ.get(ENV, "")
    if not raw.isdigit():
        return None
    fd = int(raw)
    try:
        mine, theirs = os.fstat(fd), os.stat(path)
    except OSError:
        return None
    return fd if (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino) else None


@contextlib.contextmanager
def checkout_lock(
    root: Path, timeout: float | None = None, say: Callable[[str], None] | None = None
) -> Iterator[int]:
    """Hold ``root``'s run lock for the block; yields its descriptor. Waits (saying who holds it) at most
    ``timeout`` seconds (None: as long as it takes), then raises :class:`LockTimeout`."""
    say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
    path = lock_path(root)
    if path in _HELD:
        _HELD[path][1] += 1
        try:
            yield _HELD[path][0]
        finally:
            _HELD[path][1] -= 1
        return
    inherited = _inherited(path)
    if inherited is not None:
        _HELD[path] = [inherited, 1]
        try:
            yield inherited
        finally:
            del _HELD[path]
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, path, timeout, say)
        stamp = {
            "pid": os.getpid(),
            "command": shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "since": dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(stamp).encode(), 0)
        _HELD[path] = [fd, 1]
        try:
            yield fd
        finally:
            del _HELD[path]
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


def _acquire(fd: int, path: Path, timeout: float | None, say: Callable[[str], None]) -> None:
    start = time.monotonic()
    next_note, noted = start, False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        now = time.monotonic()
        waited = now - start
        if timeout is not None and waited >= timeout:
            raise LockTimeout(
                f"{path.parents[2]} is busy: its run lock ({path}) is held by {holder(path)}; "
                f"gave up after {waited:.0f} s"
            )
        if now >= next_note:
            what = f"still waiting ({waited:.0f} s)" if noted else "waiting"
            say(
                f"icml25: {what} for this checkout's run lock, held by {holder(path)} "
                f"({path}; one run at a time per checkout)"
            )
            next_note, noted = now + REMIND_S, True
        time.sleep(0.2)


def handed_down(fd: int) -> dict[str, str]:
    """The environment entry that hands the held lock ``fd`` to a child (pass ``fd`` in its ``pass_fds``)."""
    return {ENV: str(fd)}
