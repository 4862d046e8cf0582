"""Efficient cross-conformal prediction: the controlled CPU reproduction.

Gasparin & Ramdas. "Improving the statistical efficiency of cross-conformal prediction". ICML 2025.
https://github.com/matteogaspa/EffCrossCP

K random folds in the split's order, fold p-values p_k(y) = (1 + #{i in S_k : R_i >= |y - mu_{-k}(x)|})/(m + 1);
mod-cross {pbar > alpha}; e-mod {min_k pbar_k > alpha}; u-mod {pbar/(2 - U) > alpha}; eu-mod
{min(p_1/(2 - U), min_k pbar_k) > alpha}, all with coverage >= 1 - 2 alpha; Vovk's cross-conformal is mod at
alpha' = alpha + (1 - alpha)(K - 1)/(n + K). Sets are computed exactly from the score breakpoints
(models/cross_conformal/core.py).

Stages: prepare (the OLS simulation of Barber et al. 2021 on a grid of p, with each replicate's random folds;
diabetes or a CSV with random train/test splits and folds) -> validate (GX: shapes, finite values, beta's norm,
folds equal-sized with the n mod K surplus left out) -> train (the out-of-fold models: fold residuals and fold
predictions at the test points; split-conformal and leave-one-out fits) -> evaluate (exact sets of every
method, the official grid construction beside them, split / CV+ / jackknife+ / exact full conformal, MAPIE's
CV+; coverage, widths, nesting, the alpha' identity) -> report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from icml25.params import Empty
from icml25.registry import STAGES, Claim, Paper
from icml25.runner import StageContext

CLAIMS = (
    Claim(
        "mod_coverage",
        "minimum over p of mod-cross's empirical coverage (OLS simulation)",
        "Sec. 2 (2 pbar is a valid p-value: coverage >= 1 - 2 alpha)",
        ">=",
        0.8,
    ),
    Claim(
        "variants_coverage",
        "minimum over p and over e-, u-, eu-mod of coverage + 3 Monte-Carlo standard errors",
        "Thms 3.1-3.3 (coverage >= 1 - 2 alpha)",
        ">=",
        0.8,
    ),
    Claim(
        "variants_smaller",
        "mean width of e-mod / mean width of mod-cross at p = 20",
        "Fig. 2, p = 20 (3.77 vs 4.52)",
        "<=",
        0.92,
    ),
    Claim(
        "nesting",
        "test points (all replicates, simulation and real data) where eu is not within e, e not within mod, "
        "or u not within mod",
        "Sec. 3 (C_eu in C_e in C_mod, C_u in C_mod)",
        "==",
        0.0,
    ),
    Claim(
        "vovk_identity",
        "test points where Vovk's set (from p_CC) differs from mod-cross at alpha'",
        "Sec. 2 (alpha' = alpha + (1 - alpha)(K - 1)/(n + K))",
        "==",
        0.0,
    ),
)

#: The paper's OLS simulation at p = 20 (coverage, mean width), read from the official result file (spec 14c).
PAPER_P20 = {
    "mod": (0.951, 4.52),
    "e-mod": (0.898, 3.77),
    "u-mod": (0.903, 3.84),
    "eu-mod": (0.875, 3.56),
    "vovk": (0.916, 3.93),
    "jackknife+": (0.899, 3.68),
}
#: Averages over p in [5, 200] without 75-85 (coverage, mean of per-p median widths), spec 14c.
PAPER_AVERAGE = {
    "mod": (0.960, 9.08),
    "e-mod": (0.886, 7.10),
    "u-mod": (0.931, 7.76),
    "eu-mod": (0.860, 6.68),
    "vovk": (0.939, 8.00),
    "split": (0.903, 9.22),
    "full": (0.924, 12.37),
    "jackknife+": (0.895, 7.95),
    "split_2alpha": (0.806, 7.15),
}
PAPER_P80 = {"mod": 405.0, "vovk": 308.0, "e-mod": 103.0, "eu-mod": 100.0}

CROSS = ("mod", "e-mod", "u-mod", "eu-mod", "vovk", "e-cross", "u-cross", "eu-cross")
GRID_METHODS = ("mod", "e-mod", "u-mod", "eu-mod", "vovk")
VARIANTS = ("e-mod", "u-mod", "eu-mod")
LABEL = {
    "mod": "mod-cross",
    "e-mod": "e-mod",
    "u-mod": "u-mod",
    "eu-mod": "eu-mod",
    "vovk": "Vovk cross",
    "e-cross": "e-cross (alpha')",
    "u-cross": "u-cross (alpha')",
    "eu-cross": "eu-cross (alpha')",
    "split": "split",
    "split_2alpha": "split (2 alpha)",
    "cv+": "CV+ (ours)",
    "jackknife+": "jackknife+",
    "full": "full conformal",
    "mapie_cv+": "MAPIE CV+",
}
MODELS = ("ols", "linear", "ridge", "lasso", "rf")


@dataclass(frozen=True)
class Prepare:
    n: int = field(default=100, metadata={"ge": 4})
    p_grid: tuple[int, ...] = field(default=(5, 20, 60, 80, 120), metadata={"ge": 1})
    replications: int = field(default=300, metadata={"ge": 2})
    n_test: int = field(default=1, metadata={"ge": 1})
    signal: float = field(default=10.0, metadata={"gt": 0.0})
    folds: int = field(default=5, metadata={"ge": 2})
    real_source: Literal["diabetes", "csv"] = "diabetes"
    real_csv: str = "data/cross_conformal/real.csv"
    real_target: str = "target"
    real_splits: int = field(default=20, metadata={"ge": 1})
    real_test: int = field(default=100, metadata={"ge": 1})
    real_folds: tuple[int, ...] = field(default=(5, 10), metadata={"ge": 2})


@dataclass(frozen=True)
class Train:
    real_models: tuple[str, ...] = field(default=("linear", "lasso", "rf"), metadata={"choices": MODELS})
    lasso_alpha: float = field(default=0.1, metadata={"gt": 0.0})
    rf_trees: int = field(default=25, metadata={"ge": 1})
    jackknife: bool = True


@dataclass(frozen=True)
class Evaluate:
    alpha: float = field(default=0.1, metadata={"gt": 0.0, "lt": 0.5})
    sets: Literal["exact", "official_grid"] = "exact"
    grid_points: int = field(default=1000, metadata={"ge": 2})
    unstable_p: tuple[int, ...] = field(default=(75, 85), metadata={"ge": 0})
    unstable_grid_points: int = field(default=300_000, metadata={"ge": 2})
    unstable_grid_factor: float = field(default=1000.0, metadata={"gt": 0.0})
    full_conformal: bool = True
    mapie: bool = True
    mapie_p: tuple[int, ...] = field(default=(20,), metadata={"ge": 1})


PAPER = Paper(
    slug="cross_conformal",
    citation="Gasparin & Ramdas. *Improving the statistical efficiency of cross-conformal prediction*. ICML 2025.",
    url="https://github.com/matteogaspa/EffCrossCP",
    schema={"prepare": Prepare, "validate": Empty, "train": Train, "evaluate": Evaluate, "report": Empty},
    claims=CLAIMS,
)


def _sim_name(p: int) -> str:
    return f"sim_p{p:03d}.npz"


def _load(path) -> dict:
    """Every array of an .npz, read once (indexing an NpzFile re-reads the member each time)."""
    import numpy as np

    with np.load(path) as z:
        return {k: z[k] for k in z.files}


# --------------------------------------------------------------------------------------------------- prepare
@PAPER.stage("prepare")
def prepare(ctx: StageContext) -> None:
    """The OLS simulation per p (X, y with the test rows last, beta, each replicate's fold labels) and the real
    table with its random train/test splits and folds."""
    import numpy as np

    from icml25.errors import UserError
    from models.cross_conformal.data import diabetes_frame, ols_simulation, read_table
    from models.cross_conformal.regressor import check_folds, random_folds

    pp = ctx.params.prepare
    if pp.real_source == "csv":  # check the real table before writing anything
        import pandas as pd

        try:
            _, _, features = read_table(ctx.paths.root / pp.real_csv, pp.real_target)
        except ValueError as exc:
            raise UserError(f"papers.cross_conformal.prepare: {exc}") from None
        frame = pd.read_csv(ctx.paths.root / pp.real_csv)[features + [pp.real_target]]
        frame, name = frame.rename(columns={pp.real_target: "target"}), pp.real_csv
    else:
        frame, name = diabetes_frame(), "diabetes"
    n_train = len(frame) - pp.real_test
    if n_train < 2 * max(pp.real_folds):
        raise UserError(
            f"papers.cross_conformal.prepare: {name} has {len(frame)} rows; real_test = {pp.real_test} leaves "
            f"{n_train} training rows, too few for K = {max(pp.real_folds)} folds"
        )
    try:
        check_folds(pp.n, pp.folds)
    except ValueError as exc:
        raise UserError(f"papers.cross_conformal.prepare: n = {pp.n}, folds = {pp.folds}: {exc}") from None
    for p in pp.p_grid:
        X, y, beta = ols_simulation(ctx.seed, pp.n, p, pp.replications, pp.n_test, pp.signal)
        rng = np.random.default_rng([ctx.seed, p, 1])
        folds = np.stack([random_folds(pp.n, pp.folds, rng) for _ in range(pp.replications)])
        split = np.stack([rng.permutation(pp.n) for _ in range(pp.replications)])  # split conformal's halves
        np.savez(ctx.out / _sim_name(p), X=X, y=y, beta=beta, folds=folds.astype(np.int16), split=split)
    rng = np.random.default_rng([ctx.seed, 2])
    perms = np.stack([rng.permutation(len(frame)) for _ in range(pp.real_splits)])
    real_folds = {
        f"folds_K{K}": np.stack([random_folds(n_train, K, rng) for _ in range(pp.real_splits)]).astype(
            np.int16
        )
        for K in pp.real_folds
    }
    halves = np.stack([rng.permutation(n_train) for _ in range(pp.real_splits)])
    frame.to_csv(ctx.out / "real.csv", index=False)
    np.savez(
        ctx.out / "real_splits.npz",
        train=perms[:, :n_train],
        test=perms[:, n_train:],
        split=halves,
        **real_folds,
    )
    meta = {
        "simulation": {
            "n": pp.n,
            "n_test": pp.n_test,
            "p_grid": list(pp.p_grid),
            "replications": pp.replications,
            "signal": pp.signal,
            "folds": pp.folds,
        },
        "real": {
            "name": name,
            "target": pp.real_target,
            "rows": len(frame),
            "features": len(frame.columns) - 1,
            "n_train": n_train,
            "n_test": pp.real_test,
            "splits": pp.real_splits,
            "folds": list(pp.real_folds),
        },
    }
    (ctx.out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    ctx.log.info(
        "simulation: p in %s, %d replicates; real: %s (%d rows)",
        list(pp.p_grid),
        pp.replications,
        name,
        len(frame),
    )


# --------------------------------------------------------------------------------------------------- validate
def _fold_summary(labels, K: int) -> dict:
    import numpy as np

    sizes = np.bincount(labels[labels >= 0], minlength=K)
    return {
        "fold_spread": int(sizes.max() - sizes.min()),
        "folds_seen": int(np.sum(sizes > 0)),
        "dropped": int(np.sum(labels < 0)),
        "label_ok": int(labels.min() >= -1 and labels.max() < K),
    }


@PAPER.stage("validate")
def validate(ctx: StageContext) -> None:
    """GX suites: per simulated replicate (rows, finiteness, ||beta||^2, equal folds, the surplus left out),
    the real table (finite numbers) and its splits (train and test partition the rows; equal folds)."""
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    meta = json.loads((ctx.paths.prepared / "meta.json").read_text())
    sim, real = meta["simulation"], meta["real"]
    n, K = sim["n"], sim["folds"]
    rows = []
    for p in sim["p_grid"]:
        d = _load(ctx.paths.prepared / _sim_name(p))
        for b in range(d["y"].shape[0]):
            rows.append(
                {
                    "p": p,
                    "rows": int(d["X"].shape[1]),
                    "features_match": int(d["X"].shape[2] == p and d["beta"].shape[1] == p),
                    "finite": int(np.all(np.isfinite(d["X"][b])) and np.all(np.isfinite(d["y"][b]))),
                    "beta_norm2": float(d["beta"][b] @ d["beta"][b]),
                    "split_is_permutation": int(np.array_equal(np.sort(d["split"][b]), np.arange(n))),
                    **_fold_summary(d["folds"][b], K),
                }
            )
    columns = [
        Column("p", values=tuple(sim["p_grid"])),
        Column("rows", values=(n + sim["n_test"],)),
        Column("features_match", values=(1,)),
        Column("finite", values=(1,)),
        Column("beta_norm2", min=sim["signal"] * (1 - 1e-9), max=sim["signal"] * (1 + 1e-9)),
        Column("split_is_permutation", values=(1,)),
        Column("fold_spread", values=(0,)),
        Column("folds_seen", values=(K,)),
        Column("dropped", values=(n % K,)),
        Column("label_ok", values=(1,)),
    ]
    summaries = [validate_frame(pd.DataFrame(rows), "simulation", columns, min_rows=2)]
    frame = pd.read_csv(ctx.paths.prepared / "real.csv")
    columns = [Column(c, min=-1e300, max=1e300) for c in frame.columns]
    summaries.append(validate_frame(frame, "real table", columns, min_rows=real["n_train"] + real["n_test"]))
    s = _load(ctx.paths.prepared / "real_splits.npz")
    rows = []
    for b in range(real["splits"]):
        both = np.concatenate([s["train"][b], s["test"][b]])
        row = {"partition": int(np.array_equal(np.sort(both), np.arange(real["rows"])))}
        row["split_is_permutation"] = int(np.array_equal(np.sort(s["split"][b]), np.arange(real["n_train"])))
        for K_real in real["folds"]:
            f = _fold_summary(s[f"folds_K{K_real}"][b], K_real)
            row.update({f"K{K_real}_{k}": v for k, v in f.items()})
        rows.append(row)
    columns = [Column("partition", values=(1,)), Column("split_is_permutation", values=(1,))]
    for K_real in real["folds"]:
        columns += [
            Column(f"K{K_real}_fold_spread", values=(0,)),
            Column(f"K{K_real}_folds_seen", values=(K_real,)),
            Column(f"K{K_real}_dropped", values=(real["n_train"] % K_real,)),
            Column(f"K{K_real}_label_ok", values=(1,)),
        ]
    summaries.append(validate_frame(pd.DataFrame(rows), "real splits", columns, min_rows=1))
    write_validation(ctx.out, summaries)


# --------------------------------------------------------------------------------------------------- train
def _fit_cross(estimator, X, y, folds, x_test):
    """Fold residuals (K, m) and fold predictions at x_test (T, K) through the library's own estimator."""
    from models.cross_conformal.regressor import CrossConformalRegressor

    K = int(folds.max()) + 1
    ccr = CrossConformalRegressor(estimator, n_folds=K).fit(X, y, folds=folds)
    return ccr.scores_.residuals, ccr.fold_predictions(x_test)


def _fit_split(estimator, X, y, order, x_test):
    """Split conformal's fit on the first half of ``order``, its residuals on the second half."""
    from sklearn.base import clone

    half = len(order) // 2
    fit, cal = order[:half], order[half:]
    model = clone(estimator).fit(X[fit], y[fit])
    return abs(y[cal] - model.predict(X[cal])), model.predict(x_test)


@PAPER.stage("train")
def train(ctx: StageContext) -> None:
    """The out-of-fold models of every replicate / split: the cross-conformal scores (fold residuals, fold
    predictions at the test points), the split-conformal half fits, and (simulation) the n leave-one-out
    min-norm OLS fits of jackknife+."""
    import numpy as np

    from models.cross_conformal.baselines import loo_min_norm
    from models.cross_conformal.regressor import MinNormOLS, make_estimator

    tp = ctx.params.train
    meta = json.loads((ctx.paths.prepared / "meta.json").read_text())
    n = meta["simulation"]["n"]
    (ctx.out / "simulation").mkdir()
    for p in meta["simulation"]["p_grid"]:
        d = _load(ctx.paths.prepared / _sim_name(p))
        out: dict[str, list] = {
            "res": [],
            "mu": [],
            "split_res": [],
            "split_mu": [],
            "loo_res": [],
            "loo_mu": [],
        }
        for b in range(d["y"].shape[0]):
            X, y, Xt = d["X"][b, :n], d["y"][b, :n], d["X"][b, n:]
            res, mu = _fit_cross(MinNormOLS(), X, y, d["folds"][b], Xt)
            out["res"].append(res)
            out["mu"].append(mu)
            sr, sm = _fit_split(MinNormOLS(), X, y, d["split"][b], Xt)
            out["split_res"].append(sr)
            out["split_mu"].append(sm)
            if tp.jackknife:
                lr, lm = loo_min_norm(X, y, Xt)
                out["loo_res"].append(lr)
                out["loo_mu"].append(lm)
        np.savez(ctx.out / "simulation" / _sim_name(p), **{k: np.stack(v) for k, v in out.items() if v})
        ctx.log.info("simulation p = %d: %d replicates fitted", p, d["y"].shape[0])

    real = meta["real"]
    frame = np.loadtxt(ctx.paths.prepared / "real.csv", delimiter=",", skiprows=1, ndmin=2)
    Xall, yall = frame[:, :-1], frame[:, -1]
    s = _load(ctx.paths.prepared / "real_splits.npz")
    (ctx.out / "real").mkdir()
    for name in tp.real_models:
        for K in real["folds"]:
            out = {"res": [], "mu": [], "split_res": [], "split_mu": []}
            for b in range(real["splits"]):
                tr, te = s["train"][b], s["test"][b]
                est = make_estimator(name, seed=ctx.seed + b, lasso_alpha=tp.lasso_alpha, trees=tp.rf_trees)
                res, mu = _fit_cross(est, Xall[tr], yall[tr], s[f"folds_K{K}"][b], Xall[te])
                sr, sm = _fit_split(est, Xall[tr], yall[tr], s["split"][b], Xall[te])
                for k, v in zip(out, (res, mu, sr, sm), strict=True):
                    out[k].append(v)
            np.savez(ctx.out / "real" / f"{name}_K{K}.npz", **{k: np.stack(v) for k, v in out.items()})
            ctx.log.info("real data: %s, K = %d, %d splits fitted", name, K, real["splits"])
    models = {"models": list(tp.real_models), "lasso_alpha": tp.lasso_alpha, "rf_trees": tp.rf_trees}
    (ctx.out / "meta.json").write_text(json.dumps({**meta, **models}, indent=2) + "\n")


# --------------------------------------------------------------------------------------------------- evaluate
def _official_grid(y_train, factor: float, points: int):
    """The official grid: seq(-factor * abs(max(y)), factor * max(abs(y)), length = points). Its lower end is
    -|max y|, not -max|y| (as written in cc_ols)."""
    import numpy as np

    return np.linspace(-factor * abs(np.max(y_train)), factor * np.max(np.abs(y_train)), points)


def _cross_rows(scores, mu, y, alpha, u, grid=None):
    """Rows (method, construction, covered, width, n_intervals) per test point for every cross method, plus the
    nesting and identity counts (exact sets) and the number of boundary ties.

    Coverage is decided by the definition (the counts at the response itself). The exact intervals must agree
    with it except where the response sits on an endpoint to rounding (a "boundary tie": with discrete
    responses, e.g. integer targets and forest predictions, y can equal a breakpoint mu + R)."""
    import numpy as np

    from models.cross_conformal.core import alpha_prime, covered, cross_sets, grid_sets

    identity = {"mod@alpha'": ("mean", alpha_prime(alpha, scores.n, scores.K))}
    cs = cross_sets(scores, mu, alpha, CROSS, u=u, levels=identity)
    rows, ties = [], 0
    for m in CROSS:
        hit = covered(scores, mu, y, alpha, m, u)
        sets = cs.sets[m]
        differ = hit != sets.contains(y)
        if np.any(differ & ~sets.near_boundary(y)):
            raise AssertionError(f"{m}: membership from the counts disagrees with the exact intervals")
        ties += int(differ.sum())
        rows.append(("exact", m, hit, sets.widths(), sets.n_intervals()))
    if grid is not None:
        for m in GRID_METHODS:
            g = grid_sets(scores, mu, grid, alpha, m, u)
            rows.append(("official_grid", m, g.contains(y), g.widths(), g.n_intervals()))
    nest = int(cs.nesting_violations().sum())
    vovk, mod_prime = cs.masks["vovk"], cs.masks["mod@alpha'"]
    ident = int(sum(np.any(a != b, axis=1).sum() for a, b in zip(vovk, mod_prime, strict=True)))
    return rows, nest, ident, ties


def _fold_rows(scores, f, b, y_test, alpha, u, checks: dict, grid=None) -> list:
    """Rows of the cross methods and of split (alpha, 2 alpha) and CV+, for replicate / split b of the fitted
    arrays f; adds the exactness counts to ``checks``."""
    from models.cross_conformal.baselines import cv_plus_from_folds, split_interval

    rows, nest, ident, ties = _cross_rows(scores, f["mu"][b], y_test, alpha, u, grid)
    checks["nesting"] += nest
    checks["identity"] += ident
    checks["boundary_ties"] += ties
    checks["points"] += len(y_test)
    for name, level in (("split", alpha), ("split_2alpha", 2 * alpha)):
        rows.append(_interval_rows(name, *split_interval(f["split_res"][b], f["split_mu"][b], level), y_test))
    rows.append(_interval_rows("cv+", *cv_plus_from_folds(scores.residuals, f["mu"][b], alpha), y_test))
    return rows


def _interval_rows(name, lower, upper, y):
    import numpy as np

    return ("exact", name, (lower <= y) & (y <= upper), upper - lower, np.ones(len(y), int))


def _mapie_cv_plus(estimator, X, y, x_test, K, alpha, seed):
    from mapie.regression import CrossConformalRegressor as MapieCCR
    from sklearn.model_selection import KFold

    peer = MapieCCR(
        estimator, confidence_level=1 - alpha, method="plus", cv=KFold(K, shuffle=True, random_state=seed)
    )
    peer.fit_conformalize(X, y)
    _, pis = peer.predict_interval(x_test, allow_infinite_bounds=True)
    return pis[:, 0, 0], pis[:, 1, 0]


@PAPER.stage("evaluate")
def evaluate(ctx: StageContext) -> None:
    """Sets of every method for every test point; one row per (replicate, test point, method, construction)."""
    import warnings

    import numpy as np
    import pandas as pd

    from models.cross_conformal.baselines import (
        cv_plus,
        full_conformal_linear,
    )
    from models.cross_conformal.core import FoldScores
    from models.cross_conformal.regressor import MinNormOLS, make_estimator

    ev = ctx.params.evaluate
    a = ev.alpha
    meta = json.loads((ctx.paths.trained / "meta.json").read_text())
    sim = meta["simulation"]
    n = sim["n"]
    checks = {
        k: {"nesting": 0, "identity": 0, "points": 0, "boundary_ties": 0} for k in ("simulation", "real")
    }
    records = []

    def add(rows, **keys):
        for construction, method, hit, width, n_int in rows:
            for t in range(len(hit)):
                records.append(
                    {
                        **keys,
                        "t": t,
                        "construction": construction,
                        "method": method,
                        "covered": bool(hit[t]),
                        "width": float(width[t]),
                        "n_intervals": int(n_int[t]),
                    }
                )

    for p in sim["p_grid"]:
        d = _load(ctx.paths.prepared / _sim_name(p))
        f = _load(ctx.paths.trained / "simulation" / _sim_name(p))
        B = d["y"].shape[0]
        u_all = np.random.default_rng([ctx.seed, p, 7]).random((B, sim["n_test"]))
        unstable = ev.unstable_p[0] <= p <= ev.unstable_p[-1]
        for b in range(B):
            y_train, y_test = d["y"][b, :n], d["y"][b, n:]
            scores = FoldScores(f["res"][b])
            grid = _official_grid(
                y_train,
                ev.unstable_grid_factor if unstable else 1.0,
                ev.unstable_grid_points if unstable else ev.grid_points,
            )
            rows = _fold_rows(scores, f, b, y_test, a, u_all[b], checks["simulation"], grid)
            if "loo_res" in f:
                rows.append(
                    _interval_rows("jackknife+", *cv_plus(f["loo_res"][b], f["loo_mu"][b], a), y_test)
                )
            if ev.full_conformal:
                full = full_conformal_linear(d["X"][b, :n], y_train, d["X"][b, n:], a)
                rows.append(("exact", "full", full.contains(y_test), full.widths(), full.n_intervals()))
            if ev.mapie and p in ev.mapie_p:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    lo, hi = _mapie_cv_plus(
                        MinNormOLS(), d["X"][b, :n], y_train, d["X"][b, n:], sim["folds"], a, ctx.seed + b
                    )
                rows.append(_interval_rows("mapie_cv+", lo, hi, y_test))
            add(rows, data="simulation", model="ols", K=sim["folds"], p=p, rep=b)
        ctx.log.info("simulation p = %d evaluated", p)

    real = meta["real"]
    frame = np.loadtxt(ctx.paths.prepared / "real.csv", delimiter=",", skiprows=1, ndmin=2)
    Xall, yall = frame[:, :-1], frame[:, -1]
    s = _load(ctx.paths.prepared / "real_splits.npz")
    for name in meta["models"]:
        for K in real["folds"]:
            f = _load(ctx.paths.trained / "real" / f"{name}_K{K}.npz")
            for b in range(real["splits"]):
                tr, te = s["train"][b], s["test"][b]
                y_test = yall[te]
                u = np.random.default_rng([ctx.seed, K, b, 11]).random(len(te))
                scores = FoldScores(f["res"][b])
                rows = _fold_rows(scores, f, b, y_test, a, u, checks["real"])
                if ev.mapie:
                    est = make_estimator(
                        name, seed=ctx.seed + b, lasso_alpha=meta["lasso_alpha"], trees=meta["rf_trees"]
                    )
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        lo, hi = _mapie_cv_plus(est, Xall[tr], yall[tr], Xall[te], K, a, ctx.seed + b)
                    rows.append(_interval_rows("mapie_cv+", lo, hi, y_test))
                add(rows, data=real["name"], model=name, K=K, p=Xall.shape[1], rep=b)
            ctx.log.info("real data %s, K = %d evaluated", name, K)
    pd.DataFrame(records).to_csv(ctx.out / "sets.csv.gz", index=False)
    checks["alpha"] = a
    checks["sets"] = ev.sets
    (ctx.out / "checks.json").write_text(json.dumps(checks, indent=2) + "\n")
    ctx.log.info(
        "nesting violations %s, identity mismatches %s",
        checks["simulation"]["nesting"] + checks["real"]["nesting"],
        checks["simulation"]["identity"] + checks["real"]["identity"],
    )


# --------------------------------------------------------------------------------------------------- report
@PAPER.stage("report", sections=STAGES)
def report(ctx: StageContext) -> None:
    from icml25.reporting import write_report

    write_report(ctx, PAPER, build_report(ctx))


def _summary(frame, keys):
    """Coverage (mean), its Monte-Carlo SE (between replicates), mean / median / SD-across-replicates width."""
    import numpy as np

    per_rep = frame.groupby(keys + ["rep"], sort=False).agg(cov=("covered", "mean"), width=("width", "mean"))
    g = per_rep.groupby(level=keys, sort=False)
    out = g.agg(
        coverage=("cov", "mean"), sd=("cov", "std"), reps=("cov", "size"), width_sd=("width", "std")
    ).reset_index()
    out["se"] = out["sd"] / np.sqrt(out["reps"])
    widths = frame.groupby(keys, sort=False)["width"]
    out = out.merge(widths.mean().rename("mean_width").reset_index(), on=keys)
    out = out.merge(widths.median().rename("median_width").reset_index(), on=keys)
    return out


def build_report(ctx: StageContext):
    """Claims, tables and figures from data/cross_conformal/evaluated (nothing typed in but the paper's own
    numbers, shown beside ours)."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from icml25.reporting import Report, fmt, table
    from models.cross_conformal.core import alpha_prime

    ev, pp = ctx.params.evaluate, ctx.params.prepare
    sets = pd.read_csv(ctx.paths.evaluated / "sets.csv.gz")
    checks = json.loads((ctx.paths.evaluated / "checks.json").read_text())
    a = checks["alpha"]
    sim_all = sets[sets.data == "simulation"]
    summ = _summary(sim_all, ["construction", "method", "p"])
    use = summ[summ.construction == ev.sets]

    def cell(method: str, p: int, col: str) -> float:
        row = use[(use.method == method) & (use.p == p)]
        return float(row[col].iloc[0]) if len(row) else float("nan")

    ps = sorted(int(p) for p in sim_all.p.unique())
    rep = Report()
    mod_cov = min(cell("mod", p, "coverage") for p in ps)
    var_cov = {(v, p): cell(v, p, "coverage") + 3 * cell(v, p, "se") for v in VARIANTS for p in ps}
    worst = min(var_cov, key=var_cov.get)
    ratio = cell("e-mod", 20, "mean_width") / cell("mod", 20, "mean_width")
    nest = checks["simulation"]["nesting"] + checks["real"]["nesting"]
    ident = checks["simulation"]["identity"] + checks["real"]["identity"]
    rep.values = {
        "mod_coverage": mod_cov,
        "variants_coverage": var_cov[worst],
        "variants_smaller": ratio,
        "nesting": float(nest),
        "vovk_identity": float(ident),
    }
    worst_p = min(ps, key=lambda p: cell("mod", p, "coverage"))
    rep.reasons["mod_coverage"] = (
        f"lowest at p = {worst_p}: {fmt(mod_cov)} ± {fmt(cell('mod', worst_p, 'se'))} (SE); sets: {ev.sets}"
    )
    rep.reasons["variants_coverage"] = (
        f"lowest: {worst[0]} at p = {worst[1]}, coverage {fmt(cell(worst[0], worst[1], 'coverage'))} "
        f"+ 3 x {fmt(cell(worst[0], worst[1], 'se'))}"
    )
    if 20 not in ps:
        rep.reasons["variants_smaller"] = "p = 20 is not in this profile's p grid"
    else:
        rep.reasons["variants_smaller"] = (
            f"{fmt(cell('e-mod', 20, 'mean_width'))} / {fmt(cell('mod', 20, 'mean_width'))} (paper 3.77 / 4.52)"
        )
    npts = checks["simulation"]["points"] + checks["real"]["points"]
    rep.reasons["nesting"] = (
        f"over {npts} test points ({checks['simulation']['points']} simulated, "
        f"{checks['real']['points']} real), exact sets"
    )
    rep.reasons["vovk_identity"] = f"over the same {npts} test points, exact sets"
    ties = checks["simulation"]["boundary_ties"] + checks["real"]["boundary_ties"]

    methods_sim = [m for m in LABEL if m in set(use.method)]

    rep.metrics = {
        "simulation": {
            m: {
                str(p): {
                    "coverage": cell(m, p, "coverage"),
                    "mean_width": cell(m, p, "mean_width"),  # an unbounded set: inf, written "inf"
                    "median_width": cell(m, p, "median_width"),
                }
                for p in ps
            }
            for m in methods_sim
        },
        "nesting_violations": nest,
        "identity_mismatches": ident,
    }
    rep.claims_text = """
- Mod-cross (average of the K fold p-values, thresholded at alpha) covers with probability >= 1 - 2 alpha, and
  Vovk's cross-conformal is mod-cross at alpha' = alpha + (1 - alpha)(K - 1)/(n + K).
- The new e-, u- and eu-variants keep the 1 - 2 alpha guarantee (exchangeable / uniformly-randomised Markov
  inequalities for e-values) while giving smaller sets: C_eu in C_e in C_mod and C_u in C_mod for the same
  folds and U. OLS simulation, p = 20: mod 0.951 / 4.52, e 0.898 / 3.77, u 0.903 / 3.84, eu 0.875 / 3.56
  (coverage / mean width).
- Near the interpolation threshold (p = n (K - 1)/K = 80) the cross-type sets explode (mean width: mod 405,
  cross 308, e 103, eu 100) while split and jackknife+ stay near 7-9.
- In real data e/u/eu shrink mod-cross widths by about 10-25 %; e and eu vary more across splits (fold order).
"""
    # ---- p = 20 beside the paper
    rows20 = []
    for m in [
        "mod",
        "e-mod",
        "u-mod",
        "eu-mod",
        "vovk",
        "e-cross",
        "u-cross",
        "eu-cross",
        "split",
        "split_2alpha",
        "cv+",
        "jackknife+",
        "full",
        "mapie_cv+",
    ]:
        if m not in methods_sim or 20 not in ps:
            continue
        paper = PAPER_P20.get(m)
        rows20.append(
            {
                "method": LABEL[m],
                "coverage": f"{cell(m, 20, 'coverage'):.3f} ± {cell(m, 20, 'se'):.3f}",
                "mean width": fmt(cell(m, 20, "mean_width"), 3),
                "median width": fmt(cell(m, 20, "median_width"), 3),
                "paper coverage": fmt(paper[0], 3) if paper else "",
                "paper mean width": fmt(paper[1], 3) if paper else "",
            }
        )

    # ---- every p
    def shown(x: float) -> str:  # a method not run at this p (MAPIE) is left blank
        return "" if x != x else fmt(x, 3)

    cov_rows, wid_rows = [], []
    for m in methods_sim:
        cov_rows.append(
            {
                "method": LABEL[m],
                **{f"p={p}": shown(cell(m, p, "coverage")) for p in ps},
                "paper (avg)": fmt(PAPER_AVERAGE[m][0], 3) if m in PAPER_AVERAGE else "",
            }
        )
        wid_rows.append(
            {
                "method": LABEL[m],
                **{f"p={p}": shown(cell(m, p, "median_width")) for p in ps},
                "paper (avg)": fmt(PAPER_AVERAGE[m][1], 3) if m in PAPER_AVERAGE else "",
            }
        )
    # ---- Vovk's set against the CV+ interval (Barber et al. 2021: the first lies inside the second)
    ex = sim_all[sim_all.construction == "exact"].set_index(["p", "rep", "t", "method"])["width"]
    vw, cw = ex.xs("vovk", level="method"), ex.xs("cv+", level="method")
    same_width = float(np.mean(np.isclose(vw, cw.loc[vw.index], rtol=1e-9, atol=1e-12)))
    wider = int(np.sum(vw.to_numpy() > cw.loc[vw.index].to_numpy() * (1 + 1e-9) + 1e-12))
    # ---- the blow-up and the grid
    other = "official_grid" if ev.sets == "exact" else "exact"
    alt = summ[summ.construction == other]

    def alt_cell(m, p, col):
        row = alt[(alt.method == m) & (alt.p == p)]
        return float(row[col].iloc[0]) if len(row) else float("nan")

    blow_rows = []
    for m in ["mod", "vovk", "e-mod", "eu-mod", "u-mod", "split", "jackknife+", "cv+", "full"]:
        if m not in methods_sim:
            continue
        blow_rows.append(
            {
                "method": LABEL[m],
                **{f"mean width p={p}": fmt(cell(m, p, "mean_width"), 3) for p in ps},
                **(
                    {f"{other} p={p}": fmt(alt_cell(m, p, "mean_width"), 3) for p in ps if 75 <= p <= 85}
                    if m in GRID_METHODS
                    else {}
                ),
                "paper p=80": fmt(PAPER_P80[m], 3) if m in PAPER_P80 else "",
            }
        )
    # ---- real data
    real_all = sets[(sets.data != "simulation") & (sets.construction == "exact")]
    rsum = _summary(real_all, ["model", "K", "method"])
    real_rows, shrink = [], []
    for (model, K), part in rsum.groupby(["model", "K"], sort=False):
        get = {r.method: r for r in part.itertuples()}
        row = {"model": model, "K": K}
        for m in ["mod", "e-mod", "u-mod", "eu-mod", "vovk", "split", "split_2alpha", "cv+", "mapie_cv+"]:
            if m in get:
                row[LABEL[m]] = (
                    f"{fmt(get[m].coverage, 3)} / {fmt(get[m].mean_width, 3)} ({fmt(get[m].width_sd, 2)})"
                )
        real_rows.append(row)
        shrink.append(
            {
                "model": model,
                "K": K,
                **{LABEL[v]: fmt(1 - get[v].mean_width / get["mod"].mean_width, 3) for v in VARIANTS},
            }
        )
    real_name = real_all.data.iloc[0] if len(real_all) else "real data"
    # ---- MAPIE beside ours
    peer_rows = []
    for p in ps:
        if cell("mapie_cv+", p, "coverage") == cell("mapie_cv+", p, "coverage"):
            peer_rows.append(
                {
                    "data": f"OLS simulation p={p}",
                    "ours CV+": f"{fmt(cell('cv+', p, 'coverage'), 3)} / "
                    f"{fmt(cell('cv+', p, 'mean_width'), 3)}",
                    "MAPIE CV+": f"{fmt(cell('mapie_cv+', p, 'coverage'), 3)} / "
                    f"{fmt(cell('mapie_cv+', p, 'mean_width'), 3)}",
                    "ours mod-cross": f"{fmt(cell('mod', p, 'coverage'), 3)} / "
                    f"{fmt(cell('mod', p, 'mean_width'), 3)}",
                }
            )
    for (model, K), part in rsum.groupby(["model", "K"], sort=False):
        get = {r.method: r for r in part.itertuples()}
        if "mapie_cv+" in get:
            peer_rows.append(
                {
                    "data": f"{real_name} {model} K={K}",
                    "ours CV+": f"{fmt(get['cv+'].coverage, 3)} / {fmt(get['cv+'].mean_width, 3)}",
                    "MAPIE CV+": f"{fmt(get['mapie_cv+'].coverage, 3)} / "
                    f"{fmt(get['mapie_cv+'].mean_width, 3)}",
                    "ours mod-cross": f"{fmt(get['mod'].coverage, 3)} / {fmt(get['mod'].mean_width, 3)}",
                }
            )
    # ---- figures
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for m in ["mod", "e-mod", "u-mod", "eu-mod", "vovk", "split", "jackknife+", "full"]:
        if m not in methods_sim:
            continue
        cov = [cell(m, p, "coverage") for p in ps]
        se = [cell(m, p, "se") for p in ps]
        axes[0].errorbar(ps, cov, yerr=se, marker="o", ms=3, capsize=2, label=LABEL[m])
        wid = [cell(m, p, "median_width") for p in ps]
        axes[1].plot(ps, [w if math.isfinite(w) else np.nan for w in wid], marker="o", ms=3, label=LABEL[m])
    axes[0].axhline(1 - 2 * a, color="k", ls="--", lw=1, label="1 - 2 alpha")
    axes[0].axhline(1 - a, color="grey", ls=":", lw=1, label="1 - alpha")
    axes[0].set_xlabel("p")
    axes[0].set_ylabel("coverage (± 1 SE)")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("p")
    axes[1].set_ylabel("median width")
    axes[1].axvline(pp.n * (pp.folds - 1) / pp.folds, color="grey", ls=":", lw=1)
    axes[0].legend(fontsize=7, ncol=2)
    fig_md = rep.figure(
        "ols_simulation.png",
        fig,
        f"OLS simulation (n = {pp.n}, K = {pp.folds}, alpha = {a}): "
        f"coverage and median width against p; the dotted line marks p = n (K - 1)/K",
    )
    plt.close(fig)

    ap = float(alpha_prime(a, pp.n, pp.folds))
    rep.measured = (
        f"OLS simulation: n = {pp.n}, K = {pp.folds}, alpha = {a} (alpha' = {fmt(ap, 4)}), p in {ps}, "
        f"{pp.replications} replicates per p with {pp.n_test} test point(s) each; sets: **{ev.sets}** "
        "(default: exact, from the score breakpoints). Coverage ± one Monte-Carlo SE (between replicates).\n\n"
        "At p = 20, beside the paper's numbers:\n\n" + table(rows20) + "\n"
        "Coverage at every p (the paper's column: its average over p in [5, 200] without 75-85):\n\n"
        + table(cov_rows)
        + "\nMedian width at every p (paper: mean over p of the per-p median):\n\n"
        + table(wid_rows)
        + "\n"
        f"The interpolation threshold: mean widths (a single replicate can dominate them), with the "
        f"{other.replace('_', ' ')} construction beside the {ev.sets} one for the unstable p "
        f"(official grid there: {ev.unstable_grid_points:,} points on x{ev.unstable_grid_factor:g} the range):\n\n"
        + table(blow_rows)
        + "\n"
        + fig_md
        + "\n"
        f"Real data: {real_name}, {ctx.params.prepare.real_splits} random splits of "
        f"{ctx.params.prepare.real_test} test points; coverage / mean width (SD across splits of the mean "
        "width):\n\n" + table(real_rows) + "\n"
        "Width reduction of the variants relative to mod-cross (1 - width / width of mod):\n\n"
        + table(shrink)
        + f"\nVovk's set has the width of the CV+ interval on {same_width:.1%} of the simulated test points and "
        f"is wider on {wider} (Barber et al. 2021: it lies inside CV+); they differ where the set is not one "
        "interval, mostly near the interpolation threshold.\n"
        + '\nMAPIE 1.6\'s CrossConformalRegressor (CV+, `method="plus"`, its own shuffled KFold) beside our CV+ '
        "and mod-cross (coverage / mean width):\n\n" + table(peer_rows) + "\n"
        f"Exactness checks over {npts} test points: {nest} nesting violations, {ident} differences between "
        "Vovk's set and mod-cross at alpha'. Coverage is decided from the counts at the response itself; the "
        f"exact intervals agree with it everywhere except {ties} (method, test point) pairs where the response "
        "lies on an interval endpoint to rounding (diabetes' integer targets meet breakpoints mu + R).\n"
    )
    rep.differences = f"""
- Sets are computed **exactly** from the 2n breakpoints mu_{{-k}}(x) ± R_i (the paper's default method, with
  no approximation). The official code evaluates the statistics on a y grid (1,000 points on
  [-|max y|, max|y|], 300,000 points on x1000 that range for 75 <= p <= 85), truncates the sets to it, and ends
  each run at the first failing grid point. That construction is the switch `evaluate.sets: official_grid`
  (mod, e, u, eu and Vovk); both are computed every run and the table above shows the other one at the
  unstable p. An empty set counts as width 0 and not covered, as in `cov_int`/`len_int`.
- Scale: {pp.replications} replicates and p in {ps} (the paper: 1,000 replicates, p = 5..200 step 5). Each
  replicate has {pp.n_test} test point(s), as in the official script when 1.
- Real data: scikit-learn's bundled diabetes table (442 x 10) instead of the paper's Abalone / Boston / Crime
  / News / Parkinson / Energy CSVs (not shipped offline; `prepare.real_source: csv` reads any of them from
  disk). When K does not divide the training size, the n mod K surplus points of the random permutation
  calibrate nothing (they still train every fold model); the official code assumes m = n/K is an integer.
- Jackknife+ and CV+ use the order statistics of Barber et al. (the floor(alpha (n + 1))-th and
  ceil((1 - alpha)(n + 1))-th values); the official jackknife+ interpolates with R's type-7 quantile.
- Full conformal is exact for min-norm OLS (roots of the residual comparisons); the official script uses
  conformalInference's 999-point grid. When p >= n + 1 the augmented fit interpolates and the set is the
  whole line (infinite width), so its mean width is infinite there.
- Thresholds at alpha for mod / e / u / eu (guarantee 1 - 2 alpha), as in the OLS and most real-data scripts;
  the e-/u-/eu-cross rows are the variants at alpha' (Abalone's choice, guarantee 1 - 2 alpha').
- U: one per test point, from a stream seeded by the replicate, shared by every candidate y.
- MAPIE's CV+ draws its own folds (KFold shuffled by the replicate's seed), so it is a statistical, not a
  pointwise, comparison with our CV+.
"""
    return rep
