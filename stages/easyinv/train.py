"""Train: the eps-MLP (models/easyinv/net.py) on the training images, ``steps`` Adam steps of batch ``batch``
(Lightning, seeded from ``ctx.seed_for("train")``); writes ``model.safetensors`` (weights and shape) and
``history.csv`` (the loss per step)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import time

    import numpy as np
    import pandas as pd
    import torch

    from icml25.io import load_npz
    from models.easyinv.experiment import save_model
    from models.easyinv.net import train_eps

    torch.set_num_threads(1)
    tp = ctx.params.train
    x = torch.tensor(load_npz(ctx.paths.prepared / "images.npz")["train"], dtype=torch.float32)
    ctx.log.info("training the eps-model: %d steps of batch %d on %d images", tp.steps, tp.batch, len(x))
    start = time.perf_counter()

    def progress(step: int, loss: float) -> None:
        ctx.log.info("step %d/%d: loss %.4f (%.0f s)", step, tp.steps, loss, time.perf_counter() - start)

    model, history = train_eps(x, tp.steps, ctx.seed_for("train"), tp.hidden, tp.lr, tp.batch, progress)
    save_model(model, ctx.out / "model.safetensors")
    pd.DataFrame({"step": np.arange(1, len(history) + 1), "loss": history}).to_csv(
        ctx.out / "history.csv", index=False
    )
    ctx.log.info(
        "final loss (mean of the last 100 steps) %.4f, %.0f s",
        float(np.mean(history[-100:])),
        time.perf_counter() - start,
    )
