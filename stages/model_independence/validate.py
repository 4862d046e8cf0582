"""Great Expectations on both splits: exactly the columns p0..p63 and label (models/model_independence/data.py),
integers, every pixel in [0, 16], labels 0-9, at least 10 rows per split and all 1,797 digits over the two."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

#: scikit-learn's bundled digits, all of which prepare splits.
IMAGES = 1797


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import Column, failed_table, validate_frame, write_validation
    from models.model_independence.data import PIXEL_MAX, PIXELS, SPLITS

    columns = [Column(p, kind="integer", min=0, max=PIXEL_MAX) for p in PIXELS]
    columns.append(Column("label", kind="integer", values=tuple(range(10))))
    summaries, images, readable = [], 0, 0
    for split in SPLITS:
        try:
            frame = read_csv(ctx.paths.prepared / f"{split}.csv")
        except ValueError as exc:
            summaries.append(failed_table(split, str(exc)))
            continue
        summaries.append(validate_frame(frame, split, columns, min_rows=10))
        images, readable = images + len(frame), readable + 1
    if readable == len(SPLITS):
        summaries.append(
            validate_frame(
                pd.DataFrame({"images": [images]}),
                "splits",
                [Column("images", kind="integer", values=(IMAGES,))],
            )
        )
    write_validation(ctx.out, summaries)
