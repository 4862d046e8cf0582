"""GX suite on the evaluation layouts prepare wrote: one row per episode, start in the left column and goal in the
right one (rows in the grid), exactly ``hazards`` hazards, none outside the hazard band or on the start or goal,
each map a 0/1 string of size x size cells, and a finite, non-negative blind-route cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    meta = ctx.read_json(ctx.paths.prepared / "env.json")
    env = meta["env"]
    size = int(env["size"])
    frame = pd.read_csv(ctx.paths.prepared / "layouts.csv", dtype={"map": str})
    if "map" in frame:  # checked as two numbers: its length and its characters other than 0 and 1
        maps = frame.pop("map").fillna("")
        frame["map_cells"] = maps.str.len()
        frame["map_not_01"] = maps.str.count("[^01]")
    summary = validate_frame(
        frame,
        "layouts",
        [
            Column("episode", kind="integer", min=0, max=int(meta["episodes"]) - 1),
            Column("start_row", kind="integer", min=0, max=size - 1),
            Column("start_col", kind="integer", values=(0,)),
            Column("goal_row", kind="integer", min=0, max=size - 1),
            Column("goal_col", kind="integer", values=(size - 1,)),
            Column("hazards", kind="integer", values=(int(env["hazards"]),)),
            Column("band_lo", kind="integer", min=0, max=size - 1),
            Column("band_hi", kind="integer", min=0, max=size - 1),
            Column("outside_band", kind="integer", values=(0,)),
            Column("on_endpoints", kind="integer", values=(0,)),
            Column("blind_cost", min=0.0, max=float(size * size)),
            Column("map_cells", kind="integer", values=(size * size,)),
            Column("map_not_01", kind="integer", values=(0,)),
        ],
        rows=int(meta["episodes"]),
        key="episode",
    )
    write_validation(ctx.out, [summary])
