"""The installed ``icml25`` command: the core commands (:mod:`icml25.cli`) plus what sits above the core.

    icml25 run <slug>|all [--profile P] [--force] [--lock-timeout S]
                        reproduce through Prefect + DVC (smoke/paper profiles run in a scratch copy under
                        runs/<profile>/)
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


def cmd_run(args: argparse.Namespace) -> int:
    from flows.run import run_from_cli

    if args.lock_timeout is not None and not args.lock_timeout >= 0:
        raise UserError(f"--lock-timeout must be a number of seconds >= 0, not {args.lock_timeout}")
    return run_from_cli(
        core.find_root(), args.target, profile=args.profile, force=args.force, lock_timeout=args.lock_timeout
    )


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
    r.set_defaults(fn=cmd_run)
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
