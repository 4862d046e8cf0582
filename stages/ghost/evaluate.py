"""Per graph and run: accuracy of every model on the server's test graph, GHOST's and the baselines' per-client
accuracy, proxy fidelity of every generator set, the server's training curves and the label histograms (one CSV
each, models/ghost/experiment.py `evaluate_run`), and summary.json: every number the report's claims and tables
take (`summarize`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd
    import torch

    from icml25.tables import read_frame
    from models.ghost.experiment import TABLES, evaluate_run, load_federated, summarize
    from models.ghost.store import load_run

    torch.set_num_threads(1)
    e = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.trained / "meta.json")
    rows: dict[str, list[dict]] = {name: [] for name in TABLES}
    for name in meta["graphs"]:
        for r in range(meta["runs"]):
            fed = load_federated(ctx.paths.prepared, name, r)
            run_dir = ctx.paths.trained / name / f"run{r}"
            models, gens = load_run(run_dir)
            history = ctx.read_json(run_dir / "history.json")
            found = evaluate_run(
                name,
                r,
                fed,
                models,
                gens,
                history,
                e.fidelity_samples,
                e.fidelity_min_train,
                seed=ctx.seed_for("fidelity", name, r),
            )
            for table in TABLES:
                rows[table] += found[table]
        ctx.log.info("evaluated %s: %d runs", name, meta["runs"])
    for table in TABLES:
        pd.DataFrame(rows[table]).to_csv(ctx.out / f"{table}.csv", index=False)
    full = ctx.carry_meta(ctx.paths.trained, **ctx.read_json(ctx.paths.prepared / "meta.json"))
    # the summaries are those of the CSV files as written (what anyone re-reading them gets)
    tables = {table: read_frame(ctx.out / f"{table}.csv") for table in TABLES}
    summary = summarize(tables, full)
    ctx.write_json("summary.json", summary)
    for g, s in summary["graphs"].items():
        ctx.log.info("%s: %s", g, {m: round(v, 3) for m, v in s["accuracy"]["mean"].items()})
