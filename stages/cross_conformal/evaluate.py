"""Sets of every method for every test point (one row per replicate, test point, method and construction:
sets.csv.gz), the exactness counts (checks.json) and the summaries the report shows: coverage, its SE and the
widths by construction, method and p (summary_simulation.csv) and by model, K and method (summary_real.csv), the
variants' width reduction (shrink.csv), Vovk's set against CV+ and alpha' (summary.json).

The replicates / splits are independent: chunks of :data:`SIM_CHUNK` replicates of one p, and of
:data:`REAL_CHUNK` splits of one (model, K), run on ``workers`` forked processes (icml25/parallel.py), one BLAS
thread each. Every random input (the U's, MAPIE's KFold seeds and the splits' estimator seeds) is drawn here from
its own stream and passed in the task, which loads its own slice of the prepared and trained files; the parent
puts the records and the exactness counts back in the serial order, so the files do not depend on the number of
workers or the order in which tasks finish (tested)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from icml25.stage import StageContext

#: Replicates of one simulation p per task, and splits of one (real model, K) per task.
SIM_CHUNK = 25
REAL_CHUNK = 5


def _from(records: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    """The records of a chunk that starts at replicate / split ``start`` (counted from 0 inside the chunk)."""
    for r in records:
        r["rep"] += start
    return records


def evaluate_sim_chunk(
    prepared: Path, trained: Path, start: int, stop: int, u: Any, mapie_seeds: list[int] | None, opts: dict
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The records and exactness counts of replicates [start, stop) of one p (``opts``: evaluate_simulation's
    keywords but u, mapie_seeds and checks)."""
    from threadpoolctl import threadpool_limits

    from icml25.io import load_npz
    from models.cross_conformal.experiment import evaluate_simulation, new_checks

    with threadpool_limits(1):
        d = load_npz(prepared)
        d = {k: d[k][start:stop] for k in ("X", "y")}
        f = {k: v[start:stop] for k, v in load_npz(trained).items()}
        checks = new_checks()
        recs = evaluate_simulation(d, f, u=u, mapie_seeds=mapie_seeds, checks=checks, **opts)
        return _from(recs, start), checks


def evaluate_real_chunk(
    prepared: Path,
    trained: Path,
    start: int,
    stop: int,
    u: list,
    mapie: list[tuple[int, int]] | None,
    estimator: dict,
    opts: dict,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The records and exactness counts of splits [start, stop) of one (model, K); ``mapie``: per split, the
    estimator's seed and MAPIE's KFold seed, the estimator made by make_estimator(**``estimator``)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    from icml25.io import load_npz
    from models.cross_conformal.experiment import evaluate_real, new_checks
    from models.cross_conformal.regressor import make_estimator

    with threadpool_limits(1):
        frame = np.loadtxt(prepared / "real.csv", delimiter=",", skiprows=1, ndmin=2)
        s = {k: v[start:stop] for k, v in load_npz(prepared / "real_splits.npz").items()}
        f = {k: v[start:stop] for k, v in load_npz(trained).items()}
        peers = None if mapie is None else [(make_estimator(seed=e, **estimator), k) for e, k in mapie]
        checks = new_checks()
        recs = evaluate_real(frame[:, :-1], frame[:, -1], s, f, u=u, mapie=peers, checks=checks, **opts)
        return _from(recs, start), checks


def _task(args: tuple) -> tuple[list[dict[str, Any]], dict[str, int]]:
    kind, *rest = args
    return evaluate_sim_chunk(*rest) if kind == "simulation" else evaluate_real_chunk(*rest)


def run(ctx: StageContext) -> None:

    from models.cross_conformal.data import sim_name
    from models.cross_conformal.experiment import chunks, new_checks, write_evaluated

    ev = ctx.params.evaluate
    a = ev.alpha
    meta = ctx.read_json(ctx.paths.trained / "meta.json")
    sim, real = meta["simulation"], meta["real"]
    n, B = sim["n"], sim["replications"]
    # (data set, a label for the log, its tasks in the serial order)
    groups: list[tuple[str, str, list[tuple]]] = []
    for p in sim["p_grid"]:
        u = ctx.rng("u", p).random((B, sim["n_test"]))
        unstable = ev.unstable_p[0] <= p <= ev.unstable_p[-1]
        opts = {
            "n": n,
            "p": p,
            "K": sim["folds"],
            "alpha": a,
            "grid_factor": ev.unstable_grid_factor if unstable else 1.0,
            "grid_points": ev.unstable_grid_points if unstable else ev.grid_points,
            "full_conformal": ev.full_conformal,
        }
        mapie = ev.mapie and p in ev.mapie_p
        tasks = [
            (
                "simulation",
                ctx.paths.prepared / sim_name(p),
                ctx.paths.trained / "simulation" / sim_name(p),
                lo,
                hi,
                u[lo:hi],
                [ctx.seed_for("mapie_folds", p, b) for b in range(lo, hi)] if mapie else None,
                opts,
            )
            for lo, hi in chunks(B, SIM_CHUNK)
        ]
        groups.append(("simulation", f"simulation p = {p}", tasks))

    splits = real["splits"]
    test = real["n_test"]
    for name in meta["models"]:
        for K in real["folds"]:
            opts = {"data": real["name"], "model": name, "K": K, "alpha": a}
            estimator = {"name": name, "lasso_alpha": meta["lasso_alpha"], "trees": meta["rf_trees"]}
            tasks = [
                (
                    "real",
                    ctx.paths.prepared,
                    ctx.paths.trained / "real" / f"{name}_K{K}.npz",
                    lo,
                    hi,
                    [ctx.rng("u_real", K, b).random(test) for b in range(lo, hi)],
                    # MAPIE's CV+ with the split's own estimator (train's stream) and its own KFold seed
                    [(ctx.seed_for("estimator", b), ctx.seed_for("mapie_folds", K, b)) for b in range(lo, hi)]
                    if ev.mapie
                    else None,
                    estimator,
                    opts,
                )
                for lo, hi in chunks(splits, REAL_CHUNK)
            ]
            groups.append(("real", f"real data {name}, K = {K}", tasks))

    from icml25 import parallel

    preload = (
        "mapie.regression",
        "sklearn.ensemble",
        "sklearn.linear_model",
        "models.cross_conformal.experiment",
    )
    results = parallel.run_groups(
        _task, [(label, ts) for _, label, ts in groups], ev.workers, ctx.log, "evaluated", preload
    )

    checks = {k: new_checks() for k in ("simulation", "real")}
    records: list[dict[str, Any]] = []
    for (kind, _, _), parts in zip(groups, results, strict=True):  # the serial order
        for recs, counts in parts:
            records += recs
            for k, v in counts.items():
                checks[kind][k] += v
    write_evaluated(ctx.out, records, checks, alpha=a, sets=ev.sets, n=n, K=sim["folds"])
    ctx.log.info(
        "nesting violations %s, identity mismatches %s",
        checks["simulation"]["nesting"] + checks["real"]["nesting"],
        checks["simulation"]["identity"] + checks["real"]["identity"],
    )
