"""Fronts (all trees, the Karva space, the BFGS protocol) in the published columns, gplearn's population against
the front, the optimiser comparison, the search-space counts, and summary.json: every number the report's claims
and tables need (models/sr_pareto/evaluation.summarize)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_frame
    from models.sr_pareto import evaluation
    from models.sr_pareto.data import read_prepared
    from models.sr_pareto.front import published, standardize
    from models.sr_pareto.grammar import karva_structures

    e = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    summary = ctx.read_json(ctx.paths.trained / "summary.json")
    L = meta["max_length"]
    kcol = f"karva{e.karva_head}"
    (ctx.out / "fronts").mkdir()
    comp, peer, opts = [], [], []
    karva_sets: dict[int, set[str]] = {}
    for ds in meta["datasets"]:
        name, d = ds["name"], ds["features"]
        folder = ctx.paths.trained / name
        fast = pd.read_csv(folder / "fast.csv", dtype={"params": str})
        bfgs = pd.read_csv(folder / "protocol_BFGS.csv", dtype={"params": str})
        if d not in karva_sets:
            karva_sets[d] = evaluation.karva_space(d, e.karva_head)
        full_front, karva_front, bfgs_front = evaluation.dataset_fronts(fast, bfgs, karva_sets[d])
        y_var = summary[name]["y_var"]
        published(full_front, y_var).to_csv(ctx.out / "fronts" / f"{name}.csv", index=False)
        published(karva_front, y_var).to_csv(ctx.out / "fronts" / f"{name}_{kcol}.csv", index=False)
        published(bfgs_front, y_var).to_csv(ctx.out / "fronts" / f"{name}_BFGS.csv", index=False)
        planted_length = (ds["planted"] or {}).get("length", np.nan)
        comp += evaluation.comparison_rows(name, d, full_front, karva_front, bfgs_front, kcol, planted_length)
        X, y, _ = read_prepared(ctx.paths.prepared / f"{name}.csv")
        Xt, yz, _ = standardize(X, y)
        peer += evaluation.peer_rows(
            name, Xt, yz, full_front, ctx.seed, e.gplearn_population, e.gplearn_generations, L
        )
        ran = list(summary[name]["protocol"])
        for opt in ran if len(ran) > 1 else []:  # the optimiser data sets ran all eight
            tab = pd.read_csv(folder / f"protocol_{opt}.csv", dtype={"params": str})
            opts.append(evaluation.optimizer_row(name, opt, tab))
        ctx.log.info("%s: fronts up to length %d, %d gplearn programs so far", name, L, len(peer))
    counts = [evaluation.search_space_counts(d, L, e.count_karva4) for d in e.count_features]
    for file, rows in (("comparison", comp), ("peer", peer), ("optimizers", opts), ("counts", counts)):
        pd.DataFrame(rows).to_csv(ctx.out / f"{file}.csv", index=False)
    ctx.carry_meta(ctx.paths.prepared, karva_structures=len(karva_structures(e.karva_head)), summary=summary)
    # the summary is computed from the tables as written (the numbers the report shows beside them)
    tables = {f: read_frame(ctx.out / f"{f}.csv") for f in ("comparison", "peer", "optimizers")}
    ctx.write_json(
        "summary.json", evaluation.summarize(tables["comparison"], tables["peer"], tables["optimizers"])
    )
