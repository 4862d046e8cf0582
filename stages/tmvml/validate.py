"""GX suites on what prepare wrote: every array present with its kind and rank (npz_arrays); the real set (each
view finite, with y's rows and the width meta.json records; y of the recorded labels, 0/1, every label positive
somewhere; folds in range and none empty), the synthetic draws (finite views, 0/1 labels, each part's views with
its labels' rows, the test part as wide as the training part) and the planted tensors (finite, G* and its noisy
copy of one shape)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _arrays(ctx, name: str, spec: dict, summaries: list):
    """The arrays of one file, its description table appended; None when one is missing or malformed."""
    import pandas as pd

    from icml25.validation import npz_arrays, ok_columns, validate_frame

    arrays, status = npz_arrays(ctx.paths.prepared / name, spec)
    summaries.append(validate_frame(pd.DataFrame([status]), name, ok_columns(status), rows=1))
    return arrays if len(arrays) == len(spec) else None


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    folds, widths, labels = int(meta["folds"]), meta["views"], len(meta["labels"])
    summaries: list = []
    spec = {
        "y": ("integer", 2),
        "fold": ("integer", 1),
        **{f"x{v}": ("number", 2) for v in range(len(widths))},
    }
    real = _arrays(ctx, "real.npz", spec, summaries)
    if real is not None:
        y, fold = real["y"], real["fold"]
        rows = [{"view": v + 1, "rows": len(real[f"x{v}"]), "columns": real[f"x{v}"].shape[1],
                 "expected_columns": int(w), "nonfinite": int((~np.isfinite(real[f"x{v}"])).sum())}
                for v, w in enumerate(widths)]  # fmt: skip
        frame = pd.DataFrame(rows)
        frame["width_mismatch"] = (frame["columns"] != frame.pop("expected_columns")).astype(int)
        summaries.append(
            validate_frame(
                frame,
                "real_views",
                [
                    Column("view", kind="integer", min=1),
                    Column("rows", kind="integer", values=(len(y),)),
                    Column("columns", kind="integer", min=1),
                    Column("nonfinite", kind="integer", values=(0,)),
                    Column("width_mismatch", kind="integer", values=(0,)),
                ],  # fmt: skip
                key="view",
            )
        )
        counts = np.bincount(fold[(fold >= 0) & (fold < folds)], minlength=folds)
        summaries.append(
            validate_frame(
                pd.DataFrame(
                    [
                        {
                            "label_columns": y.shape[1],
                            "label_values_not_01": int((~np.isin(y, (0, 1))).sum()),
                            "labels_never_positive": int(((y == 1).sum(0) == 0).sum()),
                            "fold_rows": len(fold),
                            "fold_out_of_range": int(((fold < 0) | (fold >= folds)).sum()),
                            "empty_folds": int((counts == 0).sum()),
                        }
                    ]
                ),  # fmt: skip
                "real_labels",
                [
                    Column("label_columns", kind="integer", values=(labels,)),
                    Column("label_values_not_01", kind="integer", values=(0,)),
                    Column("labels_never_positive", kind="integer", values=(0,)),
                    Column("fold_rows", kind="integer", values=(len(y),)),
                    Column("fold_out_of_range", kind="integer", values=(0,)),
                    Column("empty_folds", kind="integer", values=(0,)),
                ],  # fmt: skip
                rows=1,
            )
        )
    nv = int(meta["synthetic_views"])
    spec = {f"{key}_{part}_{a}": ("number", 2) for key in meta["synthetic"] for part in ("train", "test")
            for a in [*(f"x{v}" for v in range(nv)), "y"]}  # fmt: skip
    if spec:
        syn = _arrays(ctx, "synthetic.npz", spec, summaries)
        if syn is not None:
            draws = []
            for key in meta["synthetic"]:
                for part in ("train", "test"):
                    yv = syn[f"{key}_{part}_y"]
                    views = [syn[f"{key}_{part}_x{v}"] for v in range(nv)]
                    other = "train" if part == "test" else "test"
                    wide = [syn[f"{key}_{other}_x{v}"].shape[1] for v in range(nv)] + [
                        syn[f"{key}_{other}_y"].shape[1]
                    ]
                    draws.append({"draw": f"{key}_{part}",
                                  "nonfinite": int(sum((~np.isfinite(x)).sum() for x in views)),
                                  "row_mismatch": int(sum(len(x) != len(yv) for x in views)),
                                  "width_mismatch": int(sum(a != b for a, b in zip([x.shape[1] for x in views]
                                                                                    + [yv.shape[1]], wide, strict=True))),
                                  "label_values_not_01": int((~np.isin(yv, (0, 1))).sum())})  # fmt: skip
            summaries.append(
                validate_frame(
                    pd.DataFrame(draws),
                    "synthetic",
                    [
                        Column("draw", kind="string"),
                        Column("nonfinite", kind="integer", values=(0,)),
                        Column("row_mismatch", kind="integer", values=(0,)),
                        Column("width_mismatch", kind="integer", values=(0,)),
                        Column("label_values_not_01", kind="integer", values=(0,)),
                    ],  # fmt: skip
                    key="draw",
                )
            )
    seeds = int(meta["planted_seeds"])
    spec = {f"{a}_s{k}": ("float", 3) for k in range(seeds) for a in ("star", "noisy")}
    planted = _arrays(ctx, "planted.npz", spec, summaries)
    if planted is not None:
        tensors = []
        for k in range(seeds):
            star, noisy = planted[f"star_s{k}"], planted[f"noisy_s{k}"]
            tensors.append({"seed": k, "nonfinite": int((~np.isfinite(star)).sum() + (~np.isfinite(noisy)).sum()),
                            "shape_mismatch": int(star.shape != noisy.shape)})  # fmt: skip
        summaries.append(
            validate_frame(
                pd.DataFrame(tensors),
                "planted",
                [
                    Column("seed", kind="integer", min=0),
                    Column("nonfinite", kind="integer", values=(0,)),
                    Column("shape_mismatch", kind="integer", values=(0,)),
                ],
                key="seed",
            )
        )
    write_validation(ctx.out, summaries)
