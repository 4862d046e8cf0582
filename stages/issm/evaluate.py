"""Evaluate: every fit scored on its data set (models/issm/evaluation.py): ``scores.csv`` (per fit: unaligned
x-corr on non-intervened entries, aligned R^2, y-corr, eigenvalue distance, held-out MSE, final ELBO),
``eigenvalues.csv`` (learned and true), ``summary.json`` (the claims' numbers per set), ``trajectories.npz``
(seed 0, trial 0: true and inferred latents, held-out predictions; the report's figures), ``history.csv``
(carried from train: the ELBO curves)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.io import load_npz
    from icml25.tables import read_csv
    from models.issm.api import FittedISSM
    from models.issm.evaluation import score, summarize
    from models.issm.experiment import angle_beyond_pi

    trained = ctx.paths.trained
    meta = ctx.read_json(trained / "meta.json")
    plan = read_csv(trained / "fits.csv")
    rows, eigs, traces, data = [], [], {}, {}
    for f in plan.itertuples():
        key = (f.data, int(f.seed))
        if key not in data:
            data[key] = load_npz(ctx.paths.prepared / f"{f.data}_s{f.seed}.npz")
        d = data[key]
        fitted = FittedISSM.load(trained / "models" / f"{f.name}.safetensors")
        A_true = np.asarray(meta["true_A"][f.data]) if f.data in meta["true_A"] else None
        rows.append(
            {
                "name": f.name,
                "data": f.data,
                "seed": int(f.seed),
                "variant": f.variant,
                **score(fitted, d, A_true),
            }
        )
        for k, lam in enumerate(sorted(fitted.eigenvalues, key=lambda z: (z.real, z.imag))):
            eigs.append(
                {
                    "name": f.name,
                    "data": f.data,
                    "seed": int(f.seed),
                    "variant": f.variant,
                    "k": k,
                    "real": float(lam.real),
                    "imag": float(lam.imag),
                }
            )
        if int(f.seed) == 0:
            traces[f"{f.data}/{f.variant}/x_hat"] = fitted.posterior(d["y"][:1], d["u"][:1])[0]
            traces[f"{f.data}/{f.variant}/A"] = fitted.A
            if "u_test" in d:
                traces[f"{f.data}/{f.variant}/y_pred"] = fitted.predict(d["u_test"][:1])[0]
            for k in ("x", "u", "y_test", "u_test"):
                if k in d:
                    traces[f"{f.data}/truth/{k}"] = d[k][0]
    for name, A in meta["true_A"].items():
        for k, lam in enumerate(sorted(np.linalg.eigvals(np.asarray(A)), key=lambda z: (z.real, z.imag))):
            eigs.append(
                {
                    "name": f"{name}_true",
                    "data": name,
                    "seed": -1,
                    "variant": "true",
                    "k": k,
                    "real": float(lam.real),
                    "imag": float(lam.imag),
                }
            )
    scores = pd.DataFrame(rows)
    scores.to_csv(ctx.out / "scores.csv", index=False)
    pd.DataFrame(eigs).to_csv(ctx.out / "eigenvalues.csv", index=False)
    np.savez(ctx.out / "trajectories.npz", **traces)
    summary = summarize(scores)
    for name in summary:
        if name.startswith("attractor"):  # the angle x2 outside [-pi, pi], mean over seeds
            share = [angle_beyond_pi(v) for (n, _), v in data.items() if n == name]
            summary[name]["angle_beyond_pi"] = float(sum(share) / len(share))
    ctx.write_json(
        "summary.json",
        {
            "sets": summary,
            **{
                k: meta[k]
                for k in (
                    "source",
                    "seeds",
                    "dt",
                    "iters",
                    "gamma",
                    "shared_noise",
                    "train_B",
                    "a_init",
                    "ablation_sets",
                    "true_A",
                )
            },
        },
    )
    ctx.carry(trained, "history.csv")
    for name, s in summary.items():
        ctx.log.info(
            "%s: x-corr iSSM %.3f SSM %.3f; y-corr gap %.3f; eig distance iSSM %.2f SSM %.2f; MSE ratio %.2f",
            name,
            s["xcorr_issm"],
            s["xcorr_ssm"],
            s["ycorr_gap"],
            s["eig_issm"],
            s["eig_ssm"],
            s["mse_ratio"],
        )
