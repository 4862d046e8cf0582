"""``icml25``: the command line of the reproduction suite.

    icml25 list                          the 19 papers, their status and claims held / total
    icml25 run <slug>|all [--profile P] [--force]
                                         reproduce through Prefect + DVC (smoke/paper profiles run in a
                                         scratch copy under runs/<profile>/)
    icml25 check                         check params.yaml against every paper's schema
    icml25 stage <slug> <stage>          run one stage (what dvc.yaml calls)
    icml25 index                         write reports/README.md
    icml25 profile apply <name>          write profiles/<name>.yaml merged into params.yaml
    icml25 <slug> ...                    a paper's own tools, e.g. `icml25 model_independence test A B`

Start-up stays light: torch, Lightning, Great Expectations, Prefect, DVC and paper code are imported only by
the command that needs them. A :class:`~icml25.errors.UserError` prints one line and exits 2, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from .errors import UserError
from .registry import CATALOGUE, STAGES

TOOLS = [e.slug for e in CATALOGUE if e.has_tools]


def find_root(start: Path | None = None) -> Path:
    """The checkout: the nearest folder upwards holding both dvc.yaml and params.yaml."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "dvc.yaml").exists() and (folder / "params.yaml").exists():
            return folder
    raise UserError(f"not inside an icml25-repro checkout (no dvc.yaml and params.yaml above {here})")


def cmd_list(args: argparse.Namespace) -> int:
    from .params import implemented, load_params
    from .reporting import claims_summary

    root = find_root()
    done = set(implemented(load_params(root)))
    print(f"{'#':>2}  {'slug':<20} {'status':<12} {'claims':<7} title")
    for e in CATALOGUE:
        summary = claims_summary(root, e.slug) if e.slug in done else None
        claims = f"{summary[0]}/{summary[1]}" if summary else "-"
        status = "implemented" if e.slug in done else "planned"
        print(f"{e.number:>2}  {e.slug:<20} {status:<12} {claims:<7} {e.title}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from flows.run import run_from_cli

    return run_from_cli(find_root(), args.target, profile=args.profile, force=args.force)


def cmd_check(args: argparse.Namespace) -> int:
    from .params import implemented
    from .runner import check_all

    params = check_all(find_root())
    print(f"params.yaml is valid for {', '.join(implemented(params))}")
    return 0


def cmd_stage(args: argparse.Namespace) -> int:
    from .runner import run_stage

    run_stage(Path.cwd(), args.slug, args.stage)
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    from .params import implemented, load_params
    from .reporting import write_index

    root = Path.cwd()
    write_index(root, implemented(load_params(root)))
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    from .scratch import apply_profile

    path = apply_profile(find_root(), args.name)
    print(
        f"wrote {path} from profile {args.name!r}; `dvc repro` now runs it (git checkout params.yaml undoes it)"
    )
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="icml25",
        description="CPU-scale reproductions of 19 ICML 2025 papers.",
        epilog="paper tools: " + ", ".join(f"icml25 {s} --help" for s in TOOLS),
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="the papers, their status and claims held").set_defaults(fn=cmd_list)
    r = sub.add_parser("run", help="reproduce a paper (or all) through Prefect and DVC")
    r.add_argument("target", help="a paper slug or 'all'")
    r.add_argument(
        "--profile",
        default="quick",
        choices=["smoke", "quick", "paper"],
        help="quick (default) runs in this checkout; smoke and paper run in runs/<profile>/",
    )
    r.add_argument("--force", action="store_true", help="re-run every stage (no DVC run cache)")
    r.set_defaults(fn=cmd_run)
    sub.add_parser("check", help="check params.yaml against every paper's schema").set_defaults(fn=cmd_check)
    s = sub.add_parser("stage", help="run one stage of one paper (what dvc.yaml calls)")
    s.add_argument("slug")
    s.add_argument("stage", choices=STAGES)
    s.set_defaults(fn=cmd_stage)
    sub.add_parser("index", help="write reports/README.md").set_defaults(fn=cmd_index)
    pr = sub.add_parser("profile", help="apply a profile to params.yaml of this checkout")
    pr.add_argument("action", choices=["apply"])
    pr.add_argument("name", choices=["smoke", "quick", "paper"])
    pr.set_defaults(fn=cmd_profile)
    for slug in TOOLS:
        sub.add_parser(slug, help=f"tools of paper {slug} (icml25 {slug} --help)", add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in TOOLS:  # a paper's own tools: imported only now
            return int(importlib.import_module(f"models.{argv[0]}.cli").main(argv[1:]) or 0)
        args = parser().parse_args(argv)
        return int(args.fn(args) or 0)
    except UserError as exc:
        print(f"icml25: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("icml25: interrupted", file=sys.stderr)
        return 130
