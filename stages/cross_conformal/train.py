"""The out-of-fold models of every replicate / split: the cross-conformal scores (fold residuals, fold
predictions at the test points), the split-conformal half fits, and (simulation) the n leave-one-out min-norm
OLS fits of jackknife+ (models/cross_conformal/experiment.py: train_simulation, train_real).

The fits are independent: chunks of :data:`SIM_CHUNK` replicates of one p, and of :data:`REAL_CHUNK` splits of
one (model, K), run on ``workers`` forked processes (icml25/parallel.py). A task loads its own slice of the
prepared files; split b's estimator is seeded by ``ctx.seed_for("estimator", b)`` (computed here, passed in the
task), and the min-norm OLS fits draw nothing, so the artifacts do not depend on the number of workers, the
chunking or the order in which tasks finish (tested). Each task runs on one BLAS thread: these are many small
products and decompositions, and a second OpenBLAS thread on a busy 2-core machine only spins against the first
(measured: 10-100x slower per replicate, p >= 60); the results then also do not depend on the machine's core
count. The parent stacks the chunks and writes every file in a fixed order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from icml25.stage import StageContext

#: Replicates of one simulation p per task, and splits of one (real model, K) per task.
SIM_CHUNK = 50
REAL_CHUNK = 5


def fit_simulation(path: Path, n: int, jackknife: bool, start: int, stop: int) -> dict[str, Any]:
    """The fits of replicates [start, stop) of the prepared simulation file ``path``."""
    from threadpoolctl import threadpool_limits

    from icml25.io import load_npz
    from models.cross_conformal.experiment import train_simulation

    with threadpool_limits(1):
        d = load_npz(path)
        part = {k: d[k][start:stop] for k in ("X", "y", "folds", "split")}
        return train_simulation(part, n, jackknife)


def fit_real(
    prepared: Path, name: str, K: int, start: int, stop: int, seeds: list[int], lasso_alpha: float, trees: int
) -> dict[str, Any]:
    """The fits of splits [start, stop) of the real table with model ``name`` and K folds, split b's estimator
    seeded by ``seeds[b - start]``."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from icml25.io import load_npz
    from models.cross_conformal.experiment import train_real
    from models.cross_conformal.regressor import make_estimator

    with threadpool_limits(1):
        frame = np.loadtxt(prepared / "real.csv", delimiter=",", skiprows=1, ndmin=2)
        s = {k: v[start:stop] for k, v in load_npz(prepared / "real_splits.npz").items()}
        estimators = [make_estimator(name, seed=seed, lasso_alpha=lasso_alpha, trees=trees) for seed in seeds]
        return train_real(frame[:, :-1], frame[:, -1], s, K, estimators)


def _task(args: tuple) -> dict[str, Any]:
    kind, *rest = args
    return fit_simulation(*rest) if kind == "simulation" else fit_real(*rest)


def run(ctx: StageContext) -> None:
    import numpy as np

    from models.cross_conformal.data import sim_name
    from models.cross_conformal.experiment import chunks

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    sim, real = meta["simulation"], meta["real"]
    B, splits = sim["replications"], real["splits"]
    # (output file, a label for the log, the tasks whose results it stacks, in order)
    groups: list[tuple[str, str, list[tuple]]] = []
    for p in sim["p_grid"]:
        path = ctx.paths.prepared / sim_name(p)
        tasks = [("simulation", path, sim["n"], tp.jackknife, lo, hi) for lo, hi in chunks(B, SIM_CHUNK)]
        groups.append((f"simulation/{sim_name(p)}", f"simulation p = {p}: {B} replicates", tasks))
    for name in tp.real_models:
        for K in real["folds"]:
            tasks = [
                (
                    "real",
                    ctx.paths.prepared,
                    name,
                    K,
                    lo,
                    hi,
                    [ctx.seed_for("estimator", b) for b in range(lo, hi)],
                    tp.lasso_alpha,
                    tp.rf_trees,
                )
                for lo, hi in chunks(splits, REAL_CHUNK)
            ]
            groups.append((f"real/{name}_K{K}.npz", f"real data: {name}, K = {K}, {splits} splits", tasks))
    from icml25 import parallel

    preload = ("sklearn.ensemble", "sklearn.linear_model", "models.cross_conformal.experiment")
    results = parallel.run_groups(
        _task, [(label, ts) for _, label, ts in groups], tp.workers, ctx.log, "fitted", preload
    )
    (ctx.out / "simulation").mkdir()
    (ctx.out / "real").mkdir()
    for (rel, _, _), parts in zip(groups, results, strict=True):  # the parent writes every file, in order
        np.savez(ctx.out / rel, **{k: np.concatenate([r[k] for r in parts]) for k in parts[0]})
    ctx.carry_meta(
        ctx.paths.prepared, models=list(tp.real_models), lasso_alpha=tp.lasso_alpha, rf_trees=tp.rf_trees
    )
