"""Accuracy of every model on the server's test graph, GHOST's and the local models' per-client accuracy, proxy
fidelity of both modes' generators, the server's training curves and the label histograms (one CSV each,
models/ghost/experiment.py `evaluate_run`), and summary.json: every number the report's claims and tables take
(`summarize`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.tables import read_frame
    from models.ghost.config import MODES
    from models.ghost.experiment import TABLES, evaluate_run, load_federated, summarize
    from models.ghost.store import load_run

    e = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.trained / "meta.json")
    rows: dict[str, list[dict]] = {name: [] for name in TABLES}
    for r in range(meta["runs"]):
        fed = load_federated(ctx.paths.prepared, r)
        run_dir = ctx.paths.trained / f"run{r}"
        models, gens = load_run(run_dir, MODES)
        history = ctx.read_json(run_dir / "history.json")
        found = evaluate_run(
            r,
            fed,
            models,
            gens,
            history,
            meta["headline"],
            e.fidelity_samples,
            e.fidelity_min_train,
            seed=ctx.seed_for("fidelity", r),
        )
        for name in TABLES:
            rows[name] += found[name]
    for name in TABLES:
        pd.DataFrame(rows[name]).to_csv(ctx.out / f"{name}.csv", index=False)
    full = ctx.carry_meta(ctx.paths.trained, **ctx.read_json(ctx.paths.prepared / "meta.json"))
    # the summaries are those of the CSV files as written (what anyone re-reading them gets)
    tables = {name: read_frame(ctx.out / f"{name}.csv") for name in TABLES}
    summary = summarize(tables, full)
    ctx.write_json("summary.json", summary)
    ctx.log.info("%s", {m: round(v, 3) for m, v in summary["accuracy"]["mean"].items()})
