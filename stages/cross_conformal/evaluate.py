"""Sets of every method for every test point (one row per replicate, test point, method and construction:
sets.csv.gz), the exactness counts (checks.json) and the summaries the report shows: coverage, its SE and the
widths by construction, method and p (summary_simulation.csv) and by model, K and method (summary_real.csv), the
variants' width reduction (shrink.csv), Vovk's set against CV+ and alpha' (summary.json)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np

    from icml25.io import load_npz
    from models.cross_conformal.data import sim_name
    from models.cross_conformal.experiment import (
        evaluate_real,
        evaluate_simulation,
        new_checks,
        write_evaluated,
    )
    from models.cross_conformal.regressor import make_estimator

    ev = ctx.params.evaluate
    a = ev.alpha
    meta = ctx.read_json(ctx.paths.trained / "meta.json")
    sim = meta["simulation"]
    n = sim["n"]
    checks = {k: new_checks() for k in ("simulation", "real")}
    records = []
    for p in sim["p_grid"]:
        d = load_npz(ctx.paths.prepared / sim_name(p))
        f = load_npz(ctx.paths.trained / "simulation" / sim_name(p))
        B = d["y"].shape[0]
        unstable = ev.unstable_p[0] <= p <= ev.unstable_p[-1]
        records += evaluate_simulation(
            d,
            f,
            n=n,
            p=p,
            K=sim["folds"],
            alpha=a,
            u=ctx.rng("u", p).random((B, sim["n_test"])),
            grid_factor=ev.unstable_grid_factor if unstable else 1.0,
            grid_points=ev.unstable_grid_points if unstable else ev.grid_points,
            full_conformal=ev.full_conformal,
            mapie_seeds=[ctx.seed_for("mapie_folds", p, b) for b in range(B)]
            if ev.mapie and p in ev.mapie_p
            else None,
            checks=checks["simulation"],
        )
        ctx.log.info("simulation p = %d evaluated", p)

    real = meta["real"]
    frame = np.loadtxt(ctx.paths.prepared / "real.csv", delimiter=",", skiprows=1, ndmin=2)
    Xall, yall = frame[:, :-1], frame[:, -1]
    s = load_npz(ctx.paths.prepared / "real_splits.npz")
    for name in meta["models"]:
        for K in real["folds"]:
            splits = range(real["splits"])
            mapie = None
            if ev.mapie:  # MAPIE's CV+ with the split's own estimator (train's stream) and its own KFold seed
                opts = {"lasso_alpha": meta["lasso_alpha"], "trees": meta["rf_trees"]}
                mapie = [
                    (
                        make_estimator(name, seed=ctx.seed_for("estimator", b), **opts),
                        ctx.seed_for("mapie_folds", K, b),
                    )
                    for b in splits
                ]
            records += evaluate_real(
                Xall,
                yall,
                s,
                load_npz(ctx.paths.trained / "real" / f"{name}_K{K}.npz"),
                data=real["name"],
                model=name,
                K=K,
                alpha=a,
                u=[ctx.rng("u_real", K, b).random(len(s["test"][b])) for b in splits],
                mapie=mapie,
                checks=checks["real"],
            )
            ctx.log.info("real data %s, K = %d evaluated", name, K)
    write_evaluated(ctx.out, records, checks, alpha=a, sets=ev.sets, n=n, K=sim["folds"])
    ctx.log.info(
        "nesting violations %s, identity mismatches %s",
        checks["simulation"]["nesting"] + checks["real"]["nesting"],
        checks["simulation"]["identity"] + checks["real"]["identity"],
    )
