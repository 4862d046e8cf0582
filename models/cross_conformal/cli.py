"""``icml25 cross_conformal``: cross-conformal prediction sets for a CSV file.

    icml25 cross_conformal predict DATA.csv --target COL [--alpha 0.1] [--method e-mod] [--model ridge]
                                   [--folds 5] [--test TEST.csv] [--seed S] [-o sets.csv|sets.json]

The model is fit on the rows of DATA.csv whose target is present. The sets are for the rows of TEST.csv (its
target column, if present, is used only to report coverage), or, without --test, for the rows of DATA.csv
whose target cell is empty. One output row per test point: its set as a union of closed intervals, its width
and number of intervals (and, with a known target, whether it is covered). ``-o`` writes CSV or JSON
(atomically, by the extension); otherwise the CSV is printed. Bad input is a one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_seed
from icml25.outputs import atomic_output, check_output

MODELS = ("ols", "linear", "ridge", "lasso", "rf")


def build_parser() -> argparse.ArgumentParser:
    from .core import ALIASES, METHODS

    parser = ToolParser(
        prog="icml25 cross_conformal",
        description="Efficient cross-conformal prediction (Gasparin & Ramdas, ICML 2025).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    f = sub.add_parser(
        "predict",
        help="cross-conformal prediction sets for the rows of a CSV file",
        description="Exact K-fold cross-conformal sets (mod, e/u/eu variants, Vovk's) for any of a few "
        "scikit-learn regressors.",
    )
    f.add_argument("data", type=Path, metavar="DATA.csv", help="training rows (CSV with a header, numeric)")
    f.add_argument("--target", required=True, metavar="COL", help="the column to predict")
    f.add_argument("--alpha", type=float, default=0.1, help="miscoverage level in (0, 0.5) (default 0.1)")
    f.add_argument(
        "--method",
        default="mod",
        help=f"one of {', '.join(METHODS)} (aliases: {', '.join(ALIASES)}); default mod",
    )
    f.add_argument("--model", default="ridge", help=f"one of {', '.join(MODELS)} (default ridge)")
    f.add_argument("--folds", type=int, default=5, help="number of folds K >= 2 (default 5)")
    f.add_argument(
        "--test",
        type=Path,
        metavar="TEST.csv",
        help="rows to predict (default: DATA's rows with an empty target)",
    )
    f.add_argument("--seed", type=int, default=0, help="seed of the folds and of U (default 0)")
    f.add_argument("-o", "--output", type=Path, help="write the sets here (.csv or .json)")
    return parser


def predict_table(
    frame,
    target: str,
    test=None,
    alpha: float = 0.1,
    method: str = "mod",
    model: str = "ridge",
    folds: int = 5,
    seed: int = 0,
):
    """The Python entry: a DataFrame with one row per test point (row, set, lower, upper, width, n_intervals
    [, y, covered]) and the fitted regressor. ``test`` None: the rows of ``frame`` with an empty target."""
    import numpy as np
    import pandas as pd

    from icml25.tables import numeric_table

    from .core import canonical_method, check_alpha
    from .regressor import CrossConformalRegressor, make_estimator

    check_alpha(alpha)
    method = canonical_method(method)
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; one of {', '.join(MODELS)}")
    X, y, features = numeric_table(frame, target, "DATA", allow_missing_target=test is None)
    if test is None:
        missing = ~np.isfinite(y)
        if not missing.any():
            raise ValueError(
                f"nothing to predict: give --test TEST.csv, or leave {target!r} empty on the rows to predict"
            )
        Xt, yt, X, y = X[missing], None, X[~missing], y[~missing]
    else:
        absent = [c for c in features if c not in test.columns]
        if absent:
            raise ValueError(f"TEST lacks the feature column {absent[0]!r} of DATA")
        extra = [c for c in test.columns if c not in features and c != target]
        if extra:
            raise ValueError(f"TEST has column {extra[0]!r}, which DATA does not have")
        test = test.copy()
        known = target in test.columns
        if not known:
            test[target] = np.nan
        Xt, yt, _ = numeric_table(test[features + [target]], target, "TEST", allow_missing_target=True)
        if not known or not np.all(np.isfinite(yt)):
            yt = None
    if len(y) < 2:
        raise ValueError(f"DATA has {len(y)} rows with a target; at least 2 are needed")
    ccr = CrossConformalRegressor(make_estimator(model, seed=seed), n_folds=folds, random_state=seed)
    ccr.fit(X, y)
    sets = ccr.predict_sets(Xt, alpha, [method]).sets[method]
    rows = []
    for i in range(len(Xt)):
        iv = sets.intervals(i)
        row = {
            "row": i + 1,
            "set": " U ".join(f"[{lo:.6g}, {hi:.6g}]" for lo, hi in iv) or "(empty)",
            "lower": iv[0][0] if iv else np.nan,
            "upper": iv[-1][1] if iv else np.nan,
            "width": float(sum(hi - lo for lo, hi in iv)),
            "n_intervals": len(iv),
        }
        rows.append(row)
    out = pd.DataFrame(rows)
    if yt is not None:
        out["y"] = yt
        out["covered"] = sets.contains(yt)
    return out, ccr, sets


def _read(path: Path):
    from icml25.tables import read_csv

    try:
        return read_csv(path)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def cmd_predict(args: argparse.Namespace) -> int:
    # scikit-learn's random_state refused it ("expected non-negative integer") after a fit, naming no flag
    check_seed(args.seed)
    frame = _read(args.data)
    test = _read(args.test) if args.test else None
    if args.output:
        check_output(args.output)
        if args.output.suffix.lower() not in (".csv", ".json"):
            raise UserError(f"--output must end in .csv or .json, got {args.output}")
    try:
        out, ccr, sets = predict_table(
            frame, args.target, test, args.alpha, args.method, args.model, args.folds, args.seed
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    summary = (
        f"{len(out)} sets, method {args.method}, alpha {args.alpha}, K {args.folds} "
        f"(m = {ccr.scores_.m}, {ccr.n_dropped_} training rows calibrate nothing), mean width "
        f"{out.width.mean():.6g}"
    )
    if "covered" in out:
        summary += f", coverage {out.covered.mean():.4g}"
    if args.output:
        with atomic_output(args.output) as tmp:
            _write_sets(tmp, out, sets)
        print(f"wrote {summary} to {args.output}")
    else:
        out.to_csv(sys.stdout, index=False)
        print(f"# {summary}", file=sys.stderr)
    return 0


def _write_sets(tmp: Path, out, sets) -> None:
    """The sets as JSON (intervals per row) or CSV, by the suffix of the requested output."""
    if tmp.name.lower().endswith(".json.tmp"):

        def bound(v: float) -> float | str:  # JSON has no infinity: an unbounded end is "-inf" / "inf"
            return v if abs(v) != float("inf") else str(v)

        doc = [
            {
                "row": int(r),
                "intervals": [[bound(lo), bound(hi)] for lo, hi in sets.intervals(i)],
                "width": bound(float(w)),
            }
            for i, (r, w) in enumerate(zip(out.row, out.width, strict=True))
        ]
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
    else:
        out.to_csv(tmp, index=False)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "predict":
        return cmd_predict(args)
    raise AssertionError(args.command)
