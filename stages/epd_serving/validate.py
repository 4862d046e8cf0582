"""GX suites on what prepare wrote: the workloads table (seed, rate, images, request, arrival, text, output;
images >= 1, output >= 1, text >= 0, arrival >= 0), arrivals non-decreasing within every (seed, rate, images)
workload with the expected number of requests, and the cost model's constants (every one finite and >= 0; the
ones a time or a size is divided by or scales with > 0)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

#: Constants that may be 0 (intercepts and second-order terms); every other one must be > 0.
MAY_BE_ZERO = ("a_E", "a_P", "c_P", "a_D", "b_D", "c_D")


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import Column, read_meta, validate_frame, write_validation

    meta = read_meta(ctx.paths.prepared / "meta.json")
    frame = read_csv(ctx.paths.prepared / "workloads.csv")
    columns = [
        Column("seed", kind="integer", min=0),
        Column("rate", min=1e-12),
        Column("images", kind="integer", min=1),
        Column("request", kind="integer", min=0),
        Column("arrival", min=0.0),
        Column("text", kind="integer", min=0),
        Column("output", kind="integer", min=1),
    ]
    summaries = [
        validate_frame(frame, "workloads", columns, ordered=True, key=("seed", "rate", "images", "request"))
    ]
    if summaries[0]["success"]:
        groups = []
        for (seed, rate, images), g in frame.groupby(["seed", "rate", "images"], sort=True):
            a = g.sort_values("request").arrival.to_numpy()
            groups.append(
                {
                    "seed": int(seed),
                    "rate": float(rate),
                    "images": int(images),
                    "requests": len(g),
                    "non_decreasing": bool(np.all(np.diff(a) >= 0)),
                }
            )
        summaries.append(
            validate_frame(
                pd.DataFrame(groups),
                "workload arrivals",
                [
                    Column("seed", kind="integer"),
                    Column("rate"),
                    Column("images", kind="integer"),
                    Column("requests", kind="integer", values=(int(meta["requests"]),)),
                    Column("non_decreasing", kind="bool", values=(True,)),
                ],
                rows=int(meta["seeds"]) * len(meta["rates"]) * len(meta["images"]),
                key=("seed", "rate", "images"),
            )
        )
    if "switch_rate" in meta:
        sw = read_csv(ctx.paths.prepared / "switching.csv")
        summary = validate_frame(
            sw,
            "switching",
            [
                Column("seed", kind="integer", min=0),
                Column("request", kind="integer", min=0),
                Column("arrival", min=0.0),
                Column("images", kind="integer", min=1),
                Column("text", kind="integer", min=0),
                Column("output", kind="integer", min=1),
            ],
            ordered=True,
            rows=int(meta["seeds"]) * int(meta["requests"]),
            key=("seed", "request"),
        )
        summaries.append(summary)
        if summary["success"]:
            mono = [
                {
                    "seed": int(seed),
                    "non_decreasing": bool(np.all(np.diff(g.sort_values("request").arrival) >= 0)),
                }
                for seed, g in sw.groupby("seed")
            ]
            summaries.append(
                validate_frame(
                    pd.DataFrame(mono),
                    "switching arrivals",
                    [Column("seed", kind="integer"), Column("non_decreasing", kind="bool", values=(True,))],
                    key="seed",
                )
            )
    costs = ctx.read_json(ctx.paths.prepared / "costs.json")
    table = pd.DataFrame(
        [{"constant": k, "amount": float(v), "zero_ok": k in MAY_BE_ZERO} for k, v in costs.items()]
    )
    table["positive"] = (table.amount > 0) | (table.zero_ok & (table.amount == 0))
    summaries.append(
        validate_frame(
            table[["constant", "amount", "positive"]],
            "costs",
            [
                Column("constant", kind="string"),
                Column("amount", min=0.0),
                Column("positive", kind="bool", values=(True,)),
            ],
            min_rows=1,
            key="constant",
        )
    )
    write_validation(ctx.out, summaries)
