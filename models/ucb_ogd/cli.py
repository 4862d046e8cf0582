"""``icml25 ucb_ogd``: which source to annotate next, and UCB-OGD against uniform sampling on a user's sources.

    icml25 ucb_ogd next HISTORY.csv [--sources a,b,c]
    icml25 ucb_ogd simulate DIR --target COL --budget T [--seeds 5] [--seed S] [-o result.json]

``next`` replays the rows (source, loss) of HISTORY.csv in file order through
:class:`~models.ucb_ogd.UCBSampler` (``update(k, loss)``, every loss in [0, 1]: the loss of the sample when it
was collected) and prints, per source, n_k, the mean loss S_k / n_k and the UCB index of the next round

    UCB_k(t) = S_k / n_k + sqrt(2 ln t / n_k),   t = (rows of HISTORY) + 1,

(+inf for a source never sampled), then, on the last line, the source to annotate next: the argmax, ties to the
first source; a source never sampled is picked first (the warm start, in source order). The sources are the
values of the ``source`` column in order of first appearance, or ``--sources``, the full list in its order
(it may name sources with no row yet; a row naming a source outside it is an error).

``simulate`` runs UCB-OGD and the uniform baseline on a folder of CSV files, one per source
(:func:`models.ucb_ogd.sources.csv_pools`: numeric features and the integer class column ``--target``, each file
split 70 / 30 into a train pool and a test pool), multinomial logistic regression under projected OGD with the
same sample streams for both methods (:func:`models.ucb_ogd.experiment.digits_seed`), T = ``--budget`` labels,
for ``--seeds`` seeds (seed s: ``numpy.random.default_rng([S, s])``, S = ``--seed``, which draws the split and the
streams). It prints, per method, the worst-source test accuracy of the average iterate (mean and s.d. over
seeds) and the share of the labels each source got; ``-o`` writes the same as JSON (atomically).

Bad input (a missing file or folder, a missing ``source``/``loss`` column, a non-numeric loss or one outside
[0, 1], an unknown source, fewer than 2 sources, a budget below the number of sources, --seeds < 1, no target
column) is a one-line error naming the value, exit status 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.outputs import atomic_output, check_output

METHODS = ("ucb_ogd", "uniform")


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 ucb_ogd",
        description="Adaptive data collection across sources (UCB-OGD, Zang et al., ICML 2025): a UCB sampler "
        "over sources against online gradient descent, for the worst-source loss.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    n = sub.add_parser(
        "next",
        help="the UCB index of every source and the source to annotate next",
        description="Replay a labelling history (CSV with columns source, loss; loss in [0, 1], observed "
        "when the sample was collected) through the UCB sampler; print n, mean loss and UCB index "
        "S_k/n_k + sqrt(2 ln t / n_k) (t = rows + 1) per source, then the next source.",
    )
    n.add_argument(
        "history", type=Path, metavar="HISTORY.csv", help="rows (source, loss), in collection order"
    )
    n.add_argument(
        "--sources",
        metavar="a,b,c",
        help="every source, in order (ties go to the first; a source with no row is picked first); "
        "default: the source column's values in order of first appearance",
    )
    s = sub.add_parser(
        "simulate",
        help="UCB-OGD against uniform sampling on a folder of per-source CSV files",
        description="One CSV file per source (same numeric feature columns, an integer class column); "
        "each file is split 70/30 into train and test pools. Both methods see the same sample streams; "
        "prints the worst-source test accuracy and the label allocation per method.",
    )
    s.add_argument("folder", type=Path, metavar="DIR", help="a folder of *.csv files, one per source")
    s.add_argument("--target", required=True, metavar="COL", help="the class label column")
    s.add_argument(
        "--budget", type=int, required=True, metavar="T", help="labels to collect (T >= number of sources)"
    )
    s.add_argument("--seeds", type=int, default=5, help="number of seeds (default 5)")
    s.add_argument(
        "--seed", type=int, default=0, help="base seed S; seed s uses default_rng([S, s]) (default 0)"
    )
    s.add_argument("-o", "--output", type=Path, help="write the result here as JSON")
    return parser


# ------------------------------------------------------------------------------------------------ next
def read_history(path: Path) -> Any:
    """HISTORY.csv as a DataFrame of strings (source names kept as written), or a UserError naming the path."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable CSV file ({str(exc).splitlines()[0]})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    for col in ("source", "loss"):
        if col not in frame.columns:
            raise UserError(f"{path}: no column {col!r} (columns: {', '.join(frame.columns)})")
    return frame


def parse_sources(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",")]
    if any(not s for s in names):
        raise UserError(f"--sources {text!r}: an empty source name")
    dup = sorted({s for s in names if names.count(s) > 1})
    if dup:
        raise UserError(f"--sources {text!r}: source {dup[0]!r} named twice")
    return names


def next_source(frame: Any, sources: list[str] | None = None, where: str = "HISTORY") -> tuple[Any, str]:
    """The Python entry of ``next``: (a DataFrame with one row per source: source, n, mean_loss, ucb_index, and
    the sampler), the name of the next source. ``frame``: columns source and loss (strings or numbers), rows in
    collection order. ValueError naming the row (counted from 1) or the value on bad input."""
    import pandas as pd

    from .sampler import UCBSampler

    names = [str(s).strip() for s in frame["source"]]
    losses = []
    for i, (name, raw) in enumerate(zip(names, frame["loss"], strict=True), start=1):
        if not name:
            raise ValueError(f"{where} row {i}: empty source")
        try:
            loss = float(str(raw).strip())
        except ValueError:
            raise ValueError(f"{where} row {i}: loss {str(raw)!r} is not a number") from None
        if not 0.0 <= loss <= 1.0:  # NaN fails too
            raise ValueError(f"{where} row {i}: loss {str(raw).strip()} outside [0, 1]")
        losses.append(loss)
    if sources is None:
        sources = list(dict.fromkeys(names))
    else:
        known = set(sources)
        for i, name in enumerate(names, start=1):
            if name not in known:
                raise ValueError(
                    f"{where} row {i}: unknown source {name!r} (--sources: {', '.join(sources)})"
                )
    if len(sources) < 2:
        found = f"1 source ({sources[0]})" if sources else "no source (no row)"
        raise ValueError(
            f"{where}: {found}; at least 2 are needed (name every source with --sources a,b,...)"
        )
    index = {name: k for k, name in enumerate(sources)}
    sampler = UCBSampler(len(sources))
    for name, loss in zip(names, losses, strict=True):
        sampler.update(index[name], loss)
    table = pd.DataFrame(
        {
            "source": sources,
            "n": sampler.counts,
            "mean_loss": sampler.means,
            "ucb_index": sampler.index(),
        }
    )
    return table, sources[sampler.select()]


def cmd_next(args: argparse.Namespace) -> int:
    frame = read_history(args.history)
    sources = parse_sources(args.sources) if args.sources is not None else None
    try:
        table, nxt = next_source(frame, sources, where=str(args.history))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    t = int(table.n.sum()) + 1
    width = max(6, *(len(s) for s in table.source))
    print(f"{len(frame)} rows, {len(table)} sources; round t = {t}: UCB = S/n + sqrt(2 ln t / n)")
    print(f"{'source':<{width}}  {'n':>6}  {'mean loss':>9}  UCB index")
    for row in table.itertuples(index=False):
        if row.n == 0:
            mean, idx = "-", "inf (unsampled)"
        else:
            mean, idx = f"{row.mean_loss:.6f}", f"{row.ucb_index:.6f}"
        print(f"{row.source:<{width}}  {row.n:>6}  {mean:>9}  {idx}")
    k = list(table.source).index(nxt)
    if table.n[k] == 0:
        why = "never sampled: the warm start takes each source once, in order"
    else:
        top = table.ucb_index[k]
        tied = [s for s, v in zip(table.source, table.ucb_index, strict=True) if v == top and s != nxt]
        why = f"highest UCB index {top:.6f}" + (
            f", tied with {', '.join(tied)} (ties go to the first source)" if tied else ""
        )
    print(f"next: {nxt} ({why})")
    return 0


# ------------------------------------------------------------------------------------------------ simulate
def simulate(folder: Path | str, target: str, budget: int, seeds: int = 5, seed: int = 0) -> dict[str, Any]:
    """The Python entry of ``simulate``: UCB-OGD and uniform on the folder's sources (module docstring); a
    JSON-ready dict. ValueError naming the problem on bad input (before any run)."""
    import numpy as np
    import pandas as pd

    from .experiment import digits_seed, worst_source_gain, worst_source_table
    from .sources import csv_pools

    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    rngs = [np.random.default_rng([seed, s]).spawn(2) for s in range(seeds)]
    pools = csv_pools(folder, rngs[0][0], label=target)  # ValueError naming the file and the problem
    K = pools.n_sources
    if K < 2:
        raise ValueError(f"{folder}: {K} source file ({pools.names[0]}.csv); at least 2 are needed")
    if budget < K:
        raise ValueError(
            f"--budget {budget} is less than the number of sources K = {K} (the warm start labels each once)"
        )
    frames = []
    for s, (pool_rng, run_rng) in enumerate(rngs):
        if s:
            pools = csv_pools(folder, pool_rng, label=target)
        res = digits_seed(pools, budget, run_rng, methods=METHODS)
        frames.append(res["sources"].assign(seed=s))
    frame = pd.concat(frames, ignore_index=True)
    table = worst_source_table(frame)
    avg = frame[frame.output == "average"]
    methods = {}
    for m in METHODS:
        w = table[table.method == m].worst_acc.to_numpy()
        per = avg[avg.method == m].groupby("source")
        acc, labels = per.accuracy.mean(), per.n_labels.mean()
        methods[m] = {
            "worst_accuracy_mean": float(w.mean()),
            "worst_accuracy_sd": float(w.std(ddof=1)) if len(w) > 1 else 0.0,
            "worst_accuracy": [float(v) for v in w],
            "accuracy": {pools.names[k]: float(acc[k]) for k in range(K)},
            "labels": {pools.names[k]: float(labels[k]) for k in range(K)},
            "share": {pools.names[k]: float(labels[k] / budget) for k in range(K)},
            "hard_source_ratio": float(table[table.method == m].hard_ratio.mean()),
        }
    return {
        "folder": str(folder),
        "target": target,
        "budget": int(budget),
        "seeds": int(seeds),
        "seed": int(seed),
        "sources": list(pools.names),
        "n_classes": int(pools.n_classes),
        "n_features": int(pools.n_features),
        "output": "average",
        "methods": methods,
        "worst_accuracy_gain": worst_source_gain(table),
    }


def cmd_simulate(args: argparse.Namespace) -> int:
    if args.seeds < 1:
        raise UserError(f"--seeds must be >= 1, got {args.seeds}")
    if args.output:
        check_output(args.output)
    try:
        result = simulate(args.folder, args.target, args.budget, args.seeds, args.seed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    names = result["sources"]
    print(
        f"{len(names)} sources ({', '.join(names)}), {result['n_classes']} classes, budget T = {args.budget}, "
        f"{args.seeds} seed{'s' if args.seeds > 1 else ''} (average iterate)"
    )
    print(f"{'method':<8}  {'worst-source accuracy':<22}  share of the labels per source")
    for m, r in result["methods"].items():
        worst = f"{r['worst_accuracy_mean']:.4f} (sd {r['worst_accuracy_sd']:.4f})"
        shares = ", ".join(f"{k} {v:.3f}" for k, v in r["share"].items())
        print(f"{m:<8}  {worst:<22}  {shares}")
    gain = result["worst_accuracy_gain"]
    print(f"worst-source accuracy, UCB-OGD minus uniform: {gain:+.4f}")
    if args.output:
        with atomic_output(args.output) as tmp:
            tmp.write_text(json.dumps(result, indent=1, allow_nan=False) + "\n")
        print(f"wrote {args.output}")
    return 0


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "next":
        return cmd_next(args)
    if args.command == "simulate":
        return cmd_simulate(args)
    raise AssertionError(args.command)  # argparse rejects other commands
