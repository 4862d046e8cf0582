"""Prefect process workers for ``reproduce-on-worker`` runs: ``icml25 worker`` (one per machine, in its clone)
and the N local workers of ``icml25 run all --workers N`` (one per worktree).

A worker is ``prefect worker start --pool P --type process --limit 1``: one flow run at a time, since a checkout
runs one DVC pipeline at a time. It polls only its queue (``default`` unless told: a GPU machine's worker polls
``gpu``, so that CPU workers never take the paper profile's runs). Its environment names its checkout
(``ICML25_CHECKOUT``, where the deployment's pull step moves each flow run), puts this interpreter's bin first on
PATH (the stages' ``python``) and polls every second instead of Prefect's default 10 s.
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


def run_worker(checkout: Path, pool: str, name: str | None, queue: str | None) -> int:
    """``icml25 worker``: a worker in the foreground until Ctrl-C (its output on this terminal)."""
    from prefect.settings import get_current_settings

    from icml25.errors import UserError
    from icml25.store import configured_remote

    if not get_current_settings().api.url:
        raise UserError(
            "icml25 worker needs the Prefect server that the coordinator uses: set PREFECT_API_URL "
            "(e.g. `prefect config set PREFECT_API_URL=http://HOST:4200/api`)"
        )
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
