"""Great Expectations per data set: every value finite, no constant column, n >= 2 x the most constants an
expression of the maximum length can hold ((L + 1) / 2 leaves)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import Column, validate_frame, write_validation
    from models.sr_pareto.data import TARGET

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    need = 2 * ((meta["max_length"] + 1) // 2)
    summaries = []
    for ds in meta["datasets"]:
        frame = read_csv(ctx.paths.prepared / f"{ds['name']}.csv")
        cols = list(frame.columns)
        spread = pd.DataFrame({"column": cols, "distinct": [frame[c].nunique() for c in cols]})
        long = frame.melt(var_name="column", value_name="value")
        long["finite"] = pd.to_numeric(long["value"], errors="coerce").map(
            lambda v: bool(pd.notna(v) and abs(v) < float("inf"))
        )
        summaries.append(validate_frame(frame, ds["name"], [Column(TARGET)], min_rows=need))
        summaries.append(
            validate_frame(long[["finite"]], f"{ds['name']}.values", [Column("finite", values=(True,))])
        )
        summaries.append(validate_frame(spread, f"{ds['name']}.columns", [Column("distinct", min=2)]))
    write_validation(ctx.out, summaries)
