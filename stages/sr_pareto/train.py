"""The search: every expression of every data set (models/sr_pareto/search.fit_dataset), one table per data set
and method (every expression, its R^2, MSE, constants, iterations) and summary.json; data sets run in parallel
(joblib), the longest first, and each is logged as it finishes.

Per data set folder: ``fast.csv`` (every tree, the fast path), ``protocol_BFGS.csv`` (the paper's protocol up to
``protocol_max_length``), on the Karva data sets ``karva<h>_protocol.csv`` and ``karva<h>_fast.csv`` (the Karva
space of head length h fitted on its own by the protocol and by the fast path), on the optimiser data sets
``optimizer_<name>.csv`` (each optimiser on the common candidate set)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import time

    from joblib import Parallel, delayed

    from models.sr_pareto.data import read_prepared
    from models.sr_pareto.front import results_table
    from models.sr_pareto.grammar import OPS
    from models.sr_pareto.search import fit_dataset

    p = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    names = [d["name"] for d in meta["datasets"]]
    features = {d["name"]: d["features"] for d in meta["datasets"]}
    tables = {n: read_prepared(ctx.paths.prepared / f"{n}.csv") for n in names}
    ops = tuple(meta.get("operators", OPS))
    opt_spec = {"length": p.optimizer_length, "top": p.optimizer_top, "sample": p.optimizer_sample}

    def cost(n: str) -> float:  # rough relative work, to start the longest first
        return (
            4.0 ** features[n] + (8 if n in p.karva_datasets else 0) + (4 if n in p.optimizer_datasets else 0)
        )

    order = sorted(names, key=lambda n: -cost(n))
    start = time.monotonic()
    jobs = (
        delayed(fit_dataset)(
            *tables[n][:2],
            meta["max_length"],
            ctx.seed,
            p.refine_top,
            p.protocol_max_length,
            p.karva_head if n in p.karva_datasets else None,
            opt_spec if n in p.optimizer_datasets else None,
            ops,
        )
        for n in order
    )
    results = {}
    cpu = 0.0
    kname = f"karva{p.karva_head}"
    for name, res in zip(
        order, Parallel(n_jobs=min(p.n_jobs, len(names)), return_as="generator")(jobs), strict=True
    ):
        results[name] = res
        cpu += res["cpu_s"]
        ctx.log.info(
            "%s: %d expressions%s%s, %.0f CPU s (%d/%d data sets, %.0f s, %.0f CPU s in all)",
            name,
            len(res["exprs"]),
            f", {kname} {len(res['karva']['protocol'][0])} by the protocol" if res["karva"] else "",
            f", 8 optimisers x {len(next(iter(res['optimizers'].values()))[0])}" if res["optimizers"] else "",
            res["cpu_s"],
            len(results),
            len(names),
            time.monotonic() - start,
            cpu,
        )
    summary = {}
    for name in names:
        res = results[name]
        folder = ctx.out / name
        folder.mkdir()
        results_table(res["exprs"], res["fast"]).to_csv(folder / "fast.csv", index=False)
        results_table(*res["protocol"]).to_csv(folder / "protocol_BFGS.csv", index=False)
        if res["karva"]:
            results_table(*res["karva"]["protocol"]).to_csv(folder / f"{kname}_protocol.csv", index=False)
            results_table(*res["karva"]["fast"]).to_csv(folder / f"{kname}_fast.csv", index=False)
        for opt, (exprs, fits) in res["optimizers"].items():
            results_table(exprs, fits).to_csv(folder / f"optimizer_{opt}.csv", index=False)
        summary[name] = {
            "expressions": len(res["exprs"]),
            "refined": res["refined"],
            "y_var": res["y_var"],
            "protocol": len(res["protocol"][0]),
            "karva": None
            if res["karva"] is None
            else {
                "head": p.karva_head,
                "expressions": len(res["karva"]["protocol"][0]),
                "protocol_fitted": res["karva"]["fitted"],
                "refined": res["karva"]["refined"],
            },
            "optimizers": {opt: len(e) for opt, (e, _) in res["optimizers"].items()},
        }
    ctx.write_json("summary.json", summary)
