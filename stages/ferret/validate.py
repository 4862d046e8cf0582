"""GX suites on what prepare wrote: the arrays (right kinds and ranks); a partition (every training row owned by
exactly one client in range, the per-client counts summing to the training rows); at least ``min_rows`` rows per
client; values in range (features finite, the digits' pixels in [0, 1]; labels in [0, classes) with every class
present in the training rows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

SPEC = {
    "x_train": ("number", 2),
    "y_train": ("integer", 1),
    "client": ("integer", 1),
    "x_test": ("number", 2),
    "y_test": ("integer", 1),
}


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import (
        Column,
        failed_table,
        npz_arrays,
        ok_columns,
        validate_frame,
        write_validation,
    )

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    clients, classes, min_rows = int(meta["clients"]), int(meta["classes"]), int(meta["min_rows"])
    arrays, status = npz_arrays(ctx.paths.prepared / "data.npz", SPEC)
    summaries = [validate_frame(pd.DataFrame([status]), "data.npz", ok_columns(status), rows=1)]
    if len(arrays) < len(SPEC):
        summaries.append(failed_table("partition", "data.npz lacks a usable array"))
        write_validation(ctx.out, summaries)
        return
    owner, y, yt = arrays["client"], arrays["y_train"], arrays["y_test"]
    xs = {"train": arrays["x_train"].astype(np.float64), "test": arrays["x_test"].astype(np.float64)}
    in_range = (owner >= 0) & (owner < clients)
    counts = np.bincount(owner[in_range], minlength=clients)
    summaries.append(
        validate_frame(
            pd.DataFrame(
                [
                    {
                        "train_rows": len(y),
                        "owners": len(owner),
                        "owner_out_of_range": int((~in_range).sum()),
                        "owned": int(counts.sum()),
                        "x_train_rows": len(xs["train"]),
                        "x_test_rows": len(xs["test"]),
                        "test_rows": len(yt),
                    }
                ]
            ),
            "partition",
            [
                Column("train_rows", kind="integer", min=1),
                Column("owners", kind="integer", values=(len(y),)),
                Column("owner_out_of_range", kind="integer", values=(0,)),
                Column("owned", kind="integer", values=(len(y),)),
                Column("x_train_rows", kind="integer", values=(len(y),)),
                Column("x_test_rows", kind="integer", values=(len(yt),)),
                Column("test_rows", kind="integer", min=1),
            ],
            rows=1,
        )
    )
    summaries.append(
        validate_frame(
            pd.DataFrame({"client": np.arange(clients), "rows": counts}),
            "clients",
            [Column("client", kind="integer", min=0), Column("rows", kind="integer", min=min_rows)],
            key="client",
        )
    )
    digits = meta["source"] == "digits"
    rows = []
    for split, x in xs.items():
        finite = np.isfinite(x)
        rows.append(
            {
                "split": split,
                "features": x.shape[1],
                "nonfinite": int((~finite).sum()),
                "min": float(x[finite].min()) if finite.any() else np.nan,
                "max": float(x[finite].max()) if finite.any() else np.nan,
            }
        )
    summaries.append(
        validate_frame(
            pd.DataFrame(rows),
            "features",
            [
                Column("split", kind="string", values=("train", "test")),
                Column("features", kind="integer", values=(int(meta["features"]),)),
                Column("nonfinite", kind="integer", values=(0,)),
                Column("min", min=0.0 if digits else None),
                Column("max", max=1.0 if digits else None),
            ],
            key="split",
        )
    )
    present = np.bincount(y[(y >= 0) & (y < classes)], minlength=classes)
    summaries.append(
        validate_frame(
            pd.DataFrame(
                [
                    {
                        "label_min": int(min(y.min(), yt.min())),
                        "label_max": int(max(y.max(), yt.max())),
                        "classes_absent_in_train": int((present == 0).sum()),
                    }
                ]
            ),
            "labels",
            [
                Column("label_min", kind="integer", min=0),
                Column("label_max", kind="integer", max=classes - 1),
                Column("classes_absent_in_train", kind="integer", values=(0,)),
            ],
            rows=1,
        )
    )
    write_validation(ctx.out, summaries)
