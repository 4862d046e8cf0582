"""``icml25 ferret simulate``: federated training with Ferret and its baselines on the digits or a user's table.

    icml25 ferret simulate [DATA.csv --target COL] [--methods ferret,fedavg,zo] [--clients 20] [--per-round 5]
        [--rounds 80] [--K 64] [--alpha 0.5] [--seeds fresh|fixed] [--seed 0] [-o history.csv]

Prints, per round and method, the test accuracy and the mean uplink scalars per client, then a summary line per
method; ``-o`` writes the per-round history as CSV. Bad input (K < 2, per-round > clients, alpha <= 0,
rounds < 1, an unknown method, a negative seed, a missing file or target, non-numeric columns, a client under 10
rows) is one line naming the value, exit status 2, nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_seed
from icml25.outputs import atomic_output, check_output


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 ferret",
        description="Ferret (ICML 2025): federated full-parameter tuning with shared randomness.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser(
        "simulate",
        help="run Ferret and baselines",
        description="Federated rounds on the digits (no DATA) or a CSV; print accuracy and uplink per round.",
    )
    s.add_argument(
        "data", nargs="?", type=Path, metavar="DATA.csv", help="numeric features and a target column"
    )
    s.add_argument("--target", help="the class column of DATA.csv")
    s.add_argument(
        "--methods",
        default="ferret,fedavg,zo",
        help="comma-separated: ferret, fedavg, zo, fedzo, ferret_fixed, ferret_code, ferret_official, ferret_k<N>",
    )
    s.add_argument("--clients", type=int, default=20)
    s.add_argument("--per-round", type=int, default=5, dest="per_round")
    s.add_argument("--rounds", type=int, default=80)
    s.add_argument("--K", type=int, default=64, dest="K", help="candidate seeds per block")
    s.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration of the label split")
    s.add_argument("--seeds", choices=("fresh", "fixed"), default="fresh", help="Ferret's candidate seeds")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("-o", "--output", type=Path, metavar="history.csv")
    return parser


def cmd_simulate(args: argparse.Namespace) -> int:
    # What needs no model code first (its import alone loads Lightning: seconds); the seed was refused with a
    # traceback by the data's random stream, after the data were loaded.
    check_seed(args.seed, bound=None)
    if args.target and args.data is None:
        raise UserError(f"--target {args.target}: give a DATA.csv for it")
    if args.output is not None:
        if args.output.suffix != ".csv":
            raise UserError(f"--output {args.output}: expected a .csv file")
        check_output(args.output)
    from .api import check, load, simulate

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    check(
        methods=methods,
        clients=args.clients,
        per_round=args.per_round,
        rounds=args.rounds,
        K=args.K,
        alpha=args.alpha,
        seeds=args.seeds,
    )
    data = load(args.data, args.target, args.clients, args.alpha, args.seed, 0.221)  # errors before any round

    def progress(name: str, r: int, row: dict) -> None:
        print(
            f"{name:>12} round {r:4d}: accuracy {row['accuracy']:.3f}, uplink {row['uplink']:.0f} scalars per client"
        )

    history = simulate(
        data,
        methods=methods,
        per_round=args.per_round,
        rounds=args.rounds,
        K=args.K,
        seeds=args.seeds,
        seed=args.seed,
        clients=args.clients,
        alpha=args.alpha,
        progress=progress,
    )
    for name, g in history.groupby("method", sort=False):
        last = g.iloc[-1]
        print(
            f"{name}: final accuracy {last.accuracy:.3f}, mean uplink {g.uplink.mean():.1f} scalars per client "
            f"and round, cumulative {last.cumulative_uplink:.0f}"
        )
    if args.output is not None:
        with atomic_output(args.output) as tmp:
            history.to_csv(tmp, index=False)
        print(f"wrote {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"simulate": cmd_simulate}[args.command](args)
