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
"""

from __future__ import annotations

import sys
from pathlib import Path

from flows.server import prefect_env, prefect_server
from icml25 import procs
from icml25.claims import describe
from icml25.errors import UserError
from icml25.lock import checkout_lock, handed_down
from icml25.params import implemented
from icml25.reporting import claims_summary
from icml25.runner import check_all
from icml25.scratch import make_scratch


def run_from_cli(
    root: Path, target: str, profile: str = "quick", force: bool = False, lock_timeout: float | None = None
) -> int:
    check_all(root)  # a bad value fails before anything is written, the lock file included
    with procs.exit_on_signals(), checkout_lock(root, timeout=lock_timeout) as lock_fd:
        return _run_locked(root, target, profile, force, lock_fd)


def _run_locked(root: Path, target: str, profile: str, force: bool, lock_fd: int) -> int:
    params = check_all(root)  # again: params.yaml may have changed while this run waited
    slugs = implemented(params)
    if target != "all" and target not in slugs:
        from icml25.registry import entry

        entry(target)  # unknown slug -> its own message
        raise UserError(f"paper {target!r} is planned, not implemented yet (implemented: {', '.join(slugs)})")
    work = root
    if profile != "quick":
        work = make_scratch(root, profile)
        check_all(work)
        print(f"profile {profile}: running in {work}", flush=True)
    home = root / ".prefect"
    with prefect_server(home, wait=False) as url:  # the child imports Prefect while the server starts
        cmd = [sys.executable, "-m", "flows", target, "--root", str(work), "--wait-for-server"]
        cmd += ["--force"] if force else []
        env = prefect_env(home, url) | handed_down(lock_fd)
        proc = procs.spawn(cmd, pass_fds=(lock_fd,), env=env, cwd=work)
        try:
            code = proc.wait()
        finally:
            procs.stop(proc)
    if code != 0:
        print(f"icml25: reproduction of {target} failed (exit {code}); see the log above", file=sys.stderr)
        return code
    for slug in slugs if target == "all" else [target]:
        summary = claims_summary(work, slug)
        if summary:
            print(f"{slug}: {describe(summary)} ({work / 'reports' / slug / 'README.md'})")
    return 0
