"""Evaluate: the claims' numbers and the report's tables from train's tables (models/ucb_ogd/evaluation.py):
worst-source accuracy per seed and method, the hardest source's allocation, the regret slopes, the baselines,
the other output iterate, the batched variant and the ablation."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from icml25.tables import read_csv
    from models.ucb_ogd.evaluation import summarize, write_evaluated

    trained = ctx.paths.trained
    meta = ctx.read_json(trained / "meta.json")
    optional = {
        name: read_csv(trained / f"{name}.csv") if meta[name] else None for name in ("batched", "ablation")
    }
    result = summarize(
        read_csv(trained / "sources.csv"),
        read_csv(trained / "allocation.csv"),
        read_csv(trained / "regret.csv"),
        output=meta["output"],
        **optional,
    )
    result["summary"].update(
        {"eta": meta["eta"], "radius": meta["radius"], "grad_of_clipped": meta["grad_of_clipped"]}
    )
    write_evaluated(ctx.out, result)
    s = result["summary"]
    ctx.log.info(
        "worst-source gain %.3f, allocation %.2f, regret slope %.2f (K = %d)",
        s["worst_source_gain"],
        s["hard_source_allocation"],
        s["regret_rate"],
        s["regret_rate_K"],
    )
