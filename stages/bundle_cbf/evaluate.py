"""Evaluate: per seed, the held-out one-step error of both fits (the relative acceleration error on clean states,
or, for recorded trajectories, the weighted one-step velocity error on the held-out ones); the closed-loop
episodes of every condition (mCBF, nominal CBF, robust CBF and no filter with the weighted fit, and the mCBF
with the true model) on the seed's passage and random layouts; the alpha sweep and the ablations of our choices (report only,
seed 0); seed 0's recorded paths; the learned and true drift fields. Writes ``errors.csv``, ``episodes.csv`` (one
row per episode), ``table.csv`` (per family, condition and seed), ``sweep.csv``, ``ablation.csv``, ``paths.csv``,
``field.csv`` and
``summary.json`` (the claims' numbers, worst seed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _errors(ctx, meta, models, traj) -> list[dict]:
    import numpy as np

    from models.bundle_cbf.experiment import observed_error
    from models.bundle_cbf.node import accel_error, load_model
    from models.bundle_cbf.system import TrueModel

    rows = []
    if meta["source"] == "simulate":
        with np.load(ctx.paths.prepared / "heldout.npz") as z:
            v, u = z["v"], z["u"]
    for k in range(int(meta["seeds"])):
        for w in ("weighted", "unweighted"):
            model = load_model(models / f"{w}_s{k}.safetensors")
            if meta["source"] == "simulate":
                err, metric = (
                    accel_error(model, TrueModel(), v, u),
                    "relative acceleration error, clean states",
                )
            else:
                held = traj[(traj.seed == k) & (traj.split == "heldout")]
                err, metric = (
                    observed_error(model, held, float(meta["dt"])),
                    "weighted one-step velocity error",
                )
            rows.append({"seed": k, "weighting": w, "error": err, "metric": metric})
    return rows


def _field(models, grid: int = 15):
    import numpy as np
    import pandas as pd

    from models.bundle_cbf.node import load_model
    from models.bundle_cbf.system import TrueModel

    s = np.linspace(-1.5, 1.5, grid)
    v = np.stack(np.meshgrid(s, s), -1).reshape(-1, 2)
    out = pd.DataFrame({"vx": v[:, 0], "vy": v[:, 1]})
    for name, model in [("true", TrueModel()), *((w, load_model(models / f"{w}_s0.safetensors"))
                                                 for w in ("weighted", "unweighted"))]:  # fmt: skip
        a = model.drift(v)
        out[f"{name}_ax"], out[f"{name}_ay"] = a[:, 0], a[:, 1]
    return out


def run(ctx: StageContext) -> None:
    import time

    import numpy as np
    import pandas as pd

    from icml25.errors import UserError
    from models.bundle_cbf.experiment import CONDITIONS, claim_numbers, episode_rows, layouts_from, table
    from models.bundle_cbf.node import load_model
    from models.bundle_cbf.simulate import Episode, override, run_episodes

    ep = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    cfg = Episode(alpha=ep.alpha, steps=ep.steps, k1=ep.k1, k2=ep.k2, u_max=ep.u_max, v_max=ep.v_max,
                  sense=ep.sense, switch=ep.switch, goal_tol=ep.goal_tol)  # fmt: skip
    for spec in ep.ablations:  # a bad one fails before any episode runs
        try:
            override(cfg, spec)
        except ValueError as exc:
            raise UserError(f"papers.bundle_cbf.evaluate.ablations: {exc}") from None
    seeds = int(meta["seeds"])
    models = ctx.paths.trained / "models"
    traj = pd.read_csv(ctx.paths.prepared / "trajectories.csv")
    errors = pd.DataFrame(_errors(ctx, meta, models, traj))
    errors.to_csv(ctx.out / "errors.csv", index=False)
    for r in errors.itertuples():
        ctx.log.info("seed %d %s fit: held-out error %.4f", r.seed, r.weighting, r.error)
    lay_all = pd.read_csv(ctx.paths.prepared / "layouts.csv")
    obs_all = pd.read_csv(ctx.paths.prepared / "obstacles.csv")

    def batch(k: int, family: str):
        pick = lambda f: f[(f.seed == k) & (f.family == family)]  # noqa: E731
        return layouts_from(pick(lay_all), pick(obs_all))

    families = [f for f in ("passage", "random") if (lay_all.family == f).any()]
    start, frames = time.perf_counter(), []
    total, done = seeds * len(families) * len(CONDITIONS), 0
    for k in range(seeds):
        learned = load_model(models / f"weighted_s{k}.safetensors")
        for family in families:
            lay = batch(k, family)
            for cond in CONDITIONS:
                g = ctx.rng("noise", k, family)  # the same noise stream for every condition
                frames.append(episode_rows(lay, cond, g, learned, cfg, seed=k, family=family))
                done += 1
                f = frames[-1]
                ctx.log.info("[%d/%d] seed %d %s %s: satisfaction %.2f, success %.2f (%.0f s so far)", done, total,
                             k, family, cond, 1 - f.collided.mean(), f.success.mean(),
                             time.perf_counter() - start)  # fmt: skip
    episodes = pd.concat(frames, ignore_index=True)
    episodes.to_csv(ctx.out / "episodes.csv", index=False)
    table(episodes).to_csv(ctx.out / "table.csv", index=False)
    sweep = []
    for k in range(min(ep.sweep_seeds, seeds)):
        learned, lay = load_model(models / f"weighted_s{k}.safetensors"), batch(k, "passage")
        for alpha in ep.sweep_alphas:
            c = Episode(**{**cfg.__dict__, "alpha": alpha})
            for cond in ("mcbf", "nominal", "robust"):
                f = episode_rows(
                    lay, cond, ctx.rng("sweep", k, str(alpha)), learned, c, seed=k, family="passage"
                )
                sweep.append({"seed": k, "alpha": alpha, "condition": cond, "satisfaction": 1 - f.collided.mean(),
                              "success": f.success.mean()})  # fmt: skip
        ctx.log.info("alpha sweep, seed %d: %d alphas x 3 conditions", k, len(ep.sweep_alphas))
    pd.DataFrame(sweep, columns=["seed", "alpha", "condition", "satisfaction", "success"]).to_csv(
        ctx.out / "sweep.csv", index=False
    )
    ablation = []
    if ep.ablations and seeds:
        learned, lay = load_model(models / "weighted_s0.safetensors"), batch(0, "passage")
        base = episodes[(episodes.seed == 0) & (episodes.family == "passage")]
        for spec in ("", *ep.ablations):
            for cond in ("mcbf", "robust", "nominal"):
                if spec:  # the same layouts and noise stream as the claims' run, one setting changed
                    f = episode_rows(lay, cond, ctx.rng("noise", 0, "passage"), learned, override(cfg, spec), seed=0,
                                     family="passage")  # fmt: skip
                else:
                    f = base[base.condition == cond]
                ablation.append({"variant": spec or "as run", "condition": cond, "collided": int(f.collided.sum()),
                                 "succeeded": int(f.success.sum()), "episodes": len(f)})  # fmt: skip
            ctx.log.info("ablation %s: done", spec or "(as run)")
    pd.DataFrame(ablation, columns=["variant", "condition", "collided", "succeeded", "episodes"]).to_csv(
        ctx.out / "ablation.csv", index=False
    )
    paths = []
    if ep.record:
        lay = batch(0, "passage")
        n = min(ep.record, len(lay))
        sub = type(lay)(*(getattr(lay, f)[:n] for f in lay.__dataclass_fields__))
        learned = load_model(models / "weighted_s0.safetensors")
        for cond in ("mcbf", "nominal", "robust", "none"):
            res = run_episodes(sub, cond, ctx.rng("paths", cond), None if cond == "none" else learned, cfg,
                               record=True)  # fmt: skip
            pos = res["positions"][::5]
            for i in range(n):
                paths.append(pd.DataFrame({"condition": cond, "layout": i, "step": np.arange(len(pos)) * 5,
                                           "x": pos[:, i, 0], "y": pos[:, i, 1]}))  # fmt: skip
    (pd.concat(paths, ignore_index=True) if paths else pd.DataFrame(columns=["condition", "layout", "step", "x", "y"])
     ).to_csv(ctx.out / "paths.csv", index=False)  # fmt: skip
    _field(models).to_csv(ctx.out / "field.csv", index=False)
    for name in ("layouts.csv", "obstacles.csv"):
        ctx.carry(ctx.paths.prepared, name)
    ctx.carry(ctx.paths.trained, "fits.csv")
    ctx.carry(ctx.paths.trained, "history.csv")
    summary = claim_numbers(episodes, errors) | {
        "source": meta["source"],
        "layouts": int(meta["layouts"]),
        "alpha": ep.alpha,
        "delta_max": float(ep.alpha * np.hypot(2.0, 2.0)),
        "metric": str(errors.metric.iloc[0]),
        "steps": ep.steps,
    }
    ctx.write_json("summary.json", summary)
