"""The oracle and op checks over every problem, the length deviations, the scored replies, and every number
the report shows: the sigmoid and inference-scaling fits, the AUC per k, the accuracy at op >= 10
(models/gsm_infinite/checks.py)."""

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
        check_problems,
        check_summary,
        length_summary,
        reasoner_fits,
        score_replies,
        sigmoid_curve,
    )

    sets = sorted(ctx.paths.prepared.glob("*.jsonl"))
    checks, lengths = check_problems(itertools.chain.from_iterable(read_jsonl(p) for p in sets))
    pd.DataFrame(checks).to_csv(ctx.out / "checks.csv", index=False)
    pd.DataFrame(lengths, columns=LENGTH_COLUMNS).to_csv(ctx.out / "lengths.csv", index=False)
    tables = []
    for path in sorted((ctx.paths.trained / "replies").glob("*.jsonl")):
        tables += score_replies(read_jsonl(path), path.stem)
    pd.DataFrame(tables).to_csv(ctx.out / "accuracy.csv", index=False)
    ctx.carry(ctx.paths.trained, "meta.json")

    # the summaries are computed from the tables as written (what the report reads back)
    fits = reasoner_fits(pd.read_csv(ctx.out / "accuracy.csv"))
    summary = {
        "checks": check_summary(pd.read_csv(ctx.out / "checks.csv")),
        "lengths": length_summary(pd.read_csv(ctx.out / "lengths.csv")),
        **fits,
    }
    ctx.write_json("summary.json", summary)
    pd.DataFrame(sigmoid_curve(fits["sigmoid"], *fits["ops"])).to_csv(
        ctx.out / "sigmoid_curve.csv", index=False
    )
    ctx.log.info("%d problems checked, %d accuracy rows", len(checks), len(tables))
