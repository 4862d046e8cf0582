"""Evaluate: ``runs.csv`` (per system, seed, rate, images: TTFT mean and P90, TPOT, attainment, E2E latency,
throughput), ``curves.csv`` (attainment against rate, mean over seeds), ``goodput.csv``, ``allocator.csv``
(goodput of every (E, P, D), best first), ``capacities.csv`` and ``summary.json`` (the claims' numbers and
the sanity violations by kind; models/epd_serving/evaluation.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.tables import read_csv
    from models.epd_serving.cost import CostModel
    from models.epd_serving.evaluation import allocator_table, capacities, summarize

    trained = ctx.paths.trained
    meta = ctx.read_json(trained / "meta.json")
    costs = ctx.read_json(trained / "costs.json")
    res = summarize(
        read_csv(trained / "requests.csv"),
        read_csv(trained / "memory.csv"),
        meta["ttft_slo"],
        meta["tpot_slo"],
    )
    res["runs"].to_csv(ctx.out / "runs.csv", index=False)
    res["curves"].to_csv(ctx.out / "curves.csv", index=False)
    res["goodput"].to_csv(ctx.out / "goodput.csv", index=False)
    alloc = read_csv(trained / "allocator.csv")
    if len(alloc):
        allocator_table(alloc).to_csv(ctx.out / "allocator.csv", index=False)
    else:
        pd.DataFrame(columns=["images", "E", "P", "D", "goodput", "how"]).to_csv(
            ctx.out / "allocator.csv", index=False
        )
    pd.DataFrame(capacities(CostModel(**costs))).to_csv(ctx.out / "capacities.csv", index=False)
    switching = read_csv(trained / "switching.csv")
    if len(switching):
        mean = switching.groupby(["mode", "phase", "images"], sort=True).agg(
            attainment=("attainment", "mean"), ttft_mean=("ttft_mean", "mean"), switches=("switches", "mean")
        )
        mean.reset_index().to_csv(ctx.out / "switching.csv", index=False)
    else:
        pd.DataFrame(columns=["mode", "phase", "images", "attainment", "ttft_mean", "switches"]).to_csv(
            ctx.out / "switching.csv", index=False
        )
    ctx.carry(trained, "roles.csv")
    s = res["summary"]
    ctx.write_json("summary.json", {**s, "meta": meta, "costs": costs})
    ctx.log.info(
        "TTFT ratio %.3f, attainment gain %.3f, encoder memory %.3f, sanity violations %d",
        s["ttft_ratio"],
        s["attainment_gain"],
        s["encoder_memory"],
        s["sanity"],
    )
