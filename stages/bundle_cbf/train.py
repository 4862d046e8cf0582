"""Train: per seed, the control-affine Neural ODE fitted twice to the seed's training trajectories by RK4 rollout
windows (models/bundle_cbf/node.py): with the Sigma^-1-weighted loss (the paper's) and unweighted, from the same
initial weights, through Lightning, on ``workers`` forked processes (each task seeds itself from
``ctx.seed_for``). Writes ``models/{weighted,unweighted}_s<seed>.safetensors``, ``history.csv`` (loss per step),
``fits.csv`` (seconds, final loss and the learned gain b_theta per fit) and ``meta.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

WEIGHTINGS = ("weighted", "unweighted")


def _fit(args: tuple) -> dict:
    import time

    import pandas as pd

    from models.bundle_cbf.node import fit_dynamics, save_model

    path, k, weighting, tp, dt, seed, out = args
    start = time.perf_counter()
    traj = pd.read_csv(path)
    traj = traj[(traj.seed == k) & (traj.split == "train")]
    fitted = fit_dynamics(traj, "sigma", weighting == "weighted", dt=dt, horizon=tp.horizon, steps=tp.steps,
                          lr=tp.lr, batch=tp.batch, hidden=tp.hidden, seed=seed)  # fmt: skip
    save_model(out / f"{weighting}_s{k}.safetensors", fitted, seed=k)
    return {
        "history": fitted.history,
        "seconds": time.perf_counter() - start,
        "gain": fitted.gain([[0, 0]])[0],
    }


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25 import parallel

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    out = ctx.out / "models"
    out.mkdir()
    plan = [(k, w) for k in range(int(meta["seeds"])) for w in WEIGHTINGS]
    # the same initial weights for both fits of a seed: only the loss's weighting differs
    tasks = [(ctx.paths.prepared / "trajectories.csv", k, w, tp, float(meta["dt"]), ctx.seed_for("fit", k), out)
             for k, w in plan]  # fmt: skip
    ctx.log.info("%d Neural ODE fits (%d steps each) on %d worker(s)", len(tasks), tp.steps,
                 min(tp.workers, len(tasks)))  # fmt: skip
    start = time.perf_counter()
    histories, fits = [], []
    for done, (i, res) in enumerate(parallel.imap(_fit, tasks, tp.workers, preload=("lightning",)), 1):
        k, w = plan[i]
        h = res["history"]
        histories.append(pd.DataFrame({"seed": k, "weighting": w, "step": range(len(h)), "loss": h}))
        fits.append({"seed": k, "weighting": w, "seconds": res["seconds"], "final_loss": h[-1],
                     "gain_x": float(res["gain"][0]), "gain_y": float(res["gain"][1])})  # fmt: skip
        ctx.log.info("[%d/%d] seed %d %s: loss %.4g, gain (%.3f, %.3f) (%.1f s; %.0f s so far)", done, len(tasks),
                     k, w, h[-1], *res["gain"], res["seconds"], time.perf_counter() - start)  # fmt: skip
    pd.concat(histories, ignore_index=True).to_csv(ctx.out / "history.csv", index=False)
    pd.DataFrame(fits).sort_values(["seed", "weighting"]).to_csv(ctx.out / "fits.csv", index=False)
    ctx.write_json("meta.json", {"seeds": int(meta["seeds"]), "weightings": list(WEIGHTINGS),
                                 "config": {k: getattr(tp, k) for k in ("horizon", "steps", "lr", "batch",
                                                                        "hidden")}})  # fmt: skip
