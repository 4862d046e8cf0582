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


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25.tables import read_csv
    from models.hyper.agents import Run, sweep
    from models.hyper.mdp import from_cells

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    plan = read_csv(ctx.paths.prepared / "runs.csv")
    frames = []
    for (env, p_rep), g in plan.groupby(["env", "p_rep"], sort=True):
        mdp = from_cells(read_csv(ctx.paths.prepared / f"{env}.csv"), meta["horizon"], meta["gamma"])
        runs = [Run(r.agent, float(r.beta), int(r.seed)) for r in g.itertuples()]
        progress = _progress(ctx, env, len(runs), time.perf_counter())
        rows = sweep(
            mdp,
            runs,
            tp.episodes,
            p=tp.p,
            p_rep=float(p_rep),
            alpha=tp.alpha,
            epsilon=tp.epsilon,
            every=tp.every,
            master=ctx.seed_for("sweep"),
            progress=progress,
        )
        frames.append(pd.DataFrame(rows).assign(env=env, p_rep=float(p_rep)))
    history = pd.concat(frames, ignore_index=True)
    cols = ["env", "p_rep", "episode", "agent", "beta", "seed", "success", "return"]
    history[cols].to_csv(ctx.out / "history.csv", index=False)
    _deep(ctx, meta)


def _deep(ctx: StageContext, meta: dict) -> None:
    import time

    import pandas as pd

    from icml25.tables import read_csv
    from models.hyper.agents import Run
    from models.hyper.mdp import from_cells

    cols = ["env", "p_rep", "step", "agent", "beta", "seed", "success", "return"]
    plan = read_csv(ctx.paths.prepared / "deep_runs.csv")
    frames = []
    for (env, p_rep), g in plan.groupby(["env", "p_rep"], sort=True):
        from models.hyper.deep import DeepConfig, deep_sweep

        tp, dp = ctx.params.train, ctx.params.train.deep
        cfg = DeepConfig(
            steps=dp.steps,
            every=dp.every,
            hidden=dp.hidden,
            rnd_dim=dp.rnd_dim,
            batch=dp.batch,
            lr=dp.lr,
            target_every=dp.target_every,
            warmup=dp.warmup,
            epsilon=tp.epsilon,
            p=tp.p,
            p_rep=float(p_rep),
            obs=dp.obs,
        )
        mdp = from_cells(read_csv(ctx.paths.prepared / f"{env}.csv"), meta["horizon"], meta["gamma"])
        runs = [Run(r.agent, float(r.beta), int(r.seed)) for r in g.itertuples()]
        progress = _progress(ctx, f"{env} (deep)", len(runs), time.perf_counter(), "step")
        rows = deep_sweep(mdp, runs, cfg, master=ctx.seed_for("deep"), progress=progress)
        frames.append(pd.DataFrame(rows).assign(env=env, p_rep=float(p_rep)))
    deep = pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
    deep.to_csv(ctx.out / "deep.csv", index=False)
