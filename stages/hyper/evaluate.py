"""Evaluate: from train's history, per environment and p_rep the success rate and return per agent and beta at the
last evaluation (``table.csv``), success against episodes (``curves.csv``), and ``summary.json``: the claims'
numbers on ``grid`` at the main p_rep (models/hyper/evaluation.py) and the trap's table. The deep variant's table
and curves (``deep_table.csv``, ``deep_curves.csv``; no rows when it did not run), and its size in
``summary.json``'s ``deep`` (null when it did not run). Not gated."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.tables import read_csv
    from models.hyper.evaluation import LARGE, claims, table

    history = read_csv(ctx.paths.trained / "history.csv")
    p_rep = ctx.read_json(ctx.paths.prepared / "meta.json")["p_rep"]
    tables = []
    for (env, p_rep), g in history.groupby(["env", "p_rep"], sort=True):
        tables.append(table(g).assign(env=env, p_rep=p_rep))
    full = pd.concat(tables, ignore_index=True)
    full.to_csv(ctx.out / "table.csv", index=False)
    curves = (
        history.groupby(["env", "p_rep", "agent", "beta", "episode"], sort=True).success.mean().reset_index()
    )
    curves.to_csv(ctx.out / "curves.csv", index=False)
    main = full[(full.env == "grid") & (full.p_rep == p_rep)]
    deep = read_csv(ctx.paths.trained / "deep.csv")
    deep_table = (
        table(deep, clock="step") if len(deep) else pd.DataFrame(columns=["agent", "beta", "success"])
    )
    deep_table.to_csv(ctx.out / "deep_table.csv", index=False)
    deep_curves = deep.groupby(["agent", "beta", "step"], sort=True).success.mean().reset_index()
    deep_curves.to_csv(ctx.out / "deep_curves.csv", index=False)
    ctx.write_json(
        "summary.json",
        {
            "episodes": int(history.episode.max()),
            "p_rep": p_rep,
            "large": list(LARGE),
            "seeds": int(history.seed.nunique()),
            "claims": claims(main),
            "deep": {
                "steps": int(deep.step.max()),
                "seeds": int(deep.seed.nunique()),
                "runs": int((deep.step == deep.step.max()).sum()),
            }
            if len(deep)
            else None,
        },
    )
    ctx.log.info("%d tables, %d runs", len(tables), len(history[history.episode == history.episode.max()]))
