"""Evaluate: the six metrics of every method on every held-out fold of the real set and every synthetic test draw
(``metrics.csv``; ``table.csv``: mean and sd per dataset and method); the planted denoising grid, the best
relative error of the LTR and the TNN prox per seed and the tubal rank of that estimate (``planted.csv``); the
singular values of the Fourier slices of the real set's first-fold classifier tensors (``spectra.csv``); the
claims' numbers (``summary.json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from models.tmvml.experiment import claim_numbers, load_split, planted_best
    from models.tmvml.metrics import NAMES, all_metrics
    from models.tmvml.tensor import rotate, slice_spectra

    ep = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    trained = ctx.read_json(ctx.paths.trained / "meta.json")
    rows = []
    with np.load(ctx.paths.trained / "scores.npz") as scores:
        for d, k in trained["splits"]:
            views = len(meta["views"]) if d == "real" else int(meta["synthetic_views"])
            y = load_split(ctx.paths.prepared, d, k, views)[3]
            for m in trained["methods"]:
                rows.append(
                    {
                        "dataset": d,
                        "split": k,
                        "method": m,
                        **all_metrics(y, scores[f"{d}_{k}_{m}"], ep.threshold),
                    }
                )
    metrics = pd.DataFrame(rows)
    metrics.to_csv(ctx.out / "metrics.csv", index=False)
    table = metrics.groupby(["dataset", "method"], sort=False)[list(NAMES)].agg(["mean", "std"])
    table.columns = [f"{a}_{b}" for a, b in table.columns]
    table.reset_index().to_csv(ctx.out / "table.csv", index=False)
    t_grid = np.geomspace(ep.grid_min, ep.grid_max, ep.grid_points)
    planted = []
    with np.load(ctx.paths.prepared / "planted.npz") as z:
        for k in range(int(meta["planted_seeds"])):
            best = planted_best(z[f"star_s{k}"], z[f"noisy_s{k}"], t_grid, np.asarray(ep.grid_deltas))
            for penalty, b in best.items():
                planted.append({"seed": k, "penalty": penalty, **b})
            ctx.log.info("planted seed %d: best relative error LTR %.4f (rank %d), TNN %.4f (rank %d)", k,
                         best["ltr"]["error"], best["ltr"]["rank"], best["tnn"]["error"], best["tnn"]["rank"])  # fmt: skip
    planted = pd.DataFrame(planted)
    planted.to_csv(ctx.out / "planted.csv", index=False)
    spectra = []
    for m in ("ltr", "tnn"):
        path = ctx.paths.trained / "models" / f"real_0_{m}.npz"
        if path.exists():
            with np.load(path) as z:
                s = slice_spectra(rotate(z["w"]))
            for slc, vals in enumerate(s):
                spectra.extend(
                    {"method": m, "slice": slc, "index": i, "sigma": float(v)} for i, v in enumerate(vals)
                )
    pd.DataFrame(spectra, columns=["method", "slice", "index", "sigma"]).to_csv(
        ctx.out / "spectra.csv", index=False
    )
    fits = pd.read_csv(ctx.paths.trained / "fits.csv")
    fits.to_csv(ctx.out / "fits.csv", index=False)
    summary = claim_numbers(planted, fits, metrics, "real") | {
        "source": meta["source"],
        "data": meta["data"],
        "methods": trained["methods"],
        "max_iter": int(trained["config"]["max_iter"]),
        "threshold": ep.threshold,
    }
    ctx.write_json("summary.json", summary)
    for m, ap in summary["real_ap"].items():
        ctx.log.info("real set, %s: mean AP %.4f", m, ap)
