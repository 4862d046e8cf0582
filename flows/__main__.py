"""``python -m flows <slug>|all --root R [--force] [--pool P [--remote R] [--queue Q] [--profile P]]``: run one
flow in this process (PREFECT_API_URL set): reproduce-paper / reproduce-all, or with ``--pool`` reproduce-parallel
(:mod:`flows.distributed`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m flows")
    p.add_argument("target")
    p.add_argument("--root", required=True)
    p.add_argument("--force", action="store_true")
    p.add_argument("--wait-for-server", action="store_true", help="poll PREFECT_API_URL/health first")
    p.add_argument("--pool", help="reproduce-parallel through this work pool's workers")
    p.add_argument("--remote", help="with --pool: results through this DVC remote")
    p.add_argument("--queue", help="with --pool: the pool's work queue")
    p.add_argument("--profile", help="with --pool and --remote: the profile the workers apply")
    args = p.parse_args()
    import os

    from flows.reproduce import reproduce_all, reproduce_paper
    from flows.server import wait_healthy
    from icml25.errors import UserError

    try:
        if args.wait_for_server:
            wait_healthy(
                os.environ["PREFECT_API_URL"],
                log_path=Path(os.environ.get("PREFECT_HOME", ".")) / "server.log",
            )
    except UserError as exc:
        print(f"icml25: error: {exc}", file=sys.stderr)
        return 2
    try:
        if args.pool:
            from flows.distributed import reproduce_parallel

            state = reproduce_parallel(
                args.pool,
                root=args.root,
                force=args.force,
                remote=args.remote,
                queue=args.queue,
                profile=args.profile,
                papers=None if args.target == "all" else [args.target],
                return_state=True,
            )
            if not state.is_completed():
                print(f"flow failed: {state.message}", file=sys.stderr)
                return 1
        elif args.target == "all":
            reproduce_all(force=args.force, root=args.root)
        else:
            reproduce_paper(args.target, force=args.force, root=args.root)
    except Exception as exc:  # the task's own log already holds the details
        print(f"flow failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
