"""GX suites on what prepare wrote: images.npz holds ``train`` and ``test`` as 4-d floats; per split, the count
prepare recorded, one channel, the shape the model expects, every value finite and in [-1, 1]."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, npz_arrays, ok_columns, read_meta, validate_frame, write_validation

    meta = read_meta(ctx.paths.prepared / "meta.json")
    expected = {"train": ("float", 4), "test": ("float", 4)}
    arrays, status = npz_arrays(ctx.paths.prepared / "images.npz", expected)
    summaries = [
        validate_frame(
            pd.DataFrame([{"file": "images.npz", **status}]),
            "image file",
            [Column("file", kind="string"), *ok_columns(expected)],
            rows=1,
            key="file",
        )
    ]
    rows = []
    for split, a in arrays.items():
        finite = bool(np.isfinite(a).all())
        rows.append(
            {
                "split": split,
                "images": int(a.shape[0]),
                "channels": int(a.shape[1]),
                "height": int(a.shape[2]),
                "width": int(a.shape[3]),
                "finite": finite,
                "min": float(a.min()) if finite and a.size else 0.0,
                "max": float(a.max()) if finite and a.size else 0.0,
            }
        )
    h, w = meta["shape"][1], meta["shape"][2]
    columns = [
        Column("split", kind="string", values=("train", "test")),
        Column("images", kind="integer", min=1),
        Column("channels", kind="integer", values=(1,)),
        Column("height", kind="integer", values=(h,)),
        Column("width", kind="integer", values=(w,)),
        Column("finite", kind="bool", values=(True,)),
        Column("min", min=-1.0, max=1.0),
        Column("max", min=-1.0, max=1.0),
    ]
    frame = pd.DataFrame(rows, columns=[c.name for c in columns])
    summaries.append(validate_frame(frame, "images", columns, rows=len(arrays), key="split"))
    if len(rows) == 2:
        counts = {r["split"]: r["images"] for r in rows}
        summaries.append(
            validate_frame(
                pd.DataFrame(
                    [
                        {
                            "train_as_recorded": counts["train"] == meta["train"],
                            "test_as_recorded": counts["test"] == meta["test"],
                        }
                    ]
                ),
                "image counts",
                [
                    Column("train_as_recorded", kind="bool", values=(True,)),
                    Column("test_as_recorded", kind="bool", values=(True,)),
                ],
                rows=1,
            )
        )
    write_validation(ctx.out, summaries)
