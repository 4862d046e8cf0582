"""``icml25 sr_pareto``: the APO front of a CSV file.

    icml25 sr_pareto front DATA.csv --target COL [--max-length 7] [--optimizer fast|BFGS|...] [-o front.csv]
                                    [--seed S] [--jobs N]

Writes the front in the published column format (EquationLength, EquationStructure, EquationParameters,
NumericalIterations, MSE, R2) to ``-o`` (atomically) or prints it. Bad input (missing target, a non-numeric
column, NaN rows, too few rows, a length outside 1-9) is a one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_seed
from icml25.outputs import atomic_output, check_output


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 sr_pareto",
        description="Absolute Pareto-optimal fronts for symbolic regression (Fong & Motani, ICML 2025).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    f = sub.add_parser(
        "front",
        help="the APO front of a CSV file",
        description="Exhaustive search over the "
        "grammar Pow(|a|^b), Mul, Add, Sub, Div with features and fitted constants; the best "
        "expression of each length.",
    )
    f.add_argument("data", metavar="DATA.csv", help="a CSV file with a header; every column numeric")
    f.add_argument("--target", required=True, metavar="COL", help="the column to predict")
    f.add_argument("--max-length", type=int, default=7, help="longest expression, in nodes (1-9, default 7)")
    f.add_argument(
        "--optimizer",
        default="fast",
        help="fast (default) or a scipy method: BFGS, CG, L-BFGS-B, "
        "Nelder-Mead, Powell, SLSQP, TNC, trust-constr (the paper's protocol)",
    )
    f.add_argument("--seed", type=int, default=11284, help="seed of the optimiser's start (default 11284)")
    f.add_argument("--jobs", type=int, default=1, help="parallel workers (default 1)")
    f.add_argument("-o", "--output", type=Path, help="write the front here (CSV) instead of printing it")
    return parser


def front_of_table(
    frame,
    target: str,
    max_length: int = 7,
    optimizer: str = "fast",
    seed: int = 11284,
    n_jobs: int = 1,
    progress=None,
    where: str = "table",
):
    """The APO front of a pandas DataFrame as a DataFrame in the published columns (the Python entry).

    ValueError on a length outside 1-9 or even, an unknown optimiser, or a table that is not numeric, finite,
    free of constant columns and at least ``max_length + 1`` rows long, or a target whose scale float64 cannot
    square (its MSE would overflow or underflow) (those messages start with ``where``)."""
    import pandas as pd

    from icml25.tables import numeric_table

    from .fit import OPTIMIZERS
    from .front import COLUMNS, ScaleError, apo_front

    if not 1 <= max_length <= 9 or max_length % 2 == 0:
        raise ValueError(f"max length must be an odd number of nodes from 1 to 9, got {max_length}")
    if optimizer != "fast" and optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; one of fast, {', '.join(OPTIMIZERS)}")
    X, y, _ = numeric_table(frame, target, where, min_rows=max_length + 1, reject_constant=True)
    try:
        rows = apo_front(X, y, max_length, optimizer, seed=seed, n_jobs=n_jobs, progress=progress)
    except ScaleError as exc:
        raise ValueError(f"{where}: column {target!r}: {exc}") from None
    return pd.DataFrame(rows, columns=COLUMNS)


def cmd_front(args: argparse.Namespace) -> int:
    from icml25.tables import read_csv

    try:
        frame = read_csv(args.data)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.jobs < 1:
        raise UserError(f"--jobs must be >= 1, got {args.jobs}")
    check_seed(args.seed)  # NumPy's legacy seeding refused it without naming it, once the search began
    if args.output:
        check_output(args.output)
    bar = _progress_bar()
    try:
        result = front_of_table(
            frame,
            args.target,
            args.max_length,
            args.optimizer,
            args.seed,
            args.jobs,
            progress=bar.update if bar else None,
            where=str(args.data),
        )
    except ValueError as exc:  # a table's problem names the file; a bad argument names the value
        raise UserError(str(exc)) from None
    finally:
        if bar:
            bar.close()
    if args.output:
        with atomic_output(args.output) as tmp:
            result.to_csv(tmp, index=False)
        print(f"wrote {len(result)} rows to {args.output}")
    else:
        result.to_csv(sys.stdout, index=False)
    return 0


def _progress_bar():
    from icml25.training import show_progress

    if not show_progress():
        return None
    from tqdm import tqdm

    return tqdm(unit="expr", desc="fitting", leave=False)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "front":
        args.data = Path(args.data)
        return cmd_front(args)
    raise AssertionError(args.command)
