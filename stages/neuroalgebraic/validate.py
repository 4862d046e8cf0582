"""GX suites on what prepare wrote: one row per architecture (at least two widths, every width and the degree
>= 1, the ambient dimension under the rank's cap, the family matching the degree); one row per descent trial
(T symmetric and finite, starting points finite and of the promised shapes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _arch_row(widths: str, degree: int) -> dict:
    from models.neuroalgebraic.neuromanifold import Architecture

    try:
        w = [int(x) for x in str(widths).split(",")]
    except ValueError:
        w = []
    try:
        ambient = Architecture(tuple(w), degree).ambient
    except ValueError:  # too few widths, a width or the degree below 1: no ambient space
        ambient = -1
    return {"layers": len(w), "min_width": min(w, default=0), "ambient": ambient}


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import Column, npz_arrays, ok_columns, validate_frame, write_validation
    from models.neuroalgebraic.neuromanifold import CAP

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    archs = read_csv(ctx.paths.prepared / "architectures.csv")
    rows = [
        {
            "widths": r.widths,
            "family": r.family,
            "degree": int(r.degree),
            **_arch_row(r.widths, int(r.degree)),
        }
        for r in archs.itertuples()
    ]
    frame = pd.DataFrame(rows)
    frame["family_matches_degree"] = (frame.family == "linear") == (frame.degree == 1)
    summaries = [
        validate_frame(
            frame,
            "architectures",
            [
                Column("widths", kind="string"),
                Column("family", kind="string", values=("shallow", "linear", "deep")),
                Column("degree", kind="integer", min=1),
                Column("layers", kind="integer", min=2),
                Column("min_width", kind="integer", min=1),
                Column("ambient", kind="integer", min=1, max=CAP),
                Column("family_matches_degree", kind="bool", values=(True,)),
            ],
            key=["widths", "degree"],
        )
    ]
    shapes = {"T": ("float", 3), "W0": ("float", 3), "A0": ("float", 3), "B0": ("float", 3)}
    arrays, status = npz_arrays(ctx.paths.prepared / "targets.npz", shapes)
    summaries.append(validate_frame(pd.DataFrame([status]), "targets.npz", ok_columns(status), rows=1))
    if len(arrays) == len(shapes):
        T, n, r = arrays["T"], meta["size"], meta["rank"]
        trials = pd.DataFrame(
            {
                "trial": np.arange(len(T)),
                "asymmetry": np.abs(T - T.transpose(0, 2, 1)).max((1, 2)),
                "finite": np.isfinite(T).all((1, 2))
                & np.isfinite(arrays["W0"]).all((1, 2))
                & np.isfinite(arrays["A0"]).all((1, 2))
                & np.isfinite(arrays["B0"]).all((1, 2)),
                "shapes_ok": T.shape[1:] == (n, n)
                and arrays["W0"].shape[1:] == (n, r)
                and arrays["A0"].shape[1:] == (n, r)
                and arrays["B0"].shape[1:] == (r, n),
            }
        )
        summaries.append(
            validate_frame(
                trials,
                "targets",
                [
                    Column("trial", kind="integer", min=0),
                    Column("asymmetry", min=0.0, max=0.0),
                    Column("finite", kind="bool", values=(True,)),
                    Column("shapes_ok", kind="bool", values=(True,)),
                ],
                rows=int(meta["trials"]),
                key="trial",
            )
        )
    write_validation(ctx.out, summaries)
