"""The embedded Prefect server of `make repro` / `icml25 run`.

Prefect's automatic temporary server prints hundreds of lines of ERROR tracebacks when it shuts down, even
after a successful run; users must never see that. Instead :func:`prefect_server` starts ``prefect server
start`` in the background (SQLite under a project-local PREFECT_HOME, UI off, analytics off, its output in
``.prefect/server.log``), waits on ``/api/health``, and stops it by PID (process group) afterwards. The server
runs under :func:`icml25.procs.spawn`'s guard, so it dies with its parent however that parent ends (``kill -9``
included). The flow itself runs in a child process that exits (and flushes its logs and events) while the server
is still up.

If PREFECT_API_URL is already set (a long-running `prefect server start` of the user's), it is used as is.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from icml25 import procs
from icml25.errors import UserError
from icml25.scratch import dvc_env
from icml25.store import free_port


def prefect_env(home: Path, api_url: str | None = None) -> dict[str, str]:
    """DVC's environment (:func:`icml25.scratch.dvc_env`) plus a project-local, quiet Prefect."""
    extra = {
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_UI_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    if api_url:
        extra["PREFECT_API_URL"] = api_url
    return dvc_env(extra)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def wait_healthy(
    url: str, timeout: float = 90.0, proc: subprocess.Popen | None = None, log_path: Path | None = None
) -> None:
    """Poll ``url``/health until the server answers; a clear error (with its log's tail) otherwise."""
    deadline = time.monotonic() + timeout
    while not _healthy(url):
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            tail = log_path.read_text(errors="replace")[-2000:] if log_path and log_path.exists() else ""
            raise UserError(
                f"the Prefect server at {url} did not start"
                + (f" (see {log_path}):\n{tail}" if log_path else "")
            )
        time.sleep(0.2)


@contextlib.contextmanager
def prefect_server(home: Path, timeout: float = 90.0, wait: bool = True) -> Iterator[str]:
    """Yield the API URL of a Prefect server (the user's, or one started here and stopped after).

    ``wait=False`` yields as soon as the server process is started, so that the caller can overlap its own
    start-up (a child importing Prefect) with the server's; the caller then waits with :func:`wait_healthy`.
    """
    if os.environ.get("PREFECT_API_URL"):
        yield os.environ["PREFECT_API_URL"]
        return
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/api"
    log = open(home / "server.log", "ab")  # noqa: SIM115 - closed below
    proc = procs.spawn(
        [
            sys.executable,
            "-m",
            "prefect",
            "server",
            "start",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-ui",
            "--analytics-off",
            "--no-services",
        ],
        env=prefect_env(home),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        with procs.exit_on_signals():  # `kill` and a closed terminal run the finally below too
            if wait:
                wait_healthy(url, timeout, proc, home / "server.log")
            yield url
    finally:
        procs.stop(proc, grace=15)
        log.close()
