"""Evaluate: every method (DDIM inversion, EasyInv with the SD-1.4 window, the SDXL window, example.py's
mix-after-step order, fixed-point inversion) in every precision at every N on the test images, inverted and
reconstructed by DDIM: ``scores.csv`` (mean PSNR and SSIM, network calls, wall time kept out of the claims);
``eta_sweep.csv`` (EasyInv at the largest N, fp32); ``summary.json`` (the invariants and the quality gap per
precision); ``recon.npz`` (eight test images and their reconstructions, the report's grid)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd
    import torch

    from icml25.io import load_npz
    from models.easyinv.experiment import Method, checks, load_model, methods, run_method

    torch.set_num_threads(1)
    ep = ctx.params.evaluate
    model = load_model(ctx.paths.trained / "model.safetensors")
    x = torch.tensor(load_npz(ctx.paths.prepared / "images.npz")["test"][: ep.images], dtype=torch.float32)
    window = (float(ep.window[0]), float(ep.window[1]))
    sdxl = tuple(float(v) for v in ep.sdxl)
    n_max = max(ep.steps)
    rows, recon = [], {"original": x[:8].numpy()}
    for precision in ep.precisions:
        for steps in ep.steps:
            for m in methods(ep.eta, window, sdxl, ep.fixed_point_iters):
                r = run_method(model, x, m, steps, precision)
                rows.append(
                    {
                        "method": m.name,
                        "precision": precision,
                        "steps": steps,
                        "psnr": float(r["psnr"].mean()),
                        "ssim": float(r["ssim"].mean()),
                        "psnr_min": float(r["psnr"].min()),
                        "calls": r["calls"],
                    }
                )
                if precision == "fp32" and steps == n_max and m.name in ("ddim", "easyinv"):
                    recon[m.name] = r["rec"][:8].numpy()
            ctx.log.info(
                "%s, N = %d: %s",
                precision,
                steps,
                ", ".join(f"{r['method']} {r['psnr']:.2f} dB" for r in rows[-5:]),
            )
    scores = pd.DataFrame(rows)
    scores.to_csv(ctx.out / "scores.csv", index=False)
    sweep = []
    for eta in ep.eta_sweep:
        r = run_method(model, x, Method(f"eta{eta:g}", float(eta), window), n_max, "fp32")
        sweep.append({"eta": float(eta), "psnr": float(r["psnr"].mean()), "ssim": float(r["ssim"].mean())})
    pd.DataFrame(sweep).to_csv(ctx.out / "eta_sweep.csv", index=False)
    np.savez(ctx.out / "recon.npz", **recon)
    inv = checks(model, x, n_max, ep.eta, window)
    at = scores[scores.steps == n_max].pivot(index="precision", columns="method", values="psnr")
    gap = {p: float(at.loc[p, "easyinv"] - at.loc[p, "ddim"]) for p in at.index}
    ctx.write_json(
        "summary.json",
        {
            **inv,
            "calls_diff": inv["calls_easyinv"] - inv["calls_ddim"],
            "steps": n_max,
            "quality_by_precision": gap,
            "quality": min(gap.values()),
            "eta": ep.eta,
            "window": list(window),
            "images": len(x),
        },
    )
    ctx.log.info("EasyInv - DDIM PSNR at N = %d: %s; invariants %s", n_max, gap, inv)
