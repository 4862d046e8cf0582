"""The claims of easyinv, computed from data/easyinv/evaluated, and what report.md shows. Three ``invariant``s
check the implementation of the rule (they hold by construction of a correct implementation; a broken one fails
each: tests/papers/easyinv/test_claims.py); ``quality`` is the one ``result``."""

from __future__ import annotations

from icml25.claims import claim
from icml25.reporting import Evaluated, fmt, pyplot, table

LABEL = {
    "ddim": "DDIM inversion",
    "easyinv": "EasyInv (SD-1.4 window)",
    "easyinv_sdxl": "EasyInv (SDXL window)",
    "easyinv_after_step": "EasyInv, mix after the step (example.py)",
    "fixed_point": "fixed-point inversion",
}


def _s(ev: Evaluated) -> dict:
    return ev.json("summary.json")


@claim(
    "==",
    0,
    kind="invariant",
    statement="max |z_T(EasyInv) - z_T(DDIM inversion)| with eta = 1, and with an empty window",
    source="Spec acceptance (i)",
    # exactly 0 by construction (the same float ops)
    tol=0,
)
def eta_one_is_ddim(ev: Evaluated):
    s = _s(ev)
    return max(s["eta_one_diff"], s["empty_window_diff"]), (
        f"eta = 1: {fmt(s['eta_one_diff'], 3)}; empty window: {fmt(s['empty_window_diff'], 3)}"
    )


@claim(
    "<=",
    1e-6,
    kind="invariant",
    statement="max over the window's steps of |z_{i+1} - next_step(eps(z_i), t, eta z_i + (1 - eta) z_prev)|, "
    "eps recomputed on the un-mixed z_i from the stored trajectory (fp32)",
    source="Spec acceptance (iv): eps on the un-mixed latent, the step on the mixed one",
    # exactly 0 by construction (the step recomputed with the same ops and shapes)
    tol=0,
)
def ordering(ev: Evaluated):
    s = _s(ev)
    return s["ordering_residual"], f"{s['window_steps']} window steps at N = {s['steps']}"


@claim(
    "==",
    0,
    kind="invariant",
    statement="network calls of EasyInv inversion minus those of DDIM inversion",
    source="Spec acceptance (ii); paper: the same 5 s as DDIM inversion",
    # exact count
    tol=0,
    paper="inversion in 5 s, the same as DDIM inversion (arXiv text)",
)
def same_cost_as_ddim(ev: Evaluated):
    s = _s(ev)
    return s["calls_diff"], f"{s['calls_easyinv']} calls each"


@claim(
    ">=",
    -0.5,
    kind="result",
    killed_by="test_claims.py::test_eta_zero_fails_quality",
    statement="min over fp32 and bf16 of mean reconstruction PSNR(EasyInv) - mean PSNR(DDIM inversion), N = 50, "
    "the test digits",
    source="Abstract (on par with or better than DDIM inversion, especially at limited precision); spec floor",
    # training (torch, 8k Adam steps): moved 0 in a8afbab; allows weight drift (bf16 rounds per step)
    tol=0.05,
)
def quality(ev: Evaluated):
    s = _s(ev)
    by = ", ".join(f"{p} {fmt(v, 3)} dB" for p, v in s["quality_by_precision"].items())
    return s["quality"], f"{by}; a small, well-conditioned model leaves DDIM inversion little drift to damp"


def _grid(ev: Evaluated) -> str:
    import numpy as np

    plt = pyplot()
    r = np.load(ev.dir / "recon.npz")
    rows = [k for k in ("original", "ddim", "easyinv") if k in r.files]
    n = r["original"].shape[0]
    fig, axes = plt.subplots(len(rows), n, figsize=(1.2 * n, 1.3 * len(rows)), squeeze=False)
    for i, k in enumerate(rows):
        for j in range(n):
            ax = axes[i, j]
            ax.imshow(r[k][j, 0], cmap="gray", vmin=-1, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[i, 0].set_ylabel({"original": "original", "ddim": "DDIM", "easyinv": "EasyInv"}[k], fontsize=8)
    return ev.figure(
        "reconstructions.png", fig, "test digits and their reconstructions from z_T (fp32, largest N)"
    )


def _sweep_figure(ev: Evaluated, sweep, ddim_psnr: float) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(sweep.eta, sweep.psnr, marker="o", label="EasyInv (SD-1.4 window)")
    ax.axhline(ddim_psnr, color="grey", ls=":", label="DDIM inversion")
    ax.set_xlabel("eta (the weight of the current latent)")
    ax.set_ylabel("mean PSNR (dB)")
    ax.legend(fontsize=7)
    return ev.figure("eta_sweep.png", fig, "reconstruction PSNR against eta (fp32, largest N)")


def context(ev: Evaluated) -> dict:
    s = _s(ev)
    scores = ev.csv("scores.csv")
    rows = [
        {
            "method": LABEL.get(r.method, r.method),
            "precision": r.precision,
            "N": int(r.steps),
            "mean PSNR (dB)": fmt(r.psnr, 4),
            "worst PSNR (dB)": fmt(r.psnr_min, 4),
            "mean SSIM": fmt(r.ssim, 4),
            "network calls": int(r.calls),
        }
        for r in scores.sort_values(["steps", "precision", "method"]).itertuples()
    ]
    gaps = []
    for (prec, n), g in scores.groupby(["precision", "steps"], sort=True):
        m = g.set_index("method").psnr
        gaps.append(
            {
                "precision": prec,
                "N": int(n),
                "EasyInv - DDIM (dB)": fmt(m["easyinv"] - m["ddim"], 3),
                "SDXL window - DDIM (dB)": fmt(m["easyinv_sdxl"] - m["ddim"], 3),
                "mix after step - DDIM (dB)": fmt(m["easyinv_after_step"] - m["ddim"], 3),
                "fixed point - DDIM (dB)": fmt(m["fixed_point"] - m["ddim"], 3),
            }
        )
    sweep = ev.csv("eta_sweep.csv")
    n_max = s["steps"]
    ddim_fp32 = float(
        scores[(scores.method == "ddim") & (scores.precision == "fp32") & (scores.steps == n_max)].psnr.iloc[
            0
        ]
    )
    calls = scores[(scores.steps == n_max) & (scores.precision == "fp32")].set_index("method").calls
    return {
        "s": s,
        "score_table": table(rows),
        "gap_table": table(gaps),
        "sweep_table": table(
            [
                {"eta": fmt(r.eta, 3), "mean PSNR (dB)": fmt(r.psnr, 4), "mean SSIM": fmt(r.ssim, 4)}
                for r in sweep.itertuples()
            ]
        ),
        "figures": [_grid(ev), _sweep_figure(ev, sweep, ddim_fp32)],
        "fp_ratio": fmt(float(calls["fixed_point"] / calls["easyinv"]), 3),
        "n_max": n_max,
    }


def metrics(ev: Evaluated) -> dict:
    s = _s(ev)
    return {k: s[k] for k in ("quality", "quality_by_precision", "ordering_residual", "calls_diff")}
