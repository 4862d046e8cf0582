"""Each optimiser for ``steps`` full-batch steps from the same initialisation: the loss and gradient norm of
every step, and the test accuracy at the end (Lightning; models/lsmooth_gd/lit.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.training import make_trainer
    from models.lsmooth_gd.lit import FullBatchGD, accuracy, full_batch

    tp = ctx.params.train
    d = np.load(ctx.paths.prepared / "digits.npz")
    rows, final = [], {}
    seed = ctx.seed_for("init")  # every optimiser starts from the same initialisation
    for opt in tp.optimizers:
        model = FullBatchGD(d["x_train"].shape[1], 10, tp.hidden, tp.init_scale, opt, tp.L0, tp.L1, seed)
        make_trainer(tp.steps, seed).fit(model, full_batch(d["x_train"], d["y_train"]))
        rows += [{"optimizer": opt, **h} for h in model.history]
        final[opt] = {
            "final_loss": model.history[-1]["loss"],
            "test_accuracy": accuracy(model.net, d["x_test"], d["y_test"]),
        }
        ctx.log.info(
            "%s: final loss %.4g, test accuracy %.3f",
            opt,
            final[opt]["final_loss"],
            final[opt]["test_accuracy"],
        )
    pd.DataFrame(rows).to_csv(ctx.out / "history.csv", index=False)
    ctx.write_json("final.json", final)
