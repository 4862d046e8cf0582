"""GX suites on what prepare wrote: per grid K, strictly increasing SL times (eta > 0 at every step: a repeated
t, as a clipped schedule gives, would make z = 0/0), positive and finite, K + 1 of them; the mixture's weights
positive and summing to 1 and its sigma positive; the data: one row per dimension with its range within
[-1, 1] (the network's target) and no non-finite value."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import (
        Column,
        failed_table,
        npz_arrays,
        ok_columns,
        validate_frame,
        write_validation,
    )

    summaries = []
    grids = read_csv(ctx.paths.prepared / "grids.csv")
    rows = []
    for K, g in grids.groupby("K", sort=True):
        t = g.sort_values("k").t.to_numpy()
        eta = np.diff(t)
        rows.append(
            {
                "K": int(K),
                "points": len(t),
                "points_ok": bool(len(t) == K + 1),
                "min_eta": float(eta.min()) if len(eta) else -1.0,
                "t_first": float(t[0]),
                "t_finite": bool(np.isfinite(t).all()),
            }
        )
    summaries.append(
        validate_frame(
            pd.DataFrame(rows),
            "grids",
            [
                Column("K", kind="integer", min=2),
                Column("points", kind="integer", min=3),
                Column("points_ok", kind="bool", values=(True,)),
                Column("min_eta", min=1e-300),
                Column("t_first", min=1e-300),
                Column("t_finite", kind="bool", values=(True,)),
            ],
            key="K",
        )
    )
    mix = read_csv(ctx.paths.prepared / "mixture.csv")
    summaries.append(
        validate_frame(
            pd.DataFrame(
                [
                    {
                        "weights_sum": float(mix.weight.sum()),
                        "weight_min": float(mix.weight.min()),
                        "sigma_min": float(mix.sigma.min()),
                        "components": len(mix),
                    }
                ]
            ),
            "mixture",
            [
                Column("weights_sum", min=1 - 1e-9, max=1 + 1e-9),
                Column("weight_min", min=1e-300),
                Column("sigma_min", min=1e-300),
                Column("components", kind="integer", min=1),
            ],
            rows=1,
        )
    )
    arrays, status = npz_arrays(ctx.paths.prepared / "data.npz", {"x": ("number", 2)})
    summaries.append(validate_frame(pd.DataFrame([status]), "data.npz", ok_columns(status), rows=1))
    if "x" in arrays:
        x = arrays["x"].astype(np.float64)
        finite = np.isfinite(x)
        dims = pd.DataFrame(
            {
                "dim": np.arange(x.shape[1]),
                "min": np.where(finite.all(0), x.min(0), np.nan),
                "max": np.where(finite.all(0), x.max(0), np.nan),
                "nonfinite": (~finite).sum(0),
            }
        )
        summaries.append(
            validate_frame(
                dims,
                "data",
                [
                    Column("dim", kind="integer", min=0),
                    Column("min", min=-1.0, max=1.0),
                    Column("max", min=-1.0, max=1.0),
                    Column("nonfinite", kind="integer", values=(0,)),
                ],
                key="dim",
            )
        )
    else:
        summaries.append(failed_table("data", "data.npz has no usable x"))
    write_validation(ctx.out, summaries)
