"""The oracle and op checks over every problem (op recounted from the prompt text), the length deviations, the
scored replies, and every number the report shows: the planted reasoner's fits against their planted values,
the h-round reasoner against its exact expectation, retrieval on the noisy sets (models/gsm_infinite/checks.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import itertools

    import pandas as pd

    from icml25.io import read_jsonl
    from models.gsm_infinite.checks import (
        LENGTH_COLUMNS,
        PROBLEM_COLUMNS,
        check_problems,
        check_summary,
        depth_fits,
        hround_summary,
        length_summary,
        retrieval_summary,
        score_replies,
        sigmoid_curve,
        symbolic_rows,
    )

    sets = sorted(ctx.paths.prepared.glob("*.jsonl"))
    checks, lengths = check_problems(itertools.chain.from_iterable(read_jsonl(p) for p in sets))
    pd.DataFrame(checks).to_csv(ctx.out / "checks.csv", index=False)
    pd.DataFrame(lengths, columns=LENGTH_COLUMNS).to_csv(ctx.out / "lengths.csv", index=False)
    sym = []
    for path in sorted(ctx.paths.prepared.glob("symbolic*.jsonl")):
        sym += symbolic_rows(read_jsonl(path), path.stem)
    pd.DataFrame(sym, columns=PROBLEM_COLUMNS).to_csv(ctx.out / "symbolic_problems.csv", index=False)
    tables, retrieval = [], []
    for path in sorted((ctx.paths.trained / "replies").glob("*.jsonl")):
        results = list(read_jsonl(path))
        tables += score_replies(results, path.stem)
        if path.stem.endswith(".retrieval"):
            stem = path.stem.rsplit(".", 1)[0]
            retrieval += [{"set": stem, "id": r["id"], "correct": bool(r["correct"])} for r in results]
    pd.DataFrame(tables).to_csv(ctx.out / "accuracy.csv", index=False)
    pd.DataFrame(retrieval, columns=["set", "id", "correct"]).to_csv(ctx.out / "retrieval.csv", index=False)
    ctx.carry(ctx.paths.trained, "meta.json")

    # the summaries are computed from the tables as written (what the report reads back)
    acc = pd.read_csv(ctx.out / "accuracy.csv")
    problems = pd.read_csv(ctx.out / "symbolic_problems.csv")
    depth = depth_fits(acc)
    summary = {
        "checks": check_summary(pd.read_csv(ctx.out / "checks.csv")),
        "lengths": length_summary(pd.read_csv(ctx.out / "lengths.csv")),
        "depth": depth,
        "hround": hround_summary(acc, problems),
        "retrieval": retrieval_summary(acc, problems, pd.read_csv(ctx.out / "retrieval.csv")),
    }
    ctx.write_json("summary.json", summary)
    pd.DataFrame(sigmoid_curve(depth["sigmoid"], *depth["ops"])).to_csv(
        ctx.out / "sigmoid_curve.csv", index=False
    )
    ctx.log.info("%d problems checked, %d accuracy rows", len(checks), len(tables))
