"""The core commands of ``icml25`` (``python -m icml25 ...``: what DVC calls, and what needs no orchestration).

    icml25 list                          the 19 papers, their status and claims held / total
    icml25 check                         check params.yaml against every paper's schema
    icml25 verify [SLUG...]              the last run's claims against the committed ones (exit 1 if they differ
                                         or the paper did not run since)
    icml25 stage <slug> <stage>          run one stage (what dvc.yaml calls)
    icml25 code <slug>                   write the per-stage code fingerprints (what code@<slug> calls)
    icml25 dvc <args>                    DVC with the fast lock file (what the flows run; icml25.dvcfast)
    icml25 index                         write reports/README.md
    icml25 profile apply <name>          write profiles/<name>.yaml merged into params.yaml
    icml25 new <slug>                    scaffold a paper: every file it needs, passing `make test`
    icml25 sync [--check]                regenerate dvc.yaml and prefect.yaml from params.yaml and the catalogue
    icml25 layers                        check the import layering (flows -> stages -> models -> icml25)
    icml25 site [--out DIR] [--serve [--port P]]  the results site (site/) from reports/, served on 127.0.0.1
    icml25 s3 serve [--dir D] [--port P] a local S3 server (SeaweedFS) and the dvc remote commands for it

The installed ``icml25`` command (:mod:`flows.cli`, the top layer) adds ``run`` (Prefect + DVC) and each
paper's own tools (``icml25 <slug> ...``). Start-up stays light: torch, Lightning, Great Expectations, Prefect,
DVC and paper code are imported only by the command that needs them. A :class:`~icml25.errors.UserError`
prints one line and exits 2, no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import UserError
from .registry import CATALOGUE, STAGES


class ToolParser(argparse.ArgumentParser):
    """An ArgumentParser whose command-line errors (a missing argument, an invalid int, an unknown choice) are a
    :class:`UserError`: one line naming the bad value and exit 2 through :func:`guarded`, like every other bad
    input, instead of argparse's usage block. ``--help`` is unchanged; sub-parsers inherit the class."""

    def error(self, message: str):  # type: ignore[override]
        raise UserError(f"{message} (see {self.prog} --help)")


def find_root(start: Path | None = None) -> Path:
    """The checkout: the nearest folder upwards holding both dvc.yaml and params.yaml."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "dvc.yaml").exists() and (folder / "params.yaml").exists():
            return folder
    raise UserError(f"not inside an icml25-repro checkout (no dvc.yaml and params.yaml above {here})")


def cmd_list(args: argparse.Namespace) -> int:
    from .claims import describe
    from .params import implemented, load_params
    from .reporting import claims_summary

    root = find_root()
    done = set(implemented(load_params(root)))
    print(f"{'#':>2}  {'slug':<20} {'status':<12} {'claims (held/total by kind)':<32} title")
    for e in CATALOGUE:
        summary = claims_summary(root, e.slug) if e.slug in done else None
        claims = describe(summary, short=True) if summary is not None else "-"
        status = "implemented" if e.slug in done else "planned"
        print(f"{e.number:>2}  {e.slug:<20} {status:<12} {claims:<32} {e.title}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .params import implemented
    from .runner import check_all

    params = check_all(find_root())
    print(f"params.yaml is valid for {', '.join(implemented(params))}")
    return 0


def cmd_stage(args: argparse.Namespace) -> int:
    import os

    from .procs import die_with_parent, exit_on_signals
    from .runner import run_stage

    if "DVC_STAGE" in os.environ:  # started by `dvc repro`: a stage never outlives it (see icml25.procs)
        die_with_parent()
    with exit_on_signals():  # SIGTERM/SIGHUP: the runner's cleanup removes the half-written output
        run_stage(Path.cwd(), args.slug, args.stage)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from .params import implemented, load_params
    from .registry import entry
    from .verify import VERDICT_CHANGES, verify

    root = find_root()
    done = implemented(load_params(root))
    for slug in args.slugs:
        entry(slug)
        if slug not in done:
            raise UserError(f"paper {slug!r} is not implemented (no papers.{slug} in params.yaml)")
    rev = args.against
    results = verify(root, args.slugs or done, rev)
    changed = inconsistent = 0
    differ: list[str] = []
    not_rerun: list[str] = []
    missing: list[str] = []
    for r in results:
        if r.missing:
            missing.append(r.paper)
            print(f"{r.paper}: cannot compare: {r.missing}")
            continue
        if r.not_rerun:
            not_rerun.append(r.paper)
            print(f"{r.paper}: not re-run since {rev}, nothing verified: {r.not_rerun}")
            continue
        off = [c for c in r.changes if not c.agrees]
        changed += sum(c.status in VERDICT_CHANGES for c in off)
        inconsistent += sum(bool(c.inconsistent) for c in off)
        if off:
            differ.append(r.paper)
            print(f"{r.paper}: {len(off)} of {len(r.changes)} claims differ from {rev}")
        else:
            print(f"{r.paper}: all {len(r.changes)} claims agree with {rev}")
        for c in r.changes if args.all else off:
            print(f"  {c.describe()}")
    if changed:
        print(f"icml25 verify: {changed} verdict(s) changed", file=sys.stderr)
    if inconsistent:
        print(
            f"icml25 verify: {inconsistent} claim(s) store a `passed` that their value, op and threshold "
            "contradict (a corrupted or hand-edited claims.json)",
            file=sys.stderr,
        )
    if differ and not changed and not inconsistent:
        print(
            f"icml25 verify: {len(differ)} paper(s) differ from {rev} beyond their claims' tolerances "
            "(no verdict changed)",
            file=sys.stderr,
        )
    if missing:
        print(
            f"icml25 verify: {len(missing)} paper(s) cannot be compared: {', '.join(missing)}",
            file=sys.stderr,
        )
    if not_rerun:
        print(
            f"icml25 verify: {len(not_rerun)} paper(s) not re-run since {rev}, not verified: "
            f"{', '.join(not_rerun)} (`icml25 run <slug> --force` recomputes one, `icml25 run all --force` all)",
            file=sys.stderr,
        )
    return 1 if changed or inconsistent or differ or missing or not_rerun else 0


def cmd_code(args: argparse.Namespace) -> int:
    from .registry import entry
    from .runner import write_fingerprints

    entry(args.slug)
    write_fingerprints(Path.cwd(), args.slug)
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


def cmd_new(args: argparse.Namespace) -> int:
    from .scaffold import new_paper

    root = find_root()
    for path in new_paper(root, args.slug):
        print(f"wrote {path.relative_to(root)}")
    print(f"next: CONTRIBUTING.md; `make test` already passes for {args.slug}")
    return 0


def cmd_sync(args: argparse.Namespace) -> int:
    from .pipeline import stale, sync

    root = find_root()
    if args.check:
        names = stale(root)
        if names:
            raise UserError(
                f"{', '.join(names)} out of date with params.yaml and the code: run `icml25 sync`"
            )
        print("dvc.yaml and prefect.yaml are up to date")
        return 0
    changed = sync(root)
    print(f"wrote {', '.join(changed)}" if changed else "dvc.yaml and prefect.yaml are up to date")
    return 0


def cmd_layers(args: argparse.Namespace) -> int:
    from .codedeps import layering_violations

    found = layering_violations(find_root())
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} import(s) break the layering", file=sys.stderr)
        return 1
    print("imports keep the layering: flows -> stages -> models -> icml25, no paper imports another")
    return 0


def cmd_site(args: argparse.Namespace) -> int:
    from .site import build_site, check_out, check_port, serve

    root = find_root()
    if args.port is not None and not args.serve:
        raise UserError("--port is for --serve (icml25 site --serve --port P)")
    port = 8000 if args.port is None else args.port
    check_port(port)
    out = Path(args.out).resolve() if args.out else root / "site"
    check_out(root, out)  # bad input is refused before anything is built
    built = build_site(root, out)
    for w in built.warnings:
        print(f"icml25 site: mkdocs: {w}", file=sys.stderr)
    shown = out.relative_to(root) if out.is_relative_to(root) else out
    print(
        f"built {shown}/ in {built.seconds:.1f} s: {built.papers} papers ({built.implemented} implemented), "
        f"{built.pages} pages, {built.figures} figures; {built.prefect}"
    )
    if not args.serve:
        print(f"open {shown}/index.html, or serve it: icml25 site --serve")
        return 0
    return serve(out, port, announce=lambda line: print(line, flush=True))


def cmd_s3(args: argparse.Namespace) -> int:
    from .store import serve

    given = {k: v for k, v in vars(args).items() if k in ("port", "bucket", "access_key", "secret_key")}
    return serve(Path(args.dir), **{k: v for k, v in given.items() if v is not None})


Extend = Callable[[Any], None]


def parser(extend: Extend | None = None, epilog: str | None = None) -> argparse.ArgumentParser:
    p = ToolParser(
        prog="icml25", description="CPU-scale reproductions of 19 ICML 2025 papers.", epilog=epilog
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="the papers, their status and claims held").set_defaults(fn=cmd_list)
    if extend:
        extend(sub)
    sub.add_parser("check", help="check params.yaml against every paper's schema").set_defaults(fn=cmd_check)
    v = sub.add_parser(
        "verify",
        help="compare the last run's claims with the committed claims.json, verdict by verdict (recomputed from "
        "value, op and threshold) and value by value; a paper that did not run since is not verified (exit 1)",
    )
    v.add_argument(
        "slugs", nargs="*", metavar="SLUG", help="papers to verify (default: every implemented one)"
    )
    v.add_argument("--against", default="HEAD", metavar="REV", help="the git revision to compare with (HEAD)")
    v.add_argument("--all", action="store_true", help="list every claim, not only those that differ")
    v.set_defaults(fn=cmd_verify)
    s = sub.add_parser("stage", help="run one stage of one paper (what dvc.yaml calls)")
    s.add_argument("slug")
    s.add_argument("stage", choices=STAGES)
    s.set_defaults(fn=cmd_stage)
    c = sub.add_parser("code", help="write a paper's per-stage code fingerprints (what code@<slug> calls)")
    c.add_argument("slug")
    c.set_defaults(fn=cmd_code)
    sub.add_parser("index", help="write reports/README.md").set_defaults(fn=cmd_index)
    pr = sub.add_parser("profile", help="apply a profile to params.yaml of this checkout")
    pr.add_argument("action", choices=["apply"])
    pr.add_argument("name", choices=["smoke", "quick", "paper"])
    pr.set_defaults(fn=cmd_profile)
    n = sub.add_parser("new", help="scaffold a new paper (stages, model package, params, tests, benchmark)")
    n.add_argument("slug", choices=[e.slug for e in CATALOGUE], metavar="SLUG")
    n.set_defaults(fn=cmd_new)
    sy = sub.add_parser(
        "sync", help="regenerate dvc.yaml and prefect.yaml from params.yaml and the catalogue"
    )
    sy.add_argument(
        "--check", action="store_true", help="only check that they are up to date (exit 2 if not)"
    )
    sy.set_defaults(fn=cmd_sync)
    sub.add_parser("layers", help="check the import layering of the code").set_defaults(fn=cmd_layers)
    si = sub.add_parser("site", help="build the results site (site/) from reports/; --serve serves it")
    si.add_argument("--out", metavar="DIR", help="where to build it (default site/ in the checkout)")
    si.add_argument("--serve", action="store_true", help="then serve it on 127.0.0.1 until Ctrl-C")
    si.add_argument(
        "--port", type=int, metavar="P", help="the port for --serve (default 8000; 0: a free one)"
    )
    si.set_defaults(fn=cmd_site)
    s3 = sub.add_parser("s3", help="a local S3 server for dvc push / pull")
    s3.add_argument("action", choices=["serve"])
    s3.add_argument("--dir", default=".s3", help="where the server keeps its data (default .s3)")
    s3.add_argument(
        "--port", type=int, help="the S3 port (default 8333, stable across restarts; 0: a free one)"
    )
    s3.add_argument("--bucket", help="bucket to create (default icml25-repro)")
    s3.add_argument("--access-key", help="the key the server checks (default icml25-local)")
    s3.add_argument("--secret-key", help="its secret (default icml25-local-secret)")
    s3.set_defaults(fn=cmd_s3)
    return p


def guarded(fn: Callable[[], int]) -> int:
    """Run a command: a UserError is one line on stderr and exit 2; Ctrl-C exits 130; bugs keep tracebacks."""
    try:
        return int(fn() or 0)
    except UserError as exc:
        print(f"icml25: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("icml25: interrupted", file=sys.stderr)
        return 130


def main(argv: list[str] | None = None, extend: Extend | None = None, epilog: str | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["dvc"]:  # DVC's own command line, untouched
        from .dvcfast import main as dvc_main

        return dvc_main(argv[1:])

    def go() -> int:
        args = parser(extend, epilog).parse_args(argv)
        return args.fn(args)

    return guarded(go)
