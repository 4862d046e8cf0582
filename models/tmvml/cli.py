"""``icml25 tmvml fit-predict``: fit TMvML (tensorized multi-view multi-label classification with the Laplace
tensor rank) on a user's CSV and score a test CSV.

    icml25 tmvml fit-predict TRAIN.csv --views 1-79,80-103 --labels 104-117 [--test TEST.csv]
        [--lam 100] [--delta 1] [--penalty ltr|tnn] [-o SCORES.csv]

``--views`` lists the views: separated by ``;`` when the value holds one, otherwise every comma-separated item
is one view. So ``1-79,80-103`` is two views (columns 1-79 and 80-103), and ``1-3,5;6-9`` is two views, the
first of columns 1, 2, 3 and 5. A view (and ``--labels``) is a comma-separated list of 1-based inclusive ranges
``a-b``, single column numbers or column names (``--views "Att1,Att2;Att3"``; ``--labels Class1,Class2``);
quote a value holding ``;`` in a shell. Views must not overlap each other or the labels; labels are 0 or 1.

The model (:class:`models.tmvml.model.TMvML`, penalty lam, the LTR's delta) is fitted on TRAIN.csv and scores
TEST.csv (default: TRAIN.csv itself). The test file must have the training views' columns, found by name (so
its columns may come in another order); when it also has every label column, the metrics of
:func:`models.tmvml.metrics.all_metrics` are printed. The output::

    fit: 90 rows of train.csv, 2 views (5 + 7 columns), 4 labels, penalty ltr, lam 1, delta 1
    admm: 17 iterations, converged
    test: 30 rows of test.csv
    ap: 0.969444
    ranking_loss: 0.027778
    coverage: 0.333333
    one_error: 0.083333
    hamming: 0.125000
    micro_f1: 0.782609
    wrote scores.csv

``admm`` says ``not converged (residual R > tol 0.0001 after 300 iterations)`` when the ADMM stopped at its
iteration cap (the scores are still written). A test file without the label columns prints ``metrics: none
(TEST.csv has no label columns)`` instead of the six metrics. SCORES.csv (written atomically) has one row per
test row, in order: a column ``score_<label>`` per label (the model's score F = mean_v X_v W_v + b) and a
column ``labels`` with the predicted label set, the labels whose score is >= 0.5 joined by ``|`` (empty for
none). Without ``-o`` nothing is written and the predicted label sets of the first 5 rows are printed instead
(``row 1: Class1|Class3``, ``row 2: (none)``).

Bad input (a missing or unreadable file, an empty or overlapping view, a range past the last column, an unknown
column name, labels not 0/1, a NaN or non-numeric value, lam or delta <= 0, a test file lacking a view column
or only some of the label columns, an output folder that does not exist) is one line naming the value, exit
status 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.outputs import atomic_output, check_output

THRESHOLD = 0.5
SHOWN_ROWS = 5
VIEWS_HELP = (
    "the views: ';'-separated when the value holds a ';', otherwise each comma-separated item is one view "
    "(1-79,80-103: two views; '1-3,5;6-9': two views, the first of columns 1,2,3,5); 1-based inclusive "
    "ranges a-b, column numbers or column names"
)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 tmvml",
        description="Tensorized multi-view multi-label classification with the Laplace tensor rank (Zhong et "
        "al.): fit TMvML on a CSV of views and 0/1 labels and score a test CSV.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    f = sub.add_parser(
        "fit-predict",
        help="fit TMvML on TRAIN.csv, score TEST.csv, print the metrics",
        description="Fit TMvML on TRAIN.csv and score TEST.csv (default TRAIN.csv); print the ADMM's "
        "iterations, and the metrics (ap, ranking_loss, coverage, one_error, hamming, micro_f1) when the test "
        "file has the label columns; -o writes a score_<label> column per label and the predicted label sets "
        "(score >= 0.5, joined by '|').",
    )
    f.add_argument("train", type=Path, metavar="TRAIN.csv", help="the training rows: views and 0/1 labels")
    f.add_argument("--views", required=True, metavar="SPEC", help=VIEWS_HELP)
    f.add_argument(
        "--labels",
        required=True,
        metavar="SPEC",
        help="the 0/1 label columns: 1-based inclusive ranges a-b, column numbers or names, comma-separated",
    )
    f.add_argument(
        "--test",
        type=Path,
        metavar="TEST.csv",
        help="the rows to score (default TRAIN.csv): the views' columns by name; the labels optional",
    )
    f.add_argument("--lam", type=float, default=100.0, help="the penalty's weight lambda (> 0, default 100)")
    f.add_argument(
        "--delta", type=float, default=1.0, help="the Laplace tensor rank's delta (> 0, default 1)"
    )
    f.add_argument(
        "--penalty",
        choices=("ltr", "tnn"),
        default="ltr",
        help="ltr: the Laplace tensor rank (default); tnn: the tensor nuclear norm",
    )
    f.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="SCORES.csv",
        help="write the scores and predicted label sets (default: print the first rows' label sets)",
    )
    return parser


def split_views(spec: str) -> list[str]:
    """The views of ``--views``: ';'-separated if the value holds a ';', else one view per comma-separated item."""
    if not spec.strip():
        raise UserError(f"--views {spec!r}: give at least one view")
    parts = [p.strip() for p in spec.split(";" if ";" in spec else ",")]
    for i, part in enumerate(parts, 1):
        if not part:
            raise UserError(f"--views {spec!r}: view {i} is empty")
    return parts


def _positive(value: float, flag: str) -> None:
    if not (math.isfinite(value) and value > 0):
        raise UserError(f"{flag} {value:g}: must be a finite number > 0")


def _exists(path: Path, flag: str = "") -> None:
    name = f"{flag} {path}" if flag else str(path)
    if not path.exists():
        raise UserError(f"{name}: no such file")
    if path.is_dir():
        raise UserError(f"{name}: is a directory, not a CSV file")


def _header(path: Path) -> list[str]:
    import pandas as pd

    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None


def _spec(positions: list[int]) -> str:
    """0-based positions as a 1-based range spec ("3-5,9"): names could hold commas or be digits."""
    out, i = [], 0
    while i < len(positions):
        j = i
        while j + 1 < len(positions) and positions[j + 1] == positions[j] + 1:
            j += 1
        a, b = positions[i] + 1, positions[j] + 1
        out.append(f"{a}-{b}" if b > a else str(a))
        i = j + 1
    return ",".join(out)


def _read_test(path: Path, view_names: list[list[str]], label_names: list[str]):
    """The test file's views (the training views' columns, by name) and its labels if it has them all."""
    from .data import read_table

    cols = _header(path)
    where = {c: i for i, c in enumerate(cols)}
    specs = []
    for v, names in enumerate(view_names, 1):
        missing = [c for c in names if c not in where]
        if missing:
            raise UserError(
                f"{path}: no column {missing[0]!r} (view {v}; the test file needs the views' columns)"
            )
        specs.append(_spec([where[c] for c in names]))
    present = [c for c in label_names if c in where]
    if present and len(present) < len(label_names):
        absent = [c for c in label_names if c not in where]
        raise UserError(
            f"{path}: label column(s) {', '.join(present)} present but {', '.join(absent)} missing "
            "(give every label column or none)"
        )
    labels = _spec([where[c] for c in label_names]) if present else ""
    return read_table(path, specs, labels)


def _rows(views) -> int:
    return len(views[0])


def cmd_fit_predict(args: argparse.Namespace) -> int:
    import pandas as pd

    from .data import parse_ranges, read_table
    from .metrics import NAMES, all_metrics
    from .model import TMvML

    _positive(args.lam, "--lam")
    _positive(args.delta, "--delta")
    views = split_views(args.views)
    if not args.labels.strip():
        raise UserError(f"--labels {args.labels!r}: give the label columns")
    test = args.test if args.test is not None else args.train
    if args.output is not None:
        check_output(args.output)
        for given in {args.train, test}:
            if args.output.exists() and given.exists() and args.output.samefile(given):
                raise UserError(f"--output {args.output}: the same file as the data {given}")
    _exists(args.train)
    if args.test is not None:
        _exists(args.test, "--test")

    x_train, y_train, label_names = read_table(args.train, views, args.labels)
    if _rows(x_train) < 2:
        raise UserError(f"{args.train}: {_rows(x_train)} data row(s); the fit needs at least 2")
    cols = _header(args.train)
    view_names = [[cols[i] for i in parse_ranges(v, cols, f"view {k + 1}")] for k, v in enumerate(views)]
    if args.test is None:
        x_test, y_test = x_train, y_train
    else:
        x_test, y_test, _ = _read_test(args.test, view_names, label_names)
        if _rows(x_test) < 1:
            raise UserError(f"{args.test}: no data rows to score")

    model = TMvML(lam=args.lam, delta=args.delta, penalty=args.penalty).fit(x_train, y_train)
    scores = model.decision_function(x_test)
    chosen = scores >= THRESHOLD
    sets = ["|".join(n for n, on in zip(label_names, row, strict=True) if on) for row in chosen]

    if args.output is not None:
        frame = pd.DataFrame(scores, columns=[f"score_{n}" for n in label_names])
        frame["labels"] = sets
        with atomic_output(args.output) as tmp:
            frame.to_csv(tmp, index=False)

    widths = " + ".join(str(x.shape[1]) for x in x_train)
    print(
        f"fit: {_rows(x_train)} rows of {args.train.name}, {len(x_train)} view{'s' * (len(x_train) > 1)} "
        f"({widths} column{'s' * (widths != '1')}), {len(label_names)} label{'s' * (len(label_names) > 1)}, "
        f"penalty {args.penalty}, lam {args.lam:g}, delta {args.delta:g}"
    )
    if model.converged_:
        print(f"admm: {model.iterations_} iterations, converged")
    else:
        print(
            f"admm: {model.iterations_} iterations, not converged (residual {model.residuals_[-1]:.3g} > tol "
            f"{model.tol:g} after {model.max_iter} iterations)"
        )
    print(f"test: {_rows(x_test)} rows of {test.name}{' (the training rows)' if args.test is None else ''}")
    if y_test is not None:
        metrics = all_metrics(y_test, scores, THRESHOLD)
        for name in NAMES:
            print(f"{name}: {metrics[name]:.6f}")
    else:
        print(f"metrics: none ({test.name} has no label columns)")
    if args.output is not None:
        print(f"wrote {args.output}")
    else:
        shown = min(SHOWN_ROWS, len(sets))
        print(
            f"predicted label sets (score >= {THRESHOLD:g}; first {shown} of {len(sets)} rows; -o writes all):"
        )
        for i in range(shown):
            print(f"row {i + 1}: {sets[i] or '(none)'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    return {"fit-predict": cmd_fit_predict}[args.command](args)
