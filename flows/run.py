"""`icml25 run <slug>|all [--profile P] [--force]` and `make repro`.

1. Check every paper's params before any work (a bad value fails here, naming its key path).
2. Then take the checkout's run lock (:mod:`icml25.lock`) before touching anything: a second run waits, saying
   which run holds it (``--lock-timeout`` bounds the wait). The flow inherits the lock.
3. Profiles other than quick run in a scratch copy (runs/<profile>/, fresh DVC cache, rebuilt under the lock):
   the checkout is never touched by a smoke or paper run.
4. Start (or reuse) a Prefect server, run the flow in a child process (``python -m flows``), stop the server.
   Both run under :func:`icml25.procs.spawn`'s guard: however this process ends (Ctrl-C, SIGTERM, SIGHUP,
   SIGKILL), the flow, its ``dvc repro`` and the stage it runs are stopped with it, and nothing writes to the
   checkout after this command has exited.
5. With ``--workers N`` the flow is ``reproduce-parallel`` (:mod:`flows.distributed`): N git worktrees under
   runs/workers/ on this checkout's DVC cache (:mod:`flows.worktrees`), N Prefect process workers in them on the
   work pool ``--pool`` (their logs in runs/workers/w<i>.log), stopped with the run. With ``--pool`` alone the
   workers are someone else's (``icml25 worker`` on other machines, the Prefect server of PREFECT_API_URL) and
   ``--remote`` names the DVC remote the results travel through.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from flows.distributed import DEFAULT_QUEUE
from flows.server import prefect_env, prefect_server
from icml25 import procs
from icml25.claims import describe
from icml25.errors import UserError
from icml25.lock import checkout_lock, handed_down
from icml25.params import implemented
from icml25.progress import last_table
from icml25.reporting import claims_summary
from icml25.runner import check_all
from icml25.scratch import make_scratch
from icml25.warm import warm_starter


@dataclass(frozen=True)
class Workers:
    """How ``reproduce-parallel`` runs: ``local`` workers started here (0: none), on ``pool``; results through
    ``remote`` (None: the shared cache); runs go to ``queue``."""

    local: int
    pool: str
    remote: str | None = None
    queue: str | None = None


def run_from_cli(
    root: Path,
    target: str,
    profile: str = "quick",
    force: bool = False,
    lock_timeout: float | None = None,
    workers: Workers | None = None,
) -> int:
    check_all(root)  # a bad value fails before anything is written, the lock file included
    if workers is not None:
        _check_workers(root, workers)
    with procs.exit_on_signals(), checkout_lock(root, timeout=lock_timeout) as lock_fd:
        return _run_locked(root, target, profile, force, lock_fd, workers)


def _check_workers(root: Path, workers: Workers) -> None:
    import os

    from icml25.store import configured_remote

    if workers.local < 0:
        raise UserError(f"--workers must be a number of workers >= 1, not {workers.local}")
    if workers.local == 0 and not os.environ.get("PREFECT_API_URL"):
        raise UserError(
            f"--pool {workers.pool} without --workers uses the workers of a shared Prefect server: set "
            "PREFECT_API_URL to it (README, Scaling out)"
        )
    if workers.remote and not configured_remote(root, workers.remote):
        raise UserError(
            f"--remote {workers.remote}: the DVC remote is not configured here (no endpoint or credentials; "
            "see README, Sharing artifacts through S3)"
        )


def _start_workers(work: Path, workers: Workers, env: dict[str, str], home: Path, url: str) -> list:
    """The local workers: N worktrees of ``work``, a Prefect process worker in each (the server must answer
    first: a worker gives up on a server that is not there)."""
    from flows.server import wait_healthy
    from flows.workers import start_worker
    from flows.worktrees import WORKERS_DIR, prepare

    if workers.local == 0:
        return []
    trees = prepare(work, workers.local, say=lambda msg: print(msg, flush=True))
    wait_healthy(url, log_path=home / "server.log")
    logs = work / WORKERS_DIR
    return [
        start_worker(
            tree, workers.pool, tree.name, env, logs / f"{tree.name}.log", workers.queue or DEFAULT_QUEUE
        )
        for tree in trees
    ]


def _run_locked(
    root: Path, target: str, profile: str, force: bool, lock_fd: int, workers: Workers | None = None
) -> int:
    params = check_all(root)  # again: params.yaml may have changed while this run waited
    slugs = implemented(params)
    if target != "all" and target not in slugs:
        from icml25.registry import entry

        entry(target)  # unknown slug -> its own message
        raise UserError(f"paper {target!r} is planned, not implemented yet (implemented: {', '.join(slugs)})")
    work = root
    if profile != "quick":
        work = make_scratch(root, profile, local_config=bool(workers and workers.remote))
        check_all(work)
        print(f"profile {profile}: running in {work}", flush=True)
    home = root / ".prefect"
    began = time.time()
    # the warm starter imports the stages' libraries while the Prefect server starts (icml25.warm); workers
    # in their own worktrees start their own
    with (
        warm_starter(work) if workers is None else contextlib.nullcontext(),
        prefect_server(home, wait=False) as url,
    ):  # the child imports Prefect while the server starts
        cmd = [sys.executable, "-m", "flows", target, "--root", str(work), "--wait-for-server"]
        cmd += ["--force"] if force else []
        env = prefect_env(home, url) | handed_down(lock_fd)
        started = []
        if workers is not None:
            cmd += ["--pool", workers.pool]
            cmd += ["--remote", workers.remote] if workers.remote else []
            cmd += ["--queue", workers.queue] if workers.queue else []
            cmd += ["--profile", profile] if workers.remote and profile != "quick" else []
            started = _start_workers(work, workers, prefect_env(home, url), home, url)
        try:
            proc = procs.spawn(cmd, pass_fds=(lock_fd,), env=env, cwd=work)
            try:
                code = proc.wait()
            finally:
                procs.stop(proc)
        finally:
            for worker in started:
                procs.stop(worker, grace=15)
    if code != 0:
        print(f"icml25: reproduction of {target} failed (exit {code}); see the log above", file=sys.stderr)
        return code
    table = last_table(work, began) if target == "all" else None
    if table:  # the final table names every paper's claims (and where its report is: reports/<slug>/)
        print(table, flush=True)
        return 0
    for slug in slugs if target == "all" else [target]:
        summary = claims_summary(work, slug)
        if summary:
            print(f"{slug}: {describe(summary)} ({work / 'reports' / slug / 'README.md'})")
    return 0
