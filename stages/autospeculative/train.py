"""Train: the x0-predicting MLP on the prepared data (models/autospeculative/network.py, Lightning, the continuous
cosine schedule, so one network serves every K). Writes ``x0net.safetensors`` (weights, and the sizes that
rebuild it in the file's metadata) and ``meta.json`` (loss at the start and the end, steps)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np

    from models.autospeculative.network import fit, save
    from models.common.training import Progress

    tp = ctx.params.train
    with np.load(ctx.paths.prepared / "data.npz") as f:
        x = f["x"]

    def report(step: int, loss: float) -> None:
        ctx.log.info("x0 network: step %d of %d, loss %.4f", step, tp.steps, loss)

    net, history = fit(
        x,
        tp.steps,
        batch=tp.batch,
        hidden=tp.hidden,
        depth=tp.depth,
        lr=tp.lr,
        seed=ctx.seed_for("x0net"),
        callbacks=[Progress(max(1, tp.steps // 5), report)],
    )
    save(net, ctx.out / "x0net.safetensors")
    k = max(1, len(history) // 20)
    ctx.write_json(
        "meta.json",
        {
            "steps": tp.steps,
            "loss_first": float(np.mean(history[:k])),
            "loss_last": float(np.mean(history[-k:])),
            "rows": len(x),
            "dim": int(x.shape[1]),
        },
    )
