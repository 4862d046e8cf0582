"""The out-of-fold models of every replicate / split: the cross-conformal scores (fold residuals, fold
predictions at the test points), the split-conformal half fits, and (simulation) the n leave-one-out min-norm
OLS fits of jackknife+ (models/cross_conformal/experiment.py: train_simulation, train_real)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np

    from icml25.io import load_npz
    from models.cross_conformal.data import sim_name
    from models.cross_conformal.experiment import train_real, train_simulation
    from models.cross_conformal.regressor import make_estimator

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    n = meta["simulation"]["n"]
    (ctx.out / "simulation").mkdir()
    for p in meta["simulation"]["p_grid"]:
        d = load_npz(ctx.paths.prepared / sim_name(p))
        np.savez(ctx.out / "simulation" / sim_name(p), **train_simulation(d, n, tp.jackknife))
        ctx.log.info("simulation p = %d: %d replicates fitted", p, d["y"].shape[0])

    real = meta["real"]
    frame = np.loadtxt(ctx.paths.prepared / "real.csv", delimiter=",", skiprows=1, ndmin=2)
    Xall, yall = frame[:, :-1], frame[:, -1]
    s = load_npz(ctx.paths.prepared / "real_splits.npz")
    (ctx.out / "real").mkdir()
    for name in tp.real_models:
        for K in real["folds"]:
            estimators = [
                make_estimator(
                    name, seed=ctx.seed_for("estimator", b), lasso_alpha=tp.lasso_alpha, trees=tp.rf_trees
                )
                for b in range(real["splits"])
            ]
            np.savez(ctx.out / "real" / f"{name}_K{K}.npz", **train_real(Xall, yall, s, K, estimators))
            ctx.log.info("real data: %s, K = %d, %d splits fitted", name, K, real["splits"])
    ctx.carry_meta(
        ctx.paths.prepared, models=list(tp.real_models), lasso_alpha=tp.lasso_alpha, rf_trees=tp.rf_trees
    )
