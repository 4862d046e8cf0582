"""Prepare: the sources of every seed and the planted problems.

``source: digits``: the five label-shifted digits sources of models/ucb_ogd/sources.py, split 70 / 30 per seed
(``pools_s<seed>.npz``: per source the clean train pool, the noisy test pool, their labels); ``source: csv``: one
CSV per source in ``data/ucb_ogd/input/<csv_folder>/`` (the paper's intersection data are not public). Both
write ``sources.csv`` (seed, source, name, classes, noise, pool sizes) and ``planted.csv`` (the planted
problems' means, K in ``regret_sources``) with ``meta.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.errors import UserError
    from models.ucb_ogd.planted import planted
    from models.ucb_ogd.pools import save_pools
    from models.ucb_ogd.sources import csv_pools, digits_pools

    pp = ctx.params.prepare
    rows, n_classes = [], 0
    for seed in range(pp.seeds):
        rng = ctx.rng("pools", seed)
        if pp.source == "digits":
            pools = digits_pools(rng)
        else:
            try:
                pools = csv_pools(ctx.input_path("csv_folder", pp.csv_folder), rng, label=pp.label)
            except ValueError as exc:
                raise UserError(f"papers.ucb_ogd.prepare.csv_folder: {exc}") from None
        save_pools(ctx.out / f"pools_s{seed}.npz", pools)
        n_classes = pools.n_classes
        rows += [{"seed": seed, **r} for r in pools.summary()]
        sizes = "/".join(str(len(y)) for y in pools.train_y)
        ctx.log.info("seed %d/%d: %d sources, %s train rows", seed + 1, pp.seeds, pools.n_sources, sizes)
    pd.DataFrame(rows).to_csv(ctx.out / "sources.csv", index=False)
    problems = []
    for K in pp.regret_sources:
        problem = planted(K)
        problems += [
            {"K": K, "source": k, "mu_x": float(m[0]), "mu_y": float(m[1])}
            for k, m in enumerate(problem.means)
        ]
    pd.DataFrame(problems).to_csv(ctx.out / "planted.csv", index=False)
    ctx.write_json(
        "meta.json",
        {
            "source": pp.source,
            "seeds": pp.seeds,
            "sources": max(r["source"] for r in rows) + 1,
            "classes": n_classes,
            "regret_sources": list(pp.regret_sources),
        },
    )
