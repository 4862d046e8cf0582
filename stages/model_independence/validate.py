"""Great Expectations on both splits: every pixel column p0..p63 in [0, 16], labels 0-9, at least 10 rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from icml25.tables import read_csv
    from icml25.validation import Column, validate_frame, write_validation
    from models.model_independence.data import PIXEL_MAX, PIXELS, SPLITS

    columns = [Column(p, min=0, max=PIXEL_MAX) for p in PIXELS] + [Column("label", values=tuple(range(10)))]
    summaries = [
        validate_frame(read_csv(ctx.paths.prepared / f"{split}.csv"), split, columns, min_rows=10)
        for split in SPLITS
    ]
    write_validation(ctx.out, summaries)
