"""Scores of the fits and the summary the claims read.

Per fit (:func:`score`): the unaligned latent correlation on non-intervened entries (``B u == 0``), the aligned
R^2, the reconstruction correlation, the largest eigenvalue distance of A from the true leak-form A, the
held-out MSE of the do-rollout's predicted observations, the final ELBO.

Summary (:func:`summarize`), per data set, over seeds (the claims are stated on means over the seeds, as the
issue states them; the worst seed is kept beside each):

- ``xcorr_issm`` / ``xcorr_ssm``: mean unaligned x-corr; ``xcorr_gap``: their difference (iSSM - SSM);
- ``ycorr_gap``: |mean y-corr(iSSM) - mean y-corr(SSM)|;
- ``eig_issm`` / ``eig_ssm``: mean eigenvalue distance;
- ``mse_ratio``: the mean over seeds of held-out MSE(iSSM) / MSE(SSM) (same data and seed).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import metrics


def score(fitted: Any, data: dict[str, np.ndarray], A_true: np.ndarray | None) -> dict[str, float]:
    """The scores of one fitted model (:class:`~.api.FittedISSM`) on its data set."""
    y, u = data["y"], data["u"]
    x_hat = fitted.posterior(y, u)
    row: dict[str, float] = {
        "ycorr": metrics.recon_corr(y, fitted.reconstruct(y, u)),
        "final_elbo": fitted.final_elbo,
        "xcorr": float("nan"),
        "r2": float("nan"),
        "eig_dist": float("nan"),
        "heldout_mse": float("nan"),
    }
    if "x" in data:
        free = (u @ fitted.B.T) == 0
        row["xcorr"] = metrics.unaligned_corr(data["x"], x_hat, free)
        for d in range(x_hat.shape[-1]):  # per latent, for the report
            row[f"xcorr_x{d + 1}"] = metrics.unaligned_corr(data["x"][..., d], x_hat[..., d], free[..., d])
        row["r2"] = metrics.aligned_r2(data["x"], x_hat)
    if A_true is not None:
        row["eig_dist"] = metrics.eig_distance(fitted.A, A_true)
    if "y_test" in data:
        row["heldout_mse"] = metrics.mse(data["y_test"], fitted.predict(data["u_test"]))
    return row


def _mean(g: pd.DataFrame, variant: str, col: str) -> float:
    v = g.loc[g.variant == variant, col]
    return float(v.mean()) if len(v) and v.notna().all() else float("nan")


def _paired(g: pd.DataFrame, col: str) -> pd.DataFrame:
    """iSSM's and SSM's ``col`` side by side per seed."""
    wide = g.pivot(index="seed", columns="variant", values=col)
    return (
        wide[["issm", "ssm"]]
        if {"issm", "ssm"} <= set(wide.columns)
        else pd.DataFrame(columns=["issm", "ssm"])
    )


def summarize(fits: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """The summary above per data set (NaN where a set has no truth or no held-out trials)."""
    out: dict[str, dict[str, Any]] = {}
    for data, g in fits.groupby("data", sort=True):
        xc, yc = _paired(g, "xcorr"), _paired(g, "ycorr")
        eig, mse = _paired(g, "eig_dist"), _paired(g, "heldout_mse")
        ratio = mse.issm / mse.ssm
        s: dict[str, Any] = {
            "seeds": int(g.seed.nunique()),
            "xcorr_issm": _mean(g, "issm", "xcorr"),
            "xcorr_ssm": _mean(g, "ssm", "xcorr"),
            "xcorr_issm_worst": float(xc.issm.min()) if len(xc) else float("nan"),
            "xcorr_gap_worst": float((xc.issm - xc.ssm).min()) if len(xc) else float("nan"),
            "ycorr_issm": _mean(g, "issm", "ycorr"),
            "ycorr_ssm": _mean(g, "ssm", "ycorr"),
            "ycorr_gap_worst": float((yc.issm - yc.ssm).abs().max()) if len(yc) else float("nan"),
            "eig_issm": _mean(g, "issm", "eig_dist"),
            "eig_ssm": _mean(g, "ssm", "eig_dist"),
            "eig_issm_worst": float(eig.issm.max()) if len(eig) else float("nan"),
            "r2_issm": _mean(g, "issm", "r2"),
            "r2_ssm": _mean(g, "ssm", "r2"),
            "mse_issm": _mean(g, "issm", "heldout_mse"),
            "mse_ssm": _mean(g, "ssm", "heldout_mse"),
            "mse_ratio": float(ratio.mean()) if len(ratio) and ratio.notna().all() else float("nan"),
            "mse_ratio_worst": float(ratio.max()) if len(ratio) and ratio.notna().all() else float("nan"),
        }
        s["xcorr_gap"] = s["xcorr_issm"] - s["xcorr_ssm"]
        s["ycorr_gap"] = abs(s["ycorr_issm"] - s["ycorr_ssm"])
        for v in sorted(set(g.variant) - {"issm", "ssm"}):
            s[f"xcorr_{v}"] = _mean(g, v, "xcorr")
            s[f"ycorr_{v}"] = _mean(g, v, "ycorr")
            s[f"eig_{v}"] = _mean(g, v, "eig_dist")
        out[str(data)] = s
    return out


def flow_grid(
    A: np.ndarray, lim: float = 1.5, n: int = 9, affine: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The continuous-time flow (A - I) x of a leak-form A on an n x n grid of [-lim, lim]^2; with ``affine``,
    the dynamic attractor's true drift f(x) = (a1 x1, a2 (1 - x1)) instead (A is then ignored)."""
    from .simulate import ATTRACTOR

    g = np.linspace(-lim, lim, n)
    X1, X2 = np.meshgrid(g, g)
    pts = np.stack([X1.ravel(), X2.ravel()], axis=1)
    if affine:
        v = np.stack([ATTRACTOR["a1"] * pts[:, 0], ATTRACTOR["a2"] * (1.0 - pts[:, 0])], axis=1)
    else:
        v = pts @ (A - np.eye(len(A))).T
    return X1, X2, v[:, 0].reshape(X1.shape), v[:, 1].reshape(X1.shape)
