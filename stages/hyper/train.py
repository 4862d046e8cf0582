"""Train: every run of runs.csv, one batch of arrays per (environment, p_rep) (models/hyper/agents.py), each run
drawing from its own generator under the master seed ``ctx.seed_for("sweep")``; greedy evaluations every
``every`` episodes. Writes ``history.csv`` (env, p_rep, episode, agent, beta, seed, success, return). The deep variant's runs
(``deep_runs.csv``; models/hyper/deep.py) train in one Lightning module, greedy evaluations every ``deep.every``
environment steps: ``deep.csv`` (env, p_rep, step, agent, beta, seed, success, return; no rows when there are no
deep runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _progress(ctx: StageContext, env: str, n: int, start: float, unit: str = "episode"):
    import time

    def report(ep: int, total: int) -> None:
        took = time.perf_counter() - start
        ctx.log.info("%s: %d runs, %s %d of %d (%.0f s)", env, n, unit, ep, total, took)

    return report


def _train(ctx: StageContext, meta: dict, plan: str, out: str, clock: str, fit) -> None:
    """Every (environment, p_rep) group of the run list ``plan``: the grid read back from its validated table,
    ``fit(mdp, runs, p_rep, progress)``'s evaluation rows, all of them written to ``out`` (no rows: a header)."""
    import time

    import pandas as pd

    from icml25.tables import read_csv
    from models.hyper.agents import Run
    from models.hyper.mdp import from_cells

    cols = ["env", "p_rep", clock, "agent", "beta", "seed", "success", "return"]
    frames = []
    for (env, p_rep), g in read_csv(ctx.paths.prepared / plan).groupby(["env", "p_rep"], sort=True):
        mdp = from_cells(read_csv(ctx.paths.prepared / f"{env}.csv"), meta["horizon"], meta["gamma"])
        runs = [Run(r.agent, float(r.beta), int(r.seed)) for r in g.itertuples()]
        label = env if clock == "episode" else f"{env} (deep)"
        progress = _progress(ctx, label, len(runs), time.perf_counter(), clock)
        rows = fit(mdp, runs, float(p_rep), progress)
        frames.append(pd.DataFrame(rows).assign(env=env, p_rep=float(p_rep)))
    table = pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
    table.to_csv(ctx.out / out, index=False)


def run(ctx: StageContext) -> None:
    import dataclasses

    from models.hyper.agents import sweep

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")

    def tabular(mdp, runs, p_rep, progress):
        return sweep(
            mdp,
            runs,
            tp.episodes,
            p=tp.p,
            p_rep=p_rep,
            alpha=tp.alpha,
            epsilon=tp.epsilon,
            every=tp.every,
            master=ctx.seed_for("sweep"),
            progress=progress,
        )

    def deep(mdp, runs, p_rep, progress):
        from models.hyper.deep import (
            DeepConfig,
            deep_sweep,
        )  # Lightning: imported only when there are deep runs

        cfg = DeepConfig(**dataclasses.asdict(tp.deep), epsilon=tp.epsilon, p=tp.p, p_rep=p_rep)
        return deep_sweep(mdp, runs, cfg, master=ctx.seed_for("deep"), progress=progress)

    _train(ctx, meta, "runs.csv", "history.csv", "episode", tabular)
    _train(ctx, meta, "deep_runs.csv", "deep.csv", "step", deep)
