"""Great Expectations on the split: digits.npz holds x_<split> (float images x 64 pixels) and y_<split> (integer
labels) for train and test, as many labels as images, the two splits together all 1,797 digits; pixels in
[0, 1], labels 0-9, at least 10 rows per split."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

SPLITS = ("train", "test")
#: scikit-learn's bundled digits (prepare splits all of them): 1,797 images of 8 x 8 pixels.
IMAGES, PIXELS = 1797, 64


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.validation import Column, npz_arrays, ok_columns, validate_frame, write_validation

    expected = {f"{a}_{s}": ("float", 2) if a == "x" else ("integer", 1) for s in SPLITS for a in ("x", "y")}
    d, status = npz_arrays(ctx.paths.prepared / "digits.npz", expected)
    files = []
    for split in SPLITS:
        x, y = d.get(f"x_{split}"), d.get(f"y_{split}")
        shapes = "not checked"
        if x is not None and y is not None:
            shapes = (
                "ok"
                if x.shape == (len(y), PIXELS)
                else f"x {x.shape}, y {y.shape}, expected (n, {PIXELS}), (n,)"
            )
        files.append({"split": split, "x": status[f"x_{split}"], "y": status[f"y_{split}"], "shapes": shapes})
    good = [f["split"] for f in files if all(f[k] == "ok" for k in ("x", "y", "shapes"))]
    total = sum(len(d[f"y_{s}"]) for s in good)
    summaries = [
        validate_frame(
            pd.DataFrame(files),
            "digits.npz",
            [Column("split", kind="string", values=SPLITS), *ok_columns(["x", "y", "shapes"])],
            rows=len(SPLITS),
            key="split",
        ),
        validate_frame(
            pd.DataFrame({"images": [total if len(good) == len(SPLITS) else IMAGES]}),
            "splits",
            [Column("images", kind="integer", values=(IMAGES,))],
            rows=1,
        ),
    ]
    columns = [
        Column("pixel_min", min=0.0, max=1.0),
        Column("pixel_max", min=0.0, max=1.0),
        Column("label", kind="integer", values=tuple(range(10))),
    ]
    for split in good:
        x, y = d[f"x_{split}"], d[f"y_{split}"]
        frame = pd.DataFrame({"pixel_min": x.min(1), "pixel_max": x.max(1), "label": y})
        summaries.append(validate_frame(frame, split, columns, min_rows=10))
    write_validation(ctx.out, summaries)
