"""GX suites on what prepare wrote: the layouts (starts, goals and waypoints inside the arena, passage gaps of
free width in [gap_min, gap_max], one row per seed, family and layout, each with an obstacle); the obstacles
(finite centres, radii in (0, 4], each naming a layout that exists; every passage with its gap); the trajectories (every value finite, sigma > 0,
at least two rows per trajectory, steps in t of dt); the held-out states (finite, simulate only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

LAYOUT = ("start_x", "start_y", "goal_x", "goal_y", "waypoint_x", "waypoint_y")


def _step_table(traj):
    """Per seed and trajectory: rows, and the smallest and largest step in t (NaN for a single row)."""
    t = traj.sort_values(["seed", "traj", "t"])
    d = t.groupby(["seed", "traj"]).t.diff()
    out = t.assign(step=d).groupby(["seed", "traj"]).agg(rows=("t", "size"), step_min=("step", "min"),
                                                            step_max=("step", "max"))  # fmt: skip
    return out.reset_index()


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation
    from models.bundle_cbf.system import ARENA

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    gap_min, gap_max = meta["gap"]
    lay = pd.read_csv(ctx.paths.prepared / "layouts.csv")
    obs = pd.read_csv(ctx.paths.prepared / "obstacles.csv")
    traj = pd.read_csv(ctx.paths.prepared / "trajectories.csv")
    keys = ["seed", "family", "layout"]
    summaries = [
        validate_frame(
            lay,
            "layouts",
            [
                Column("seed", kind="integer", min=0, max=meta["seeds"] - 1),
                Column("family", kind="string", values=("passage", "random")),
                Column("layout", kind="integer", min=0),
                *(Column(c, min=0.0, max=ARENA) for c in LAYOUT),
                Column("gap_y", min=0.0, max=ARENA, nullable=True),
                Column("gap_width", min=gap_min, max=gap_max, nullable=True),
            ],  # fmt: skip
            key=keys,
        )
    ]
    counted = obs.groupby(keys).size().rename("obstacles")
    per = lay.set_index(keys).join(counted).fillna({"obstacles": 0}).reset_index()
    dup = lay.duplicated(keys)
    gapless = (lay.family == "passage") & lay[["gap_y", "gap_width"]].isna().any(axis=1)
    orphans = ~obs.set_index(keys).index.isin(lay.set_index(keys).index)
    summaries.append(
        validate_frame(
            pd.DataFrame(
                [
                    {
                        "duplicate_layouts": int(dup.sum()),
                        "layouts_without_obstacles": int((per.obstacles == 0).sum()),
                        "orphan_obstacles": int(orphans.sum()),
                        "passages_without_gap": int(gapless.sum()),
                    }
                ]
            ),
            "layout_keys",
            [
                Column("duplicate_layouts", kind="integer", values=(0,)),
                Column("layouts_without_obstacles", kind="integer", values=(0,)),
                Column("orphan_obstacles", kind="integer", values=(0,)),
                Column("passages_without_gap", kind="integer", values=(0,)),
            ],
            rows=1,
        )
    )
    summaries.append(
        validate_frame(
            obs,
            "obstacles",
            [
                Column("seed", kind="integer", min=0),
                Column("family", kind="string", values=("passage", "random")),
                Column("layout", kind="integer", min=0),
                Column("ox", min=-ARENA, max=2 * ARENA),
                Column("oy", min=-ARENA, max=2 * ARENA),
                Column("r", min=1e-9, max=ARENA),
            ],  # fmt: skip
            key=keys,
        )
    )
    cols = ["seed", "traj", "t", "px", "py", "vx", "vy", "ux", "uy", "sigma", "split"]
    summaries.append(
        validate_frame(
            traj,
            "trajectories",
            [
                Column("seed", kind="integer", min=0),
                Column("traj", kind="integer", min=0),
                Column("t"),
                *(Column(c, min=-1e6, max=1e6) for c in ("px", "py", "vx", "vy", "ux", "uy")),
                Column("sigma", min=1e-12, max=1e6),
                Column("split", kind="string", values=("train", "heldout")),
            ],  # fmt: skip
            key=["seed", "traj", "t"],
            ordered=True,
        )
    )
    if set(cols) <= set(traj.columns) and pd.api.types.is_numeric_dtype(traj.t):
        dt = float(meta["dt"])
        tol = 1e-6 * max(1.0, dt)
        summaries.append(
            validate_frame(
                _step_table(traj),
                "trajectory_steps",
                [
                    Column("seed", kind="integer", min=0),
                    Column("traj", kind="integer", min=0),
                    Column("rows", kind="integer", min=2),
                    Column("step_min", min=dt - tol, max=dt + tol, nullable=True),
                    Column("step_max", min=dt - tol, max=dt + tol, nullable=True),
                ],  # fmt: skip
                key=["seed", "traj"],
            )
        )
    if meta["source"] == "simulate":
        with np.load(ctx.paths.prepared / "heldout.npz") as z:
            v, u = z["v"], z["u"]
        summaries.append(
            validate_frame(
                pd.DataFrame({"vx": v[:, 0], "vy": v[:, 1], "ux": u[:, 0], "uy": u[:, 1]}),
                "heldout",
                [Column(c, min=-1e6, max=1e6) for c in ("vx", "vy", "ux", "uy")],
                rows=int(meta["heldout"]),
            )
        )
    write_validation(ctx.out, summaries)
