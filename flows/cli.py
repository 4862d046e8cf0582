"""The installed ``icml25`` command: the core commands (:mod:`icml25.cli`) plus what sits above the core.

    icml25 run <slug>|all [--profile P] [--force] [--lock-timeout S] [--workers N] [--pool P] [--remote R]
                        reproduce through Prefect + DVC (smoke/paper profiles run in a scratch copy under
                        runs/<profile>/); --workers N: N Prefect workers in git worktrees, in parallel
    icml25 worker [--pool P] [--queue Q]
                        a Prefect worker in this clone, for `icml25 run --pool P` from any machine
    icml25 <slug> ...   a paper's own tools, e.g. `icml25 model_independence test A B`

It lives in the top layer (flows) because it composes every layer: the core never imports flows or paper code
by name. Paper tools are found by convention (``models/<slug>/cli.py`` with ``main(argv)``, for catalogue entries
with ``has_tools``) and imported only when called.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from icml25 import cli as core
from icml25.errors import UserError
from icml25.registry import CATALOGUE

TOOLS = [e.slug for e in CATALOGUE if e.has_tools]
LOCAL_POOL = "icml25-local"  # the pool of `icml25 run --workers N` (the embedded server's)
SHARED_POOL = "icml25"  # the pool of `icml25 worker` on every machine (README, Scaling out)


def cmd_run(args: argparse.Namespace) -> int:
    from flows.run import Workers, run_from_cli

    if args.lock_timeout is not None and not args.lock_timeout >= 0:
        raise UserError(f"--lock-timeout must be a number of seconds >= 0, not {args.lock_timeout}")
    workers = None
    if args.workers is not None or args.pool or args.remote or args.queue:
        if args.workers is not None and args.workers < 1:
            raise UserError(f"--workers must be at least 1, not {args.workers}")
        if args.workers is None and not args.pool:
            raise UserError("--remote and --queue go with --workers N or --pool P (README, Scaling out)")
        workers = Workers(args.workers or 0, args.pool or LOCAL_POOL, args.remote, args.queue)
    return run_from_cli(
        core.find_root(),
        args.target,
        profile=args.profile,
        force=args.force,
        lock_timeout=args.lock_timeout,
        workers=workers,
    )


def cmd_worker(args: argparse.Namespace) -> int:
    from flows.workers import run_worker

    return run_worker(core.find_root(), args.pool, args.name, args.queue, args.allow_unauthenticated)


def _extend(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="reproduce a paper (or all) through Prefect and DVC")
    r.add_argument("target", help="a paper slug or 'all'")
    r.add_argument(
        "--profile",
        default="quick",
        choices=["smoke", "quick", "paper"],
        help="quick (default) runs in this checkout; smoke and paper run in runs/<profile>/",
    )
    r.add_argument("--force", action="store_true", help="re-run every stage (no DVC run cache)")
    r.add_argument(
        "--lock-timeout",
        type=float,
        metavar="S",
        help="one run at a time per checkout: give up after S seconds if another run holds it (default: wait)",
    )
    r.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="run the papers in parallel: N Prefect workers, each in its own git worktree under runs/workers/, "
        "sharing this checkout's DVC cache",
    )
    r.add_argument(
        "--pool",
        metavar="P",
        help=f"the Prefect work pool of the workers (default {LOCAL_POOL}); without --workers, the workers that "
        "`icml25 worker` runs on other machines (PREFECT_API_URL names their server)",
    )
    r.add_argument(
        "--remote", metavar="R", help="results travel through this DVC remote (workers on other machines)"
    )
    r.add_argument("--queue", metavar="Q", help="the pool's work queue (e.g. gpu; default: default)")
    r.set_defaults(fn=cmd_run)
    w = sub.add_parser(
        "worker", help="a Prefect worker for `icml25 run --pool` in this clone (one per machine)"
    )
    w.add_argument("--pool", default=SHARED_POOL, help=f"the work pool to poll (default {SHARED_POOL})")
    w.add_argument(
        "--queue", default="default", help="the work queue to poll (default: default; gpu on a GPU machine)"
    )
    w.add_argument("--name", help="the worker's name (default: host and checkout)")
    w.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="accept a server on another host without PREFECT_API_AUTH_STRING (anyone who reaches that server "
        "runs commands on this worker: only on a network you trust fully)",
    )
    w.set_defaults(fn=cmd_worker)
    for slug in TOOLS:
        sub.add_parser(slug, help=f"tools of paper {slug} (icml25 {slug} --help)", add_help=False)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in TOOLS:  # a paper's own tools: imported only now
        return core.guarded(lambda: importlib.import_module(f"models.{argv[0]}.cli").main(argv[1:]))
    epilog = "paper tools: " + ", ".join(f"icml25 {s} --help" for s in TOOLS)
    return core.main(argv, extend=_extend, epilog=epilog)


if __name__ == "__main__":
    sys.exit(main())
