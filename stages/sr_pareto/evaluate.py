"""Fronts (all trees, the Karva space fitted on its own, the BFGS protocol) in the published columns, gplearn's
population against the front, the optimiser comparison, the search-space counts, and summary.json: every number
the report's claims and tables need (models/sr_pareto/evaluation.summarize)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from models.sr_pareto import evaluation
    from models.sr_pareto.data import read_prepared
    from models.sr_pareto.fit import OPTIMIZERS
    from models.sr_pareto.front import published, standardize
    from models.sr_pareto.grammar import OPS, karva_structures

    e = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    summary = ctx.read_json(ctx.paths.trained / "summary.json")
    L = meta["max_length"]
    ops = tuple(meta.get("operators", OPS))
    heads = {v["karva"]["head"] for v in summary.values() if v["karva"]}
    head = heads.pop() if heads else 3
    kcol = f"karva{head}"
    (ctx.out / "fronts").mkdir()
    comp, peer, opts = [], [], []
    karva_sets: dict[int, set[str]] = {}

    def table(path):
        return pd.read_csv(path, dtype={"params": str}) if path.exists() else None

    for ds in meta["datasets"]:
        name, d = ds["name"], ds["features"]
        folder = ctx.paths.trained / name
        fronts = evaluation.dataset_fronts(
            table(folder / "fast.csv"),
            table(folder / "protocol_BFGS.csv"),
            table(folder / f"{kcol}_protocol.csv"),
            table(folder / f"{kcol}_fast.csv"),
        )
        y_var = summary[name]["y_var"]
        for key, suffix in (
            ("full", ""),
            ("bfgs", "_BFGS"),
            ("karva", f"_{kcol}"),
            ("karva_fast", f"_{kcol}_fast"),
        ):
            if fronts[key] is not None:
                published(fronts[key], y_var).to_csv(ctx.out / "fronts" / f"{name}{suffix}.csv", index=False)
        plant = ds["planted"] or {}
        reachable = None
        if plant and head == 3:  # declared with the planted set (a property of the official space; tested)
            reachable = plant["karva3"]
        elif plant:
            if d not in karva_sets:
                karva_sets[d] = evaluation.karva_space(d, head, ops)
            reachable = plant["expression"] in karva_sets[d]
        comp += evaluation.comparison_rows(name, d, fronts, kcol, plant.get("length", np.nan), reachable)
        X, y, _ = read_prepared(ctx.paths.prepared / f"{name}.csv")
        Xt, yz, _ = standardize(X, y)
        peer += evaluation.peer_rows(
            name, Xt, yz, fronts["full"], ctx.seed, e.gplearn_population, e.gplearn_generations, L
        )
        for opt in OPTIMIZERS:
            tab = table(folder / f"optimizer_{opt}.csv")
            if tab is not None:
                opts.append(evaluation.optimizer_row(name, opt, tab))
        ctx.log.info("%s: fronts up to length %d, %d gplearn programs so far", name, L, len(peer))
    counts = [evaluation.search_space_counts(d, L, e.count_karva4, ops) for d in e.count_features]
    ctx.log.info("search-space counts for %s feature(s)", ", ".join(map(str, e.count_features)))
    ctx.carry_meta(
        ctx.paths.prepared,
        karva_head=head,
        karva_structures=len(karva_structures(head, ops)),
        summary=summary,
    )
    evaluation.write_evaluated(ctx.out, comp, peer, opts, counts)
