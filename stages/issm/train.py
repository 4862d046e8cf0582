"""Train: iSSM and SSM on every data set and seed (same data, same initialisation seed), and iSSM with the
other gamma on ``ablation_sets``; each fit is ``iters`` full-batch Adam steps of the Lightning module
(models/issm/lit.py). Fits run on ``workers`` forked processes (icml25/parallel.py); each seeds itself from
``ctx.seed_for("fit", set, seed)``, so the artifacts do not depend on the number of workers.

Writes ``models/<set>_s<seed>_<variant>.safetensors`` (weights and config), ``history.csv`` (the objective's
terms per step), ``fits.csv`` (the plan, with wall times) and ``meta.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _task(args: tuple) -> dict:
    from icml25.io import load_npz
    from models.issm.experiment import run_fit

    fit, path, iters, seed, dt, out = args
    return run_fit(fit, load_npz(path), iters, seed, dt, out)


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25 import parallel
    from models.issm.experiment import plan

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    fits = plan(
        list(meta["sets"]),
        int(meta["seeds"]),
        gamma=tp.gamma,
        shared_noise=tp.shared_noise,
        train_B=tp.train_B,
        a_init=tp.a_init,
        ablation_sets=tuple(tp.ablation_sets),
    )
    out = ctx.out / "models"
    out.mkdir()
    tasks = [
        (
            f,
            ctx.paths.prepared / f"{f.data}_s{f.seed}.npz",
            tp.iters,
            ctx.seed_for("fit", f.data, f.seed),
            meta["dt"],
            out,
        )
        for f in fits
    ]
    ctx.log.info("%d fits of %d steps on %d worker(s)", len(tasks), tp.iters, min(tp.workers, len(tasks)))
    start = time.perf_counter()
    results: list[dict | None] = [None] * len(tasks)
    for done, (i, res) in enumerate(parallel.imap(_task, tasks, tp.workers, preload=("lightning",)), 1):
        results[i] = res
        ctx.log.info(
            "[%d/%d] %s: final ELBO %.1f (%.0f s; %.0f s so far)",
            done,
            len(tasks),
            fits[i].name,
            res["history"][-1]["elbo"],
            res["seconds"],
            time.perf_counter() - start,
        )
    history = pd.concat(
        [
            pd.DataFrame(r["history"]).assign(
                name=f.name, data=f.data, seed=f.seed, variant=f.variant, step=lambda d: range(1, len(d) + 1)
            )
            for f, r in zip(fits, results, strict=True)
        ]
    )
    columns = ["name", "data", "seed", "variant", "step", "loss", "elbo", "log_px", "log_py", "log_q"]
    history[columns].to_csv(ctx.out / "history.csv", index=False)
    pd.DataFrame([{"name": f.name, **f.to_dict()} for f in fits]).to_csv(ctx.out / "fits.csv", index=False)
    ctx.write_json(
        "meta.json",
        {
            **{k: meta[k] for k in ("source", "sets", "seeds", "dt", "true_A")},
            "iters": tp.iters,
            "gamma": tp.gamma,
            "shared_noise": tp.shared_noise,
            "train_B": tp.train_B,
            "a_init": tp.a_init,
            "ablation_sets": [s for s in tp.ablation_sets if s in meta["sets"]],
            "seconds": {f.name: round(r["seconds"], 1) for f, r in zip(fits, results, strict=True)},
        },
    )
