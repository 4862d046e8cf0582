"""``icml25 hyper sweep``: every (agent, beta, seed) on one environment; success and return per agent and beta.

    icml25 hyper sweep --env grid|grid-trap|FrozenLake-v1|CliffWalking-v1|Taxi-v4 [--agents hyper,decouple,curiosity]
        [--betas 0.01,0.1,1,10,100] [--seeds 10] [--episodes 2000] [--p 0.1] [-o out.csv]

Prints, per agent and beta, the success rate and mean return of the evaluated greedy policy after the last
episode, and per agent its worst beta and spread (max - min success). ``-o`` writes every run's final row (a
.csv). FrozenLake runs without slipping. Bad input (an unknown id or agent, non-Discrete spaces, beta <= 0, p
outside (0, 1], seeds or episodes < 1, an output that is not .csv) is one line naming the value, exit status 2,
nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.outputs import atomic_output, check_output


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--betas {text!r}: expected numbers separated by commas") from None


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 hyper",
        description="Hyper (ICML 2025): curiosity-driven exploration robust to the bonus weight beta, tabular.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser(
        "sweep",
        help="every agent x beta x seed on one environment",
        description="Train and evaluate; print success and return per agent and beta.",
    )
    s.add_argument("--env", required=True, help="grid, grid-trap, FrozenLake-v1, CliffWalking-v1 or Taxi-v4")
    s.add_argument(
        "--agents",
        default="hyper,decouple,curiosity",
        help="comma-separated (default hyper,decouple,curiosity)",
    )
    s.add_argument(
        "--betas", default="0.01,0.1,1,10,100", help="comma-separated bonus weights (default 0.01,...,100)"
    )
    s.add_argument("--seeds", type=int, default=10, help="seeds per agent and beta (default 10)")
    s.add_argument("--episodes", type=int, default=2000, help="training episodes (default 2000)")
    s.add_argument("--p", type=float, default=0.1, help="repositioning: h = min(Geom(p), H) (default 0.1)")
    s.add_argument("-o", "--output", type=Path, metavar="OUT.csv", help="every run's final evaluation")
    return parser


def cmd_sweep(args: argparse.Namespace) -> int:
    from .api import check, sweep
    from .evaluation import table

    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    betas = _floats(args.betas)
    check(args.env, agents, betas, args.seeds, args.episodes, args.p)
    if args.output is not None:
        if args.output.suffix != ".csv":
            raise UserError(f"--output {args.output}: expected a .csv file")
        check_output(args.output)
    df = sweep(args.env, agents, betas, args.seeds, args.episodes, args.p)
    t = table(df)
    print(f"{args.env}: {args.seeds} seeds, {args.episodes} episodes; success rate / mean return at the end")
    for r in t.itertuples():
        print(
            f"  {r.agent:10s} beta {r.beta:<8g} success {r.success:.2f}  return {t.loc[r.Index, 'return']:.3f}"
        )
    for agent, g in t.groupby("agent", sort=False):
        worst = g.loc[g.success.idxmin()]
        print(
            f"{agent}: worst beta {worst.beta:g} (success {worst.success:.2f}), spread {g.success.max() - g.success.min():.2f}"
        )
    if args.output is not None:
        with atomic_output(args.output) as tmp:
            df[df.episode == df.episode.max()].to_csv(tmp, index=False)
        print(f"wrote {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"sweep": cmd_sweep}[args.command](args)
