"""Prepare: the grids as tables (``grid.csv``, ``grid-trap.csv``: one row per cell with its kind, the reward for
arriving there and whether arriving ends the episode), the run lists (``runs.csv``: environment, agent, beta,
seed, p_rep; ``deep_runs.csv``: the deep variant's, on ``grid``, empty unless ``deep.agents`` names any) and ``meta.json`` (H, gamma). No data set: the environments are the project's own."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from models.hyper.agents import runs_of
    from models.hyper.mdp import cells, grid

    pp = ctx.params.prepare
    for trap in (False, True):
        mdp = grid(
            distractor_reward=pp.distractor_reward,
            trap=trap,
            trap_reward=pp.trap_reward,
            horizon=pp.horizon,
            gamma=pp.gamma,
        )
        cells(mdp).to_csv(ctx.out / f"{mdp.name}.csv", index=False)
    plan = [
        {"env": "grid", "agent": r.agent, "beta": r.beta, "seed": r.seed, "p_rep": pp.p_rep}
        for r in runs_of(pp.agents, list(pp.betas), pp.seeds)
    ]
    for agent in pp.trap_agents:
        for p_rep in (
            [pp.p_rep, pp.trap_p_rep] if agent == "hyper" and pp.trap_p_rep != pp.p_rep else [pp.p_rep]
        ):
            plan += [
                {"env": "grid-trap", "agent": r.agent, "beta": r.beta, "seed": r.seed, "p_rep": p_rep}
                for r in runs_of([agent], list(pp.betas), pp.seeds)
            ]
    pd.DataFrame(plan).to_csv(ctx.out / "runs.csv", index=False)
    deep = [
        {"env": "grid", "agent": r.agent, "beta": r.beta, "seed": r.seed, "p_rep": pp.p_rep}
        for r in runs_of(pp.deep.agents, list(pp.deep.betas), pp.deep.seeds)
    ]
    pd.DataFrame(deep, columns=["env", "agent", "beta", "seed", "p_rep"]).to_csv(
        ctx.out / "deep_runs.csv", index=False
    )
    ctx.write_json(
        "meta.json",
        {
            "horizon": pp.horizon,
            "gamma": pp.gamma,
            "betas": list(pp.betas),
            "seeds": pp.seeds,
            "p_rep": pp.p_rep,
            "distractor_reward": pp.distractor_reward,
            "trap_reward": pp.trap_reward,
        },
    )
    ctx.log.info("%d tabular runs, %d deep runs", len(plan), len(deep))
