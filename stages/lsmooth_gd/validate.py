"""Great Expectations on the split: pixels in [0, 1], labels 0-9, 64 features, at least 10 rows per split."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    d = np.load(ctx.paths.prepared / "digits.npz")
    summaries = []
    for split in ("train", "test"):
        x, y = d[f"x_{split}"], d[f"y_{split}"]
        frame = pd.DataFrame(
            {
                "pixel_min": x.min(1),
                "pixel_max": x.max(1),
                "label": y,
                "features": np.full(len(y), x.shape[1]),
            }
        )
        columns = [
            Column("pixel_min", min=0.0, max=1.0),
            Column("pixel_max", min=0.0, max=1.0),
            Column("label", values=tuple(range(10))),
            Column("features", values=(64,)),
        ]
        summaries.append(validate_frame(frame, split, columns, min_rows=10))
    write_validation(ctx.out, summaries)
