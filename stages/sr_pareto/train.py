"""The search: every expression of every data set (models/sr_pareto/search.fit_dataset), one table per data set
and method (every expression, its R^2, MSE, constants, iterations) and summary.json; data sets run in parallel
(joblib)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from joblib import Parallel, delayed

    from models.sr_pareto.data import read_prepared
    from models.sr_pareto.front import results_table
    from models.sr_pareto.search import fit_dataset

    p = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    names = [d["name"] for d in meta["datasets"]]
    tables = {n: read_prepared(ctx.paths.prepared / f"{n}.csv") for n in names}
    results = Parallel(n_jobs=min(p.n_jobs, len(names)))(
        delayed(fit_dataset)(
            *tables[n][:2],
            meta["max_length"],
            ctx.seed,
            p.refine_top,
            p.protocol_max_length,
            p.optimizers_max_length if n in p.optimizer_datasets else None,
        )
        for n in names
    )
    summary = {}
    for name, res in zip(names, results, strict=True):
        folder = ctx.out / name
        folder.mkdir()
        results_table(res["exprs"], res["fast"]).to_csv(folder / "fast.csv", index=False)
        for opt, (exprs, fits) in res["protocol"].items():
            results_table(exprs, fits).to_csv(folder / f"protocol_{opt}.csv", index=False)
        summary[name] = {
            "expressions": len(res["exprs"]),
            "refined": res["refined"],
            "y_var": res["y_var"],
            "protocol": {opt: len(e) for opt, (e, _) in res["protocol"].items()},
        }
        ctx.log.info("%s: %d expressions", name, len(res["exprs"]))
    ctx.write_json("summary.json", summary)
