"""The warm starter: stage processes forked from a parent that has already imported the heavy libraries.

Every DVC stage is a new ``python -m icml25 stage <slug> <stage>`` process, and a new process pays for its
imports before it computes anything: Lightning alone takes about 7 s on these machines, Great Expectations about
4 s, torch 2 s. Over a run's 114 stage processes that was minutes of the quick profile. The flow therefore
starts one *warm starter* per run (:func:`warm_starter`):

* **server** (``python -m icml25.warm serve <socket> [<module>,...]``): imports the third-party libraries the stages
  use (:data:`PRELOAD`; never the project's own code), then waits on a Unix socket. For each request from a
  client of the same Python environment (``sys.prefix``; any checkout of the project) it forks a child that
  takes over the client's standard input, output and error (passed over the socket), its working directory,
  environment and arguments, drops every project module (so the stage's code is read from disk at that
  moment, from the client's checkout: what its code fingerprint hashed), and runs ``icml25``'s command line as
  a fresh process would.
  The child leads its own process group and receives SIGTERM if the server dies.
* **client** (``python -m icml25 stage|code ...`` with ``ICML25_WARM`` set, what DVC starts): sends the request,
  forwards SIGTERM, SIGINT and SIGHUP to the child's group, and exits with the child's status (128 + signal when
  a signal stopped it). When the client disappears (``dvc repro`` killed, ``kill -9``), the server stops the
  child (SIGTERM, then SIGKILL after :data:`GRACE_S`). When no server answers, the client runs the command
  itself (a *cold* start) and says so.

The server is single-threaded (a selector over the socket, the client connections and the children's pidfds),
so a fork never copies a lock that another thread holds. Results do not depend on it: a stage's randomness comes
from its own seeded streams, and the child's libraries are in the state a fresh import leaves them in. Set
``ICML25_COLD=1`` to start every stage cold.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: What goes through the warm starter: the commands of dvc.yaml, and DVC itself (the flows' ``icml25 dvc``).
COMMANDS = ("stage", "code", "dvc")
#: Third-party modules the server imports once (a module that fails to import is left out).
PRELOAD = (
    "numpy",
    "scipy.optimize",
    "scipy.stats",
    "pandas",
    "yaml",
    "omegaconf",
    "sklearn.linear_model",
    "torch",
    "lightning.pytorch",
    "great_expectations",
    "matplotlib.pyplot",
    "safetensors.torch",
    "dvc.cli",
    "dvc.repo.reproduce",
    "dvc.stage",
    "dvc.dvcfile",
    "ruamel.yaml",
)
#: Modules that belong to the project: a child imports them afresh from disk.
PROJECT = ("icml25", "stages", "models", "flows", "benchmarks")
GRACE_S = 10.0
_HEADER = struct.Struct("!I")
_STATUS = struct.Struct("!i")


def _send_msg(sock: socket.socket, doc: dict, fds: list[int]) -> None:
    data = json.dumps(doc).encode()
    socket.send_fds(sock, [_HEADER.pack(len(data)) + data], fds)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the warm starter closed the connection")
        buf += chunk
    return buf


# --------------------------------------------------------------------------------------------------- client


def delegate(argv: list[str]) -> int | None:
    """Run ``icml25 <argv>`` in a child of the warm starter named by ``ICML25_WARM``; its exit status, or None
    when no server answers (the caller then starts cold)."""
    address = os.environ.get("ICML25_WARM", "")
    if not address or os.environ.get("ICML25_COLD") == "1":
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(address)
        request = {
            "argv": argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "started": process_start(),
            "prefix": sys.prefix,
        }
        _send_msg(sock, request, [0, 1, 2])
        (pid,) = _STATUS.unpack(_recv_exact(sock, _STATUS.size))
    except OSError as exc:
        sock.close()
        print(f"icml25: the warm starter at {address} did not answer ({exc}); starting cold", file=sys.stderr)
        return None
    if pid <= 0:  # refused (another environment's python): start cold
        sock.close()
        return None
    from .procs import die_with_parent

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(s) != signal.SIG_IGN:
            signal.signal(s, forward)
    if "DVC_STAGE" in os.environ:  # `dvc repro` killed: this client gets SIGTERM and forwards it
        die_with_parent()
    try:
        (status,) = _STATUS.unpack(_recv_exact(sock, _STATUS.size))
    except (OSError, ConnectionError) as exc:
        print(f"icml25: lost the warm starter ({exc})", file=sys.stderr)
        return 1
    finally:
        sock.close()
    return status if status >= 0 else 128 - status


#: In a forked child, when its client started (epoch seconds): the stage's own start, for its record.
CLIENT_STARTED: float | None = None


def started_at() -> float | None:
    """When the process that asked for this command started: the warm starter's client, else this process."""
    return CLIENT_STARTED if CLIENT_STARTED is not None else process_start()


def process_start() -> float | None:
    """When this process started (epoch seconds, from /proc), or None where unknown."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------------------------------- server


@dataclass
class _Child:
    pid: int
    conn: socket.socket
    pidfd: int
    kill_at: float | None = None


def preload(names: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import ``names``; the modules that failed (left to each child)."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a missing optional library is the child's business
            failed.append(name)
    return failed


def serve(address: str, names: tuple[str, ...] = PRELOAD) -> int:
    """The server loop (module docstring). Stops on SIGTERM/SIGINT/SIGHUP, stopping its children first."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(address)  # left by a server that was killed
    listener.bind(address)
    listener.listen(64)  # clients queue here while the preload runs
    stopping: list[int] = []
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, lambda signum, frame: stopping.append(signum))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    preload(names)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    children: dict[int, _Child] = {}
    try:
        while not stopping:
            for key, _ in sel.select(timeout=1.0):
                kind = key.data
                if kind == "accept":
                    _accept(listener, sel, children)
                elif kind == "wake":
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 512)
                elif kind[0] == "conn":  # the client hung up before its child ended: stop the child
                    child = children[kind[1]]
                    sel.unregister(child.conn)
                    if child.kill_at is None:
                        _signal(child.pid, signal.SIGTERM)
                        child.kill_at = time.monotonic() + GRACE_S
                elif kind[0] == "exit":
                    _reap(children.pop(kind[1]), sel)
            for child in children.values():
                if child.kill_at is not None and time.monotonic() > child.kill_at:
                    _signal(child.pid, signal.SIGKILL)
    finally:
        for child in children.values():
            _signal(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        for child in list(children.values()):
            while time.monotonic() < deadline and _alive(child.pid):
                time.sleep(0.05)
            _signal(child.pid, signal.SIGKILL)
            _reap(child, sel)
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(address)
    return 0


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _alive(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == 0


def _reap(child: _Child, sel: selectors.BaseSelector) -> None:
    try:
        _, status = os.waitpid(child.pid, 0)
        code = os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        code = -int(signal.SIGKILL)
    for obj in (child.conn, child.pidfd):
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(obj)
    with contextlib.suppress(OSError):
        child.conn.sendall(_STATUS.pack(code))
    child.conn.close()
    os.close(child.pidfd)


def _accept(listener: socket.socket, sel: selectors.BaseSelector, children: dict[int, _Child]) -> None:
    conn, _ = listener.accept()
    try:
        head, fds, _flags, _addr = socket.recv_fds(conn, _HEADER.size, 3)
        (size,) = _HEADER.unpack(head)
        request = json.loads(_recv_exact(conn, size))
    except (OSError, ValueError, ConnectionError, struct.error):
        conn.close()
        return
    argv = request.get("argv") or [""]
    if request.get("prefix") != sys.prefix or argv[0] not in COMMANDS:
        conn.sendall(_STATUS.pack(0))  # another environment's libraries: the client starts cold
        conn.close()
        for fd in fds:
            os.close(fd)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child (tested end to end)
        _child(
            request, fds, [listener.fileno(), conn.fileno(), *(c.conn.fileno() for c in children.values())]
        )
    for fd in fds:
        os.close(fd)
    conn.sendall(_STATUS.pack(pid))
    pidfd = os.pidfd_open(pid)
    children[pid] = _Child(pid, conn, pidfd)
    sel.register(conn, selectors.EVENT_READ, ("conn", pid))
    sel.register(pidfd, selectors.EVENT_READ, ("exit", pid))


def _child(request: dict, fds: list[int], close: list[int]) -> None:  # pragma: no cover - a forked child
    """Become ``python -m icml25 <argv>`` in the client's place; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from .procs import _pdeathsig

        _pdeathsig(signal.SIGTERM)
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own streams
        sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [sys.argv[0], *request["argv"]]
        sys.path[0] = request["cwd"]
        for name in [m for m in sys.modules if m.split(".")[0] in PROJECT]:
            del sys.modules[name]
        importlib.invalidate_caches()
        # the server runs as __main__: the module the stage imports is a fresh icml25.warm
        importlib.import_module("icml25.warm").CLIENT_STARTED = request.get("started")
        cli = importlib.import_module("icml25.cli")
        code = int(cli.main(request["argv"]) or 0)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # noqa: BLE001 - what a fresh interpreter would print
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        _exit_as_an_interpreter_does(code)


def _exit_as_an_interpreter_does(code: int) -> None:  # pragma: no cover - a forked child
    """End the child as a finished interpreter ends, then ``os._exit`` (never the server's stack): join the
    non-daemon threads and run the thread-exit hooks (``threading._shutdown``: concurrent.futures and joblib's
    loky stop their worker processes there, which otherwise outlive the stage holding its output pipe), then
    the ``atexit`` functions, logging's flush, the streams'."""
    import atexit
    import threading

    for step in (threading._shutdown, atexit._run_exitfuncs):  # type: ignore[attr-defined]
        with contextlib.suppress(BaseException):
            step()
    with contextlib.suppress(Exception):
        import logging

        logging.shutdown()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


# --------------------------------------------------------------------------------------------------- the run


@contextlib.contextmanager
def warm_starter(root: Path, names: tuple[str, ...] = PRELOAD) -> Iterator[str | None]:
    """A warm starter (started in ``root``) for the stages DVC runs while the block runs, ``names`` imported:
    ``ICML25_WARM`` names it in this process's environment (which DVC and its stages inherit). Yields its
    address; None when disabled (``ICML25_COLD=1``) or when one is already running for this process (the outer
    one serves)."""
    if os.environ.get("ICML25_COLD") == "1" or os.environ.get("ICML25_WARM"):
        yield None
        return
    from . import procs

    folder = tempfile.mkdtemp(prefix="icml25-warm-")
    address = os.path.join(folder, "sock")
    cmd = [sys.executable, "-m", "icml25.warm", "serve", address, ",".join(names)]
    proc = procs.spawn(cmd, cwd=root)
    deadline = time.monotonic() + 30.0
    while not os.path.exists(address) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.environ["ICML25_WARM"] = address
    try:
        yield address
    finally:
        os.environ.pop("ICML25_WARM", None)
        procs.stop(proc, grace=GRACE_S + 5)
        with contextlib.suppress(OSError):
            os.unlink(address)
        with contextlib.suppress(OSError):
            os.rmdir(folder)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1] != "serve":
        sys.exit("usage: python -m icml25.warm serve <socket> [<module>,<module>...]")
    names = tuple(n for n in sys.argv[3].split(",") if n) if len(sys.argv) == 4 else PRELOAD
    sys.exit(serve(sys.argv[2], names))
