"""Train: every method on the same sample streams of each seed (digits or CSV sources), the planted regret runs
(separate runs for every T), the batched Lightning variant (report only) and the gradient-rule ablation.

Writes ``sources.csv`` (seed, method, output, source: test accuracy and loss, labels), ``allocation.csv`` (the
share n_k(t) / t at checkpoints), ``regret.csv`` (planted: R_T per K, T, method and seed), ``batched.csv``,
``ablation.csv`` and ``meta.json`` (the output the claims use, the step sizes, wall times)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25.tables import read_csv
    from models.ucb_ogd.experiment import digits_seed, regret_seed
    from models.ucb_ogd.planted import Planted
    from models.ucb_ogd.pools import load_pools

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    seeds = int(meta["seeds"])
    sources, allocation, ablation, batched, regret = [], [], [], [], []
    start, eta = time.perf_counter(), None
    for seed in range(seeds):
        pools = load_pools(ctx.paths.prepared / f"pools_s{seed}.npz")
        res = digits_seed(
            pools,
            tp.horizon,
            ctx.rng("streams", seed),
            methods=tp.methods,
            radius=tp.radius,
            grad_of_clipped=tp.grad_of_clipped,
            val_size=tp.val_size,
            checkpoints=tp.checkpoints,
        )
        eta = res["eta"]
        sources.append(res["sources"].assign(seed=seed))
        allocation.append(res["allocation"].assign(seed=seed))
        if tp.ablation:  # the other gradient rule, same streams (the same rng stream)
            other = digits_seed(
                pools,
                tp.horizon,
                ctx.rng("streams", seed),
                methods=("ucb_ogd", "uniform"),
                radius=tp.radius,
                grad_of_clipped=not tp.grad_of_clipped,
                val_size=tp.val_size,
                checkpoints=tp.checkpoints,
            )
            ablation.append(other["sources"].assign(seed=seed))
        if seed < tp.batched_seeds:
            from models.ucb_ogd.lit import batched_seed

            b = batched_seed(
                pools,
                tp.batched_rounds,
                ctx.rng("batched", seed),
                ctx.seed_for("batched", seed),
                batch=tp.batched_batch,
                steps=tp.batched_steps,
                radius=tp.radius,
            )
            batched.append(b["sources"].assign(seed=seed))
        acc = res["sources"].query("output == @tp.output").groupby("method").accuracy.min()
        ctx.log.info(
            "digits seed %d/%d: worst-source accuracy %s (%.0f s so far)",
            seed + 1,
            seeds,
            ", ".join(f"{m} {a:.3f}" for m, a in acc.items()),
            time.perf_counter() - start,
        )
    planted = read_csv(ctx.paths.prepared / "planted.csv")
    for K, g in planted.groupby("K", sort=True):
        problem = Planted(g.sort_values("source")[["mu_x", "mu_y"]].to_numpy(float))
        for seed in range(seeds):
            frame = regret_seed(
                int(K),
                tp.regret_horizons,
                ctx.rng("planted", int(K), seed),
                methods=tp.regret_methods,
                grad_of_clipped=tp.grad_of_clipped,
                problem=problem,
            )
            regret.append(frame.assign(seed=seed))
        ctx.log.info(
            "planted K = %d: %d seeds x %d horizons (%.0f s so far)",
            K,
            seeds,
            len(tp.regret_horizons),
            time.perf_counter() - start,
        )
    pd.concat(sources).to_csv(ctx.out / "sources.csv", index=False)
    pd.concat(allocation).to_csv(ctx.out / "allocation.csv", index=False)
    pd.concat(regret).drop(columns=["seconds"]).to_csv(ctx.out / "regret.csv", index=False)
    if ablation:
        pd.concat(ablation).to_csv(ctx.out / "ablation.csv", index=False)
    if batched:
        pd.concat(batched).to_csv(ctx.out / "batched.csv", index=False)
    ctx.write_json(
        "meta.json",
        {
            "output": tp.output,
            "grad_of_clipped": tp.grad_of_clipped,
            "horizon": tp.horizon,
            "eta": float(eta) if eta is not None else None,
            "radius": tp.radius,
            "ablation": bool(ablation),
            "batched": bool(batched),
        },
    )
