"""Evaluate: per architecture the counts, the closed form, the exact rank over GF(p) (the larger of two draws) and
the float64 rank (largest log-gap; and the spec's 1e-7 threshold beside it) -> ``table.csv``; per descent trial
the endpoint's s_r / s_1, whether it is singular, the prediction (T has fewer than r positive eigenvalues), the
excess loss over the Eckart-Young optimum on the PSD cone, and the control's -> ``descent.csv``; the claims'
numbers -> ``summary.json``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_csv
    from models.neuroalgebraic.descent import predicted_singular, psd_optimum_loss, ratio, singular
    from models.neuroalgebraic.experiment import case_row, claims
    from models.neuroalgebraic.neuromanifold import Architecture

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    archs = read_csv(ctx.paths.prepared / "architectures.csv")
    rows, start = [], time.perf_counter()
    for i, r in enumerate(archs.itertuples()):
        arch = Architecture(tuple(int(x) for x in str(r.widths).split(",")), int(r.degree))
        rows.append(case_row(arch, ctx.seed_for("rank", arch.label)))
        if (i + 1) % 50 == 0 or i + 1 == len(archs):
            ctx.log.info(
                "ranks: %d of %d architectures (%.0f s)", i + 1, len(archs), time.perf_counter() - start
            )
    table = pd.DataFrame(rows)
    table.to_csv(ctx.out / "table.csv", index=False)
    with np.load(ctx.paths.prepared / "targets.npz") as f:
        T = f["T"]
    with np.load(ctx.paths.trained / "endpoints.npz") as f:
        W, A, B, loss = f["W"], f["A"], f["B"], f["loss"]
    r, AB = int(meta["rank"]), A @ B
    descent = pd.DataFrame(
        {
            "trial": np.arange(len(T)),
            "positive_eigenvalues": (np.linalg.eigvalsh(T) > 0).sum(1),
            "predicted": predicted_singular(T, r),
            "ratio": ratio(W, r),
            "singular": singular(W, r),
            "excess_loss": loss - psd_optimum_loss(T, r),
            "control_ratio": ratio(AB, r),
            "control_singular": singular(AB, r),
        }
    )
    descent.to_csv(ctx.out / "descent.csv", index=False)
    ctx.write_json("summary.json", claims(table, descent) | {"rank": r, "size": int(meta["size"])})
