"""Prefect process workers for ``reproduce-on-worker`` runs: ``icml25 worker`` (one per machine, in its clone)
and the N local workers of ``icml25 run all --workers N`` (one per worktree).

A worker is ``prefect worker start --pool P --type process --limit 1``: one flow run at a time, since a checkout
runs one DVC pipeline at a time. It polls only its queue (``default`` unless told: a GPU machine's worker polls
``gpu``, so that CPU workers never take the paper profile's runs). Its environment names its checkout
(``ICML25_CHECKOUT``, where the deployments' pull step, :mod:`flows.checkout`, moves each flow run), puts this
interpreter's bin first on PATH (the stages' ``python``) and polls every second instead of Prefect's default 10 s.
``icml25 worker`` refuses a Prefect server on another host that it would reach without authentication
(:func:`check_server`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flows.distributed import CHECKOUT_ENV, DEFAULT_QUEUE, WORKER_ENV
from icml25 import procs
from icml25.scratch import dvc_env

POLL_S = "1"


def worker_command(pool: str, name: str, queue: str | None = DEFAULT_QUEUE) -> list[str]:
    cmd = [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool, "--type", "process"]
    cmd += ["--limit", "1", "--name", name, "--install-policy", "never"]
    return cmd + (["--work-queue", queue] if queue else [])


def worker_env(checkout: Path, name: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dvc_env(extra)
    env.pop("ICML25_LOCK_FD", None)  # the asking checkout's lock is not the worker's
    env.update(
        {
            CHECKOUT_ENV: str(checkout),
            WORKER_ENV: name,
            "PREFECT_WORKER_QUERY_SECONDS": POLL_S,
            "PREFECT_WORKER_PREFETCH_SECONDS": "0",
            "DO_NOT_TRACK": "1",
        }
    )
    return env


def start_worker(
    checkout: Path, pool: str, name: str, env: dict[str, str], log: Path, queue: str | None = DEFAULT_QUEUE
) -> subprocess.Popen:
    """A worker in ``checkout`` under :func:`icml25.procs.spawn`'s guard (it dies with this process), its output
    (and that of the flow runs it starts) appended to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return procs.spawn(
            worker_command(pool, name, queue),
            cwd=checkout,
            env=worker_env(checkout, name, env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (localhost, 127.0.0.0/8, ::1): a local server or an SSH tunnel's end."""
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_server(url: str, authenticated: bool, allow_unauthenticated: bool = False) -> None:
    """Refuse (UserError) a Prefect server on another host that this worker reaches without Prefect's API
    authentication: a worker runs whatever its pool's deployments name (their pull steps and entrypoints), so
    anyone who reaches such a server runs commands on every worker (README, Scaling out)."""
    from icml25.errors import UserError

    if authenticated or allow_unauthenticated or is_loopback(url):
        return
    raise UserError(
        f"refusing the Prefect server {url} without authentication: anyone who reaches it runs commands on this "
        "worker. Start the server with PREFECT_SERVER_API_AUTH_STRING=user:secret and set the same in "
        "PREFECT_API_AUTH_STRING here, or reach it through an SSH tunnel (`ssh -N -L 4200:127.0.0.1:4200 SERVER`, "
        "PREFECT_API_URL=http://127.0.0.1:4200/api); --allow-unauthenticated on a network you trust fully"
    )


def run_worker(
    checkout: Path, pool: str, name: str | None, queue: str | None, allow_unauthenticated: bool = False
) -> int:
    """``icml25 worker``: a worker in the foreground until Ctrl-C (its output on this terminal). It refuses a
    server on another host without authentication (:func:`check_server`)."""
    from prefect.settings import get_current_settings

    from icml25.errors import UserError
    from icml25.store import configured_remote

    api = get_current_settings().api
    if not api.url:
        raise UserError(
            "icml25 worker needs the Prefect server that the coordinator uses: set PREFECT_API_URL "
            "(e.g. `prefect config set PREFECT_API_URL=http://HOST:4200/api`)"
        )
    # Prefect's basic authentication (a self-hosted server), or an API key (Prefect Cloud)
    auth = any(secret and secret.get_secret_value() for secret in (api.auth_string, api.key))
    check_server(api.url, auth, allow_unauthenticated)
    name = name or f"{os.uname().nodename}-{checkout.name}"
    remote = configured_remote(checkout)
    print(
        f"worker {name}: pool {pool}, queue {queue or 'all'}, checkout {checkout}, "
        + (
            f"DVC remote {remote!r}"
            if remote
            else "no DVC remote configured (only same-machine runs can use it)"
        ),
        flush=True,
    )
    proc = procs.spawn(worker_command(pool, name, queue), cwd=checkout, env=worker_env(checkout, name))
    with procs.exit_on_signals():
        try:
            return proc.wait()
        except KeyboardInterrupt:
            return 130
        finally:
            procs.stop(proc)
