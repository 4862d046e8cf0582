"""`icml25 run <slug>|all [--profile P] [--force]` and `make repro`.

1. Check every paper's params before any work (a bad value fails here, naming its key path).
2. Profiles other than quick run in a scratch copy (runs/<profile>/, fresh DVC cache): the checkout is never
   touched by a smoke or paper run.
3. Start (or reuse) a Prefect server, run the flow in a child process (``python -m flows``), stop the server.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from flows.server import prefect_env, prefect_server
from icml25.claims import describe
from icml25.errors import UserError
from icml25.params import implemented
from icml25.reporting import claims_summary
from icml25.runner import check_all
from icml25.scratch import make_scratch


def run_from_cli(root: Path, target: str, profile: str = "quick", force: bool = False) -> int:
    params = check_all(root)
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
        code = subprocess.call(cmd, env=prefect_env(home, url), cwd=work)
    if code != 0:
        print(f"icml25: reproduction of {target} failed (exit {code}); see the log above", file=sys.stderr)
        return code
    for slug in slugs if target == "all" else [target]:
        summary = claims_summary(work, slug)
        if summary:
            print(f"{slug}: {describe(summary)} ({work / 'reports' / slug / 'README.md'})")
    return 0
