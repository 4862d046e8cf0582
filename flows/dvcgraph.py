"""What the flows need from DVC: the stage graph, which stages are stale, and running a paper or one stage.

DVC's Python API resolves paths from the current directory, so every call chdirs into the checkout (one DVC
call at a time per process, guarded by a lock). A paper runs as one ``icml25 dvc repro report@<slug>``
subprocess (:class:`PaperRun`; one stage: :func:`repro`, ``--single-item``) with this interpreter's bin first
on PATH, its output split by stage so that each task's log is that stage's own output; it runs in its own
process group under :func:`icml25.procs.spawn`'s guard, stopped with the flow however the flow ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from icml25 import procs
from icml25.scratch import dvc_env

_CHDIR = threading.Lock()


@contextlib.contextmanager
def inside(root: Path) -> Iterator[None]:
    with _CHDIR:
        before = os.getcwd()
        os.chdir(root)
        try:
            yield
        finally:
            os.chdir(before)


@dataclass(frozen=True)
class Step:
    name: str  # DVC's address: "<stage>@<slug>" or "index"
    stale: bool
    reasons: tuple[str, ...]


def plan(root: Path, names: Callable[[str], bool], force: bool = False) -> list[Step]:
    """The selected stages in execution order, each marked stale when ``dvc status`` reports it changed or any
    stage it depends on (directly or not) is stale: one ``dvc status`` for the whole plan."""
    import networkx as nx

    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    from dvc.repo import Repo

    with inside(root):
        repo = Repo(str(root))
        try:
            graph = repo.index.graph  # edges point from a stage to the stages it depends on
            status = repo.status()
            by_name = {s.addressing: s for s in graph.nodes}
            stale = set(status)
            for name in list(stale):
                if name in by_name:
                    stale |= {s.addressing for s in nx.ancestors(graph, by_name[name])}
            order = [s.addressing for s in reversed(list(nx.topological_sort(graph)))]
        finally:
            repo.close()
    return [Step(n, force or n in stale, tuple(_reasons(status.get(n, [])))) for n in order if names(n)]


def _reasons(entries: list) -> list[str]:
    out = []
    for e in entries:
        if isinstance(e, dict):
            for kind, what in e.items():
                out.append(f"{kind}: {', '.join(what) if isinstance(what, dict) else what}")
        else:
            out.append(str(e))
    return out


# DVC's advice after each run (git add dvc.lock, autostage, dvc push): noise in a flow's log.
_HINTS = (
    "To track the changes with git",
    "git add ",
    "To enable auto staging",
    "dvc config core.autostage",
    "Use `dvc push`",
)


class StageFailed(RuntimeError):
    def __init__(self, name: str, code: int, tail: str):
        super().__init__(f"{name} failed (dvc exit {code}):\n{tail}")
        self.name, self.code, self.tail = name, code, tail


def _spawn_dvc(root: Path, args: list[str]) -> subprocess.Popen:
    """``icml25 dvc <args>`` in ``root`` (DVC with the fast lock file, through the warm starter when there is
    one), under :func:`icml25.procs.spawn`'s guard, its output and errors on one pipe."""
    return procs.spawn(
        [sys.executable, "-m", "icml25", "dvc", *args],
        cwd=root,
        env=dvc_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,
    )


def _lines(proc: subprocess.Popen, poll: float = 0.5) -> Iterator[str]:
    """The process's output lines, DVC's git hints and blank lines left out, until the process has ended and
    its pipe has nothing more to read: a process it left behind that still holds the pipe (a stage's pool
    worker) cannot keep the flow waiting."""
    import select

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    pending = b""

    def split(data: bytes) -> Iterator[str]:
        for raw in data.decode(errors="replace").splitlines():
            line = raw.rstrip()
            if line and not line.strip().startswith(_HINTS):
                yield line

    while True:
        ready, _, _ = select.select([fd], [], [], poll)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            pending += chunk
            done, _, pending = pending.rpartition(b"\n")
            yield from split(done)
        elif proc.poll() is not None:
            break
    yield from split(pending)


def dvc_command(root: Path, args: list[str], emit: Callable[[str], None], name: str | None = None) -> None:
    """``dvc <args>`` in ``root``, its output line by line to ``emit`` (DVC's git hints left out); raises
    :class:`StageFailed` on a non-zero exit, with the last lines of its output."""
    proc = _spawn_dvc(root, args)
    tail: list[str] = []
    try:
        for line in _lines(proc):
            emit(line)
            tail = (tail + [line])[-15:]
        code = proc.wait()
    finally:  # this flow stopped (a signal, a cancelled run): so does dvc and the stage it runs
        procs.stop(proc)
    if code != 0:
        raise StageFailed(name or f"dvc {' '.join(args)}", code, "\n".join(tail))


_MARK = re.compile(r"^(?:Running stage|Stage) '([^']+)'")


class PaperRun:
    """One ``dvc repro <target>`` (the target and every stage upstream of it, in DVC's order: each stage runs
    when DVC finds its code, params or data changed), its output read as it comes: :meth:`items` yields the
    name of each stage DVC turns to, and :meth:`follow` reads that stage's lines until DVC turns to the next
    one. One DVC process for a whole paper: its start-up and graph are paid once, not once per stage."""

    def __init__(self, root: Path, target: str, force: bool):
        self.proc = _spawn_dvc(root, ["repro", target] + (["--force", "--no-run-cache"] if force else []))
        self._lines = _lines(self.proc)
        self.root, self.target = root, target
        self._pending: str | None = None
        self.tail: list[str] = []
        self.ran: list[str] = []  # the stages DVC ran, in order

    def __enter__(self) -> PaperRun:
        return self

    def __exit__(self, *exc: object) -> None:
        procs.stop(self.proc)  # a failed or stopped flow stops dvc and the stage it runs

    def _next(self) -> str | None:
        if self._pending is not None:
            line, self._pending = self._pending, None
            return line
        line = next(self._lines, None)
        if line is not None:
            self.tail = (self.tail + [line])[-15:]
        return line

    def items(self, emit: Callable[[str], None]) -> Iterator[str]:
        """The stages DVC turns to, in order; lines outside any stage go to ``emit``. Raises
        :class:`StageFailed` when DVC fails outside a stage."""
        while True:
            line = self._next()
            if line is None:
                self.check(self.target)
                return
            found = _MARK.match(line)
            if found:
                self._pending = line
                yield found.group(1)
            else:
                emit(line)

    def follow(self, name: str, emit: Callable[[str], None]) -> bool:
        """Read stage ``name``'s lines to ``emit`` until DVC turns to another stage or ends; whether it ran
        (False: DVC found it unchanged). Raises :class:`StageFailed` when DVC failed in it."""
        first = self._next()
        ran = first is not None and not first.endswith("didn't change, skipping")
        if ran:
            self.ran.append(name)
        if first is not None:
            emit(first)
        while True:
            line = self._next()
            if line is None:
                self.check(name)
                return ran
            if _MARK.match(line):
                self._pending = line
                return ran
            emit(line)

    def check(self, name: str) -> None:
        code = self.proc.wait()
        if code != 0:
            raise StageFailed(name, code, "\n".join(self.tail))


def repro(root: Path, name: str, force: bool, emit: Callable[[str], None]) -> None:
    """``dvc repro --single-item name`` (``--force --no-run-cache`` when forced), its output line by line."""
    args = ["repro", "--single-item", name]
    if force:
        args += ["--force", "--no-run-cache"]
    dvc_command(root, args, emit, name)
