"""Train: every method (``methods``: TMvML with the LTR and with the TNN, per-view ridge, concatenated ridge, the
label-frequency ranker) on every fold of the real set and every synthetic draw, lambda by inner cross-validation
on the training rows (models/tmvml/experiment.py: run_task), on ``workers`` forked processes (each task seeds its
inner folds from ``ctx.seed_for``). There is no network to train, so no Lightning: the ADMM is closed-form steps.
Writes ``scores.npz`` (the test scores per dataset, split and method), ``models/<dataset>_<split>_<method>.npz``
(the classifier tensor W, d x q x V, of the tensor methods), ``fits.csv`` (lambda, the inner CV's APs, the most
ADMM iterations of any fit, seconds) and ``meta.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _task(args: tuple) -> dict:
    import numpy as np

    from models.tmvml.experiment import load_split, run_task

    prepared, dataset, split, views, method, cfg, seed = args
    xtr, ytr, xte, _ = load_split(prepared, dataset, split, views)
    return run_task(method, xtr, ytr, xte, cfg, np.random.default_rng(seed))


def run(ctx: StageContext) -> None:
    import json
    import time

    import numpy as np
    import pandas as pd

    from icml25 import parallel
    from models.tmvml.experiment import METHODS, Config

    tp = ctx.params.train
    unknown = [m for m in tp.methods if m not in METHODS]
    if unknown:
        from icml25.errors import UserError

        raise UserError(
            f"papers.tmvml.train.methods: {', '.join(unknown)} unknown; choose from {', '.join(METHODS)}"
        )
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    cfg = Config(lam_grid=tuple(tp.lam_grid), ridge_grid=tuple(tp.ridge_grid), inner_folds=tp.inner_folds,
                 delta=tp.delta, rho=tp.rho, mu=tp.mu, max_iter=tp.max_iter, tol=tp.tol, common_dim=tp.common_dim,
                 bias=tp.bias, scale=tp.scale, prox=tp.prox)  # fmt: skip
    folds = int(meta["folds"]) if tp.real_splits == 0 else min(tp.real_splits, int(meta["folds"]))
    plan = [("real", k, len(meta["views"])) for k in range(folds)]
    for key in meta["synthetic"]:  # spec_s0_n150 -> dataset spec_n150, split 0
        variant, seed, n = key.split("_")
        plan.append((f"{variant}_{n}", int(seed[1:]), int(meta["synthetic_views"])))
    tasks = [
        (ctx.paths.prepared, d, k, v, m, cfg, ctx.seed_for("inner", d, k, m))
        for d, k, v in plan
        for m in tp.methods
    ]
    ctx.log.info("%d fits (%d data splits x %d methods, lambda by %d-fold inner CV) on %d worker(s)", len(tasks),
                 len(plan), len(tp.methods), tp.inner_folds, min(tp.workers, len(tasks)))  # fmt: skip
    out = ctx.out / "models"
    out.mkdir()
    scores, rows, start = {}, [], time.perf_counter()
    for done, (i, res) in enumerate(parallel.imap(_task, tasks, tp.workers), 1):
        _, d, k, _, m, _, _ = tasks[i]
        scores[f"{d}_{k}_{m}"] = res["scores"]
        if res["w"] is not None:
            np.savez(out / f"{d}_{k}_{m}.npz", w=res["w"])
        rows.append({"dataset": d, "split": k, "method": m, "lam": res["lam"], "iterations": res["iterations"],
                     "final_iterations": res["final_iterations"], "fits": res["fits"], "seconds": res["seconds"],
                     "inner_ap": json.dumps({str(a): round(b, 6) for a, b in res["inner"].items()})})  # fmt: skip
        if done % max(1, len(tasks) // 10) == 0 or done == len(tasks):
            ctx.log.info("[%d/%d] %s split %d %s: lambda %g, %d ADMM iterations at most (%.0f s so far)", done,
                         len(tasks), d, k, m, res["lam"], res["iterations"], time.perf_counter() - start)  # fmt: skip
    np.savez(ctx.out / "scores.npz", **scores)
    pd.DataFrame(rows).sort_values(["dataset", "split", "method"]).to_csv(ctx.out / "fits.csv", index=False)
    ctx.write_json("meta.json", {"methods": list(tp.methods), "splits": [[d, k] for d, k, _ in plan],
                                 "config": cfg.__dict__})  # fmt: skip
