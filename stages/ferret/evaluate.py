"""Evaluate: the Monte Carlo check of Theorem 1 (the mean of ``bias_reps`` reconstructions of one d = ``bias_d``
block from K_l = ``bias_k`` fresh bases, under the paper's and the code's scaling), the per-method table (final
accuracy over seeds, uplink per client and round and / d, rounds to ``target_accuracy``) and the claims' numbers
(models/ferret/experiment.py). Writes ``table.csv``, ``finals.csv`` (per method and seed), ``history.csv`` (for
the figures), ``bias.csv`` and ``summary.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25.tables import read_csv
    from models.ferret.experiment import claims, finals, reconstruction_bias, table

    ep = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.trained / "meta.json")
    history = read_csv(ctx.paths.trained / "history.csv")
    bias = {}
    for scaling in ("paper", "code"):
        start = time.perf_counter()
        bias[scaling] = reconstruction_bias(ep.bias_d, ep.bias_k, ep.bias_reps, scaling, ctx.seed_for("bias"))
        ctx.log.info(
            "reconstruction bias, %s scaling: %.3f (%d reconstructions, %.1f s)",
            scaling,
            bias[scaling],
            ep.bias_reps,
            time.perf_counter() - start,
        )
    pd.DataFrame(
        [
            {"scaling": s, "d": ep.bias_d, "k": ep.bias_k, "reps": ep.bias_reps, "error": e}
            for s, e in bias.items()
        ]
    ).to_csv(ctx.out / "bias.csv", index=False)
    dim = int(meta["dim"])
    t = table(history, dim, ep.target_accuracy)
    t.to_csv(ctx.out / "table.csv", index=False)
    finals(history, ep.target_accuracy).to_csv(ctx.out / "finals.csv", index=False)
    history.to_csv(ctx.out / "history.csv", index=False)
    summary = claims(history, dim, bias) | {
        "rounds": int(history["round"].max()),
        "target_accuracy": ep.target_accuracy,
        "methods": meta["methods"],
        "report_methods": meta["report_methods"],
        "blocks": meta["blocks"],
        "model": meta["model"],
    }
    ctx.write_json("summary.json", summary)
    for r in t.itertuples():
        ctx.log.info(
            "%s: accuracy %.3f, uplink %.1f (%.3f d)", r.method, r.accuracy, r.uplink, r.uplink_over_d
        )
