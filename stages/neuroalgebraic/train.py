"""Train: the descent trials, batched (models/neuroalgebraic/descent.py): the sum-of-squares model from W0 and the
signed control from (A0, B0), ``steps`` gradient steps of size ``lr`` each. Plain NumPy: nothing learns from
data, so no Lightning. Writes ``endpoints.npz`` (W, A, B and each model's final loss)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np

    from models.neuroalgebraic.descent import psd_descent, signed_descent

    tp = ctx.params.train
    with np.load(ctx.paths.prepared / "targets.npz") as f:
        T, W0, A0, B0 = f["T"], f["W0"], f["A0"], f["B0"]
    ctx.log.info("sum-of-squares model: %d trials, %d steps", len(T), tp.steps)
    W, loss = psd_descent(T, W0, tp.steps, tp.lr)
    ctx.log.info("signed control: %d trials, %d steps", len(T), tp.steps)
    A, B, control_loss = signed_descent(T, A0, B0, tp.steps, tp.lr)
    np.savez(ctx.out / "endpoints.npz", W=W, A=A, B=B, loss=loss, control_loss=control_loss)
