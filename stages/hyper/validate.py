"""GX suites on what prepare wrote: each grid table's cells (kinds, coordinates, rewards, terminal flags), then one
row per grid: exactly one start and one goal, the goal terminal and worth 1, the distractor as params set it
(worth meta.json's ``distractor_reward`` and non-terminal on ``grid``; worth ``trap_reward`` and terminal on
``grid-trap``),
H and gamma in range; and the run lists (known environments and agents, betas >= 0; the deep variant's where it has runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

KINDS = ("start", "goal", "distractor", "trap", "floor")


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import Column, validate_frame, write_validation

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    summaries, rows = [], []
    cell_columns = [
        Column("state", kind="integer", min=0, max=120),
        Column("x", kind="integer", min=0, max=10),
        Column("y", kind="integer", min=0, max=10),
        Column("kind", kind="string", values=KINDS),
        Column("reward", min=0.0, max=1.0),
        Column("terminal", kind="bool"),
    ]
    for env, trap in (("grid", False), ("grid-trap", True)):
        cells = read_csv(ctx.paths.prepared / f"{env}.csv")
        summaries.append(validate_frame(cells, f"{env} cells", cell_columns, rows=121, key="state"))
        goal = cells[cells.kind == "goal"]
        side = cells[cells.kind == ("trap" if trap else "distractor")]
        rows.append(
            {
                "env": env,
                "starts": int((cells.kind == "start").sum()),
                "goals": len(goal),
                "goal_reward": float(goal.reward.iloc[0]) if len(goal) == 1 else -1.0,
                "goal_terminal": bool(goal.terminal.all()) if len(goal) else False,
                "distractors": len(side),
                "distractor_reward_as_set": bool(
                    len(side) == 1
                    and side.reward.iloc[0] == (meta["trap_reward"] if trap else meta["distractor_reward"])
                ),
                "distractor_terminal_as_set": bool(len(side) == 1 and side.terminal.iloc[0] == trap),
                "horizon": int(meta["horizon"]),
                "gamma": float(meta["gamma"]),
            }
        )
    summaries.append(
        validate_frame(
            pd.DataFrame(rows),
            "grids",
            [
                Column("env", kind="string", values=("grid", "grid-trap")),
                Column("starts", kind="integer", values=(1,)),
                Column("goals", kind="integer", values=(1,)),
                Column("goal_reward", values=(1.0,)),
                Column("goal_terminal", kind="bool", values=(True,)),
                Column("distractors", kind="integer", values=(1,)),
                Column("distractor_reward_as_set", kind="bool", values=(True,)),
                Column("distractor_terminal_as_set", kind="bool", values=(True,)),
                Column("horizon", kind="integer", min=1, max=1000),
                Column("gamma", min=0.5, max=1.0),
            ],
            rows=2,
            key="env",
        )
    )
    run_columns = [
        Column("env", kind="string", values=("grid", "grid-trap")),
        Column("agent", kind="string", values=("curiosity", "decouple", "hyper", "baseline")),
        Column("beta", min=0.0),
        Column("seed", kind="integer", min=0),
        Column("p_rep", min=0.0, max=1.0),
    ]
    summaries.append(validate_frame(read_csv(ctx.paths.prepared / "runs.csv"), "runs", run_columns))
    deep = read_csv(ctx.paths.prepared / "deep_runs.csv")
    if len(deep):  # the deep variant's runs, where the profile has any
        summaries.append(validate_frame(deep, "deep runs", run_columns))
    write_validation(ctx.out, summaries)
