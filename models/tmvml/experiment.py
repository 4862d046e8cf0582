"""The experiment's pieces shared by the stages and the tests: the methods by name, lambda by inner
cross-validation, one (train, test) task, the planted denoising grid and the claims' numbers."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from models.tmvml.metrics import average_precision
from models.tmvml.model import ConcatRidge, LabelFrequency, PerViewRidge, TMvML
from models.tmvml.tensor import prox_tensor, slice_spectra, tubal_rank

METHODS = ("ltr", "tnn", "ridge", "concat", "freq")


@dataclass(frozen=True)
class Config:
    """The estimators' settings (train params)."""

    lam_grid: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
    ridge_grid: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0, 1000.0)
    inner_folds: int = 3
    delta: float = 1.0
    rho: float = 1.0
    mu: float = 1.2
    max_iter: int = 300
    tol: float = 1e-4
    common_dim: str = "pad"
    bias: bool = True
    scale: float = 1.0
    prox: str = "fixed_point"
    dual_sign: float = 1.0


def make(method: str, lam: float, cfg: Config):
    """An unfitted estimator of ``method`` with penalty ``lam``."""
    if method in ("ltr", "tnn"):
        return TMvML(lam=lam, delta=cfg.delta, penalty=method, rho=cfg.rho, mu=cfg.mu, tol=cfg.tol,
                     max_iter=cfg.max_iter, common_dim=None if cfg.common_dim == "pad" else cfg.common_dim,
                     bias=cfg.bias, scale=cfg.scale, prox=cfg.prox, dual_sign=cfg.dual_sign)  # fmt: skip
    if method == "ridge":
        return PerViewRidge(lam)
    if method == "concat":
        return ConcatRidge(lam)
    if method == "freq":
        return LabelFrequency()
    raise ValueError(f"method {method!r}; choose from {', '.join(METHODS)}")


def grid(method: str, cfg: Config) -> tuple[float, ...]:
    return (
        cfg.lam_grid
        if method in ("ltr", "tnn")
        else cfg.ridge_grid
        if method in ("ridge", "concat")
        else (0.0,)
    )


def _iterations(model, cfg: Config) -> int:
    """ADMM iterations to the tolerance; a fit that never reached it counts max_iter + 1."""
    if not hasattr(model, "iterations_"):
        return 0
    return model.iterations_ if model.converged_ else cfg.max_iter + 1


def run_task(method: str, train: list[np.ndarray], y: np.ndarray, test: list[np.ndarray], cfg: Config,
             g: np.random.Generator) -> dict:  # fmt: skip
    """lambda by inner CV (the mean AP over ``inner_folds`` folds of the training rows), then the fit on all of
    them; returns the test scores, the chosen lambda, the inner APs, the most ADMM iterations of any fit and W."""
    start = time.perf_counter()
    lams = grid(method, cfg)
    iters, inner = [], {}
    if len(lams) > 1:
        fold = g.permutation(len(y)) % cfg.inner_folds
        for lam in lams:
            aps = []
            for f in range(cfg.inner_folds):
                tr, te = fold != f, fold == f
                m = make(method, lam, cfg).fit([x[tr] for x in train], y[tr])
                iters.append(_iterations(m, cfg))
                aps.append(average_precision(y[te], m.decision_function([x[te] for x in train])))
            inner[lam] = float(np.mean(aps))
        lam = max(lams, key=lambda a: (inner[a], -a))  # ties: the smaller penalty
    else:
        lam = lams[0]
    model = make(method, lam, cfg).fit(train, y)
    iters.append(_iterations(model, cfg))
    return {
        "scores": model.decision_function(test),
        "lam": lam,
        "inner": inner,
        "iterations": max(iters),
        "final_iterations": iters[-1],
        "fits": len(iters) if method in ("ltr", "tnn") else 0,
        "w": getattr(model, "w_", None),
        "seconds": time.perf_counter() - start,
    }


def load_split(prepared, dataset: str, split: int, views: int):
    """(train views, train labels, test views, test labels) of one split as prepare wrote it: fold ``split`` of
    the real set held out, or synthetic draw ``split`` of ``dataset`` (e.g. spec_n150)."""
    if dataset == "real":
        with np.load(prepared / "real.npz") as z:
            xs, y, fold = [z[f"x{v}"] for v in range(views)], z["y"], z["fold"]
        tr, te = fold != split, fold == split
        return [x[tr] for x in xs], y[tr], [x[te] for x in xs], y[te]
    key = f"{dataset.rsplit('_n', 1)[0]}_s{split}_n{dataset.rsplit('_n', 1)[1]}"
    with np.load(prepared / "synthetic.npz") as z:
        part = lambda p: ([z[f"{key}_{p}_x{v}"] for v in range(views)], z[f"{key}_{p}_y"])  # noqa: E731
        (xtr, ytr), (xte, yte) = part("train"), part("test")
    return xtr, ytr, xte, yte


def planted_best(star: np.ndarray, noisy: np.ndarray, t_grid: np.ndarray, deltas: np.ndarray,
                 scale: float = 1.0) -> dict[str, dict]:  # fmt: skip
    """For each penalty, the best relative error ||prox(noisy) - G*|| / ||G*|| over the grid (per-slice
    thresholds t and, for the LTR, deltas, both as multiples of the largest singular value of noisy's slices),
    with the tubal rank of that best estimate."""
    n3 = noisy.shape[2]
    top = float(slice_spectra(noisy).max())
    norm = float(np.linalg.norm(star))
    out = {}
    for penalty in ("ltr", "tnn"):
        best = {"error": np.inf}
        for t in t_grid:
            for d in deltas if penalty == "ltr" else (1.0,):
                est = prox_tensor(noisy, t * top / (scale * n3), penalty, d * top, scale)
                err = float(np.linalg.norm(est - star)) / norm
                if err < best["error"]:
                    best = {"error": err, "rank": tubal_rank(est, 1e-10), "t": float(t),
                            "delta": float(d) if penalty == "ltr" else float("nan")}  # fmt: skip
        out[penalty] = best
    return out


def claim_numbers(planted: pd.DataFrame, fits: pd.DataFrame, metrics: pd.DataFrame, real: str) -> dict:
    """The claims' numbers: the planted ratio (worst seed and mean), the LTR-rank-1 count, the most ADMM
    iterations of any fit, the real set's mean and worst-fold AP of LTR (and every method's mean AP)."""
    p = planted.pivot(index="seed", columns="penalty", values="error")
    ratio = p["ltr"] / p["tnn"]
    ranks = planted[planted.penalty == "ltr"].set_index("seed")["rank"]
    admm = fits[fits.method.isin(["ltr", "tnn"])]
    m = metrics[metrics.dataset == real]
    ap = m.groupby("method").ap.mean()
    ltr_folds = m[m.method == "ltr"].ap
    return {
        "surrogate_ratio_worst": float(ratio.max()),
        "surrogate_ratio_mean": float(ratio.mean()),
        "surrogate_ratio_seeds": ratio.round(6).tolist(),
        "rank_one_seeds": int((ranks == 1).sum()),
        "planted_seeds": int(len(ranks)),
        "ltr_ranks": ranks.astype(int).tolist(),
        "tnn_ranks": planted[planted.penalty == "tnn"].set_index("seed")["rank"].astype(int).tolist(),
        "max_iterations": int(admm.iterations.max()) if len(admm) else 0,
        "admm_fits": int(admm.fits.sum()) if len(admm) else 0,
        "real_ap": {k: float(v) for k, v in ap.items()},
        "real_ltr_ap": float(ltr_folds.mean()) if len(ltr_folds) else float("nan"),
        "real_ltr_ap_worst_fold": float(ltr_folds.min()) if len(ltr_folds) else float("nan"),
        "real_folds": int(len(ltr_folds)),
    }
