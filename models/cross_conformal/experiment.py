"""The reproduction's experiment drivers: the random folds and splits of every replicate, the out-of-fold fits,
the sets of every method for every test point, and the summaries the report shows.

One replicate of the OLS simulation (or one random train/test split of the real table) gives:

- train: the K fold models mu_{-k} of the replicate's random folds (fold residuals R (K, m) and fold predictions
  mu_{-k}(x_t) (T, K)), split conformal's half fit (residuals on the other half, predictions at x_t), and
  (simulation) the n leave-one-out min-norm OLS fits of jackknife+;
- evaluate: the exact sets of every cross method (mod, e/u/eu, Vovk's, and the variants at alpha'), the official
  grid construction beside them (simulation), split conformal at alpha and 2 alpha, CV+ from the same fold
  scores, jackknife+, exact full conformal, MAPIE's CV+; one row per (test point, method, construction) with
  coverage, width and number of intervals, and the exactness counts (nesting violations, differences between
  Vovk's set and mod-cross at alpha', boundary ties);
- summaries: coverage (mean over replicates of the per-replicate coverage), its Monte-Carlo SE (the SD between
  replicates / sqrt(replicates)), the mean / median width over test points and the SD across replicates of the
  per-replicate mean width; Vovk's set against the CV+ interval; the variants' width reduction relative to
  mod-cross.

Random draws come from generators the caller passes (the stages seed them), never from a global state.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

#: The cross-conformal methods evaluated exactly (mod and its variants at alpha, Vovk's, the variants at alpha').
CROSS = ("mod", "e-mod", "u-mod", "eu-mod", "vovk", "e-cross", "u-cross", "eu-cross")
#: The methods also built with the official code's grid construction.
GRID_METHODS = ("mod", "e-mod", "u-mod", "eu-mod", "vovk")
#: The new variants, compared with mod-cross.
VARIANTS = ("e-mod", "u-mod", "eu-mod")


# --------------------------------------------------------------------------------------------------- prepare
def chunks(total: int, size: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of at most ``size`` covering range(total), in order: the replicates / splits one task
    of the train and evaluate stages takes (their files do not depend on how the ranges are cut)."""
    return [(a, min(a + size, total)) for a in range(0, total, size)]


def replicate_folds(
    n: int, K: int, replications: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Each replicate's fold labels (replications, n) (int16, -1 for the n mod K surplus) and split conformal's
    random order (replications, n), both drawn from ``rng`` (the folds of every replicate first)."""
    from .regressor import random_folds

    folds = np.stack([random_folds(n, K, rng) for _ in range(replications)])
    split = np.stack([rng.permutation(n) for _ in range(replications)])  # split conformal's halves
    return folds.astype(np.int16), split


def real_splits(
    rows: int, n_train: int, splits: int, folds: tuple[int, ...] | list[int], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """``splits`` random train/test partitions of ``rows`` rows (the first n_train of a permutation train), the
    fold labels of each training set for every K in ``folds`` (``folds_K<K>``) and split conformal's random order
    of each training set, drawn from ``rng`` in that order."""
    from .regressor import random_folds

    perms = np.stack([rng.permutation(rows) for _ in range(splits)])
    labels = {
        f"folds_K{K}": np.stack([random_folds(n_train, K, rng) for _ in range(splits)]).astype(np.int16)
        for K in folds
    }
    halves = np.stack([rng.permutation(n_train) for _ in range(splits)])
    return {"train": perms[:, :n_train], "test": perms[:, n_train:], "split": halves, **labels}


# --------------------------------------------------------------------------------------------------- train
def fit_cross(estimator, X, y, folds, x_test) -> tuple[np.ndarray, np.ndarray]:
    """Fold residuals (K, m) and fold predictions at x_test (T, K) through the library's own estimator, with the
    given fold labels."""
    from .regressor import CrossConformalRegressor

    K = int(folds.max()) + 1
    ccr = CrossConformalRegressor(estimator, n_folds=K).fit(X, y, folds=folds)
    return ccr.scores_.residuals, ccr.fold_predictions(x_test)


def fit_split(estimator, X, y, order, x_test) -> tuple[np.ndarray, np.ndarray]:
    """Split conformal's fit on the first half of ``order``, its residuals on the second half, and its
    predictions at x_test."""
    from sklearn.base import clone

    half = len(order) // 2
    fit, cal = order[:half], order[half:]
    model = clone(estimator).fit(X[fit], y[fit])
    return abs(y[cal] - model.predict(X[cal])), model.predict(x_test)


def train_simulation(d: dict[str, np.ndarray], n: int, jackknife: bool) -> dict[str, np.ndarray]:
    """The fits of every replicate of one prepared simulation ``d`` (X, y with the test rows after the n training
    rows, folds, split), with min-norm OLS: ``res`` (B, K, m) and ``mu`` (B, T, K) of the fold models,
    ``split_res`` / ``split_mu`` of split conformal, and (``jackknife``) ``loo_res`` (B, n) / ``loo_mu``
    (B, T, n) of the leave-one-out fits."""
    from .baselines import loo_min_norm
    from .regressor import MinNormOLS

    out: dict[str, list] = {"res": [], "mu": [], "split_res": [], "split_mu": [], "loo_res": [], "loo_mu": []}
    for b in range(d["y"].shape[0]):
        X, y, Xt = d["X"][b, :n], d["y"][b, :n], d["X"][b, n:]
        res, mu = fit_cross(MinNormOLS(), X, y, d["folds"][b], Xt)
        out["res"].append(res)
        out["mu"].append(mu)
        sr, sm = fit_split(MinNormOLS(), X, y, d["split"][b], Xt)
        out["split_res"].append(sr)
        out["split_mu"].append(sm)
        if jackknife:
            lr, lm = loo_min_norm(X, y, Xt)
            out["loo_res"].append(lr)
            out["loo_mu"].append(lm)
    return {k: np.stack(v) for k, v in out.items() if v}


def train_real(
    X: np.ndarray, y: np.ndarray, s: dict[str, np.ndarray], K: int, estimators: list
) -> dict[str, np.ndarray]:
    """The fits of every split of the real table (X, y) with the splits ``s`` (train, test, split,
    folds_K<K>), split b with ``estimators[b]``: ``res``, ``mu`` (fold models) and ``split_res``, ``split_mu``
    (split conformal), stacked over splits."""
    out: dict[str, list] = {"res": [], "mu": [], "split_res": [], "split_mu": []}
    for b, est in enumerate(estimators):
        tr, te = s["train"][b], s["test"][b]
        res, mu = fit_cross(est, X[tr], y[tr], s[f"folds_K{K}"][b], X[te])
        sr, sm = fit_split(est, X[tr], y[tr], s["split"][b], X[te])
        for k, v in zip(out, (res, mu, sr, sm), strict=True):
            out[k].append(v)
    return {k: np.stack(v) for k, v in out.items()}


# --------------------------------------------------------------------------------------------------- evaluate
def official_grid(y_train: np.ndarray, factor: float, points: int) -> np.ndarray:
    """The official grid: seq(-factor * abs(max(y)), factor * max(abs(y)), length = points). Its lower end is
    -|max y|, not -max|y| (as written in cc_ols)."""
    return np.linspace(-factor * abs(np.max(y_train)), factor * np.max(np.abs(y_train)), points)


def new_checks() -> dict[str, int]:
    """The exactness counts of one data set, zero: nesting violations, identity mismatches, test points, ties."""
    return {"nesting": 0, "identity": 0, "points": 0, "boundary_ties": 0}


def cross_rows(scores, mu, y, alpha: float, u, grid=None) -> tuple[list, int, int, int]:
    """Rows (construction, method, covered, width, n_intervals) per test point for every cross method, plus the
    nesting and identity counts (exact sets) and the number of boundary ties.

    Coverage is decided by the definition (the counts at the response itself). The exact intervals must agree
    with it except where the response sits on an endpoint to rounding (a "boundary tie": with discrete
    responses, e.g. integer targets and forest predictions, y can equal a breakpoint mu + R)."""
    from .core import alpha_prime, covered, cross_sets, grid_sets

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


def interval_rows(name: str, lower, upper, y) -> tuple:
    """The row of an interval method [lower, upper] (one interval per test point, exact)."""
    return ("exact", name, (lower <= y) & (y <= upper), upper - lower, np.ones(len(y), int))


def fold_rows(
    scores, f: dict[str, np.ndarray], b: int, y_test, alpha: float, u, checks: dict, grid=None
) -> list:
    """Rows of the cross methods and of split (alpha, 2 alpha) and CV+, for replicate / split b of the fitted
    arrays f; adds the exactness counts to ``checks``."""
    from .baselines import cv_plus_from_folds, split_interval

    rows, nest, ident, ties = cross_rows(scores, f["mu"][b], y_test, alpha, u, grid)
    checks["nesting"] += nest
    checks["identity"] += ident
    checks["boundary_ties"] += ties
    checks["points"] += len(y_test)
    for name, level in (("split", alpha), ("split_2alpha", 2 * alpha)):
        rows.append(interval_rows(name, *split_interval(f["split_res"][b], f["split_mu"][b], level), y_test))
    rows.append(interval_rows("cv+", *cv_plus_from_folds(scores.residuals, f["mu"][b], alpha), y_test))
    return rows


def mapie_cv_plus(estimator, X, y, x_test, K: int, alpha: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """MAPIE's CV+ interval (CrossConformalRegressor, ``method="plus"``, KFold(K) shuffled by ``seed``) at
    x_test; its warnings are silenced."""
    from mapie.regression import CrossConformalRegressor as MapieCCR
    from sklearn.model_selection import KFold

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = MapieCCR(
            estimator, confidence_level=1 - alpha, method="plus", cv=KFold(K, shuffle=True, random_state=seed)
        )
        peer.fit_conformalize(X, y)
        _, pis = peer.predict_interval(x_test, allow_infinite_bounds=True)
    return pis[:, 0, 0], pis[:, 1, 0]


def records(rows: list, **keys: Any) -> list[dict[str, Any]]:
    """One record per (row, test point): ``keys``, then t, construction, method, covered, width, n_intervals."""
    out = []
    for construction, method, hit, width, n_int in rows:
        for t in range(len(hit)):
            out.append(
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
    return out


def evaluate_simulation(
    d: dict[str, np.ndarray],
    f: dict[str, np.ndarray],
    *,
    n: int,
    p: int,
    K: int,
    alpha: float,
    u: np.ndarray,
    grid_factor: float,
    grid_points: int,
    full_conformal: bool,
    mapie_seeds: list[int] | None,
    checks: dict,
) -> list[dict[str, Any]]:
    """The records of every replicate of the simulation at dimension p: prepared ``d``, trained ``f``, U of
    replicate b in ``u[b]``; the official grid (``grid_factor``, ``grid_points``) beside the exact cross sets;
    jackknife+ when trained; exact full conformal when asked; MAPIE's CV+ (min-norm OLS, KFold seeded by
    ``mapie_seeds[b]``) when given. Adds the exactness counts to ``checks``."""
    from .baselines import cv_plus, full_conformal_linear
    from .core import FoldScores
    from .regressor import MinNormOLS

    out = []
    for b in range(d["y"].shape[0]):
        y_train, y_test = d["y"][b, :n], d["y"][b, n:]
        scores = FoldScores(f["res"][b])
        grid = official_grid(y_train, grid_factor, grid_points)
        rows = fold_rows(scores, f, b, y_test, alpha, u[b], checks, grid)
        if "loo_res" in f:
            rows.append(interval_rows("jackknife+", *cv_plus(f["loo_res"][b], f["loo_mu"][b], alpha), y_test))
        if full_conformal:
            full = full_conformal_linear(d["X"][b, :n], y_train, d["X"][b, n:], alpha)
            rows.append(("exact", "full", full.contains(y_test), full.widths(), full.n_intervals()))
        if mapie_seeds is not None:
            lo, hi = mapie_cv_plus(
                MinNormOLS(), d["X"][b, :n], y_train, d["X"][b, n:], K, alpha, mapie_seeds[b]
            )
            rows.append(interval_rows("mapie_cv+", lo, hi, y_test))
        out += records(rows, data="simulation", model="ols", K=K, p=p, rep=b)
    return out


def evaluate_real(
    X: np.ndarray,
    y: np.ndarray,
    s: dict[str, np.ndarray],
    f: dict[str, np.ndarray],
    *,
    data: str,
    model: str,
    K: int,
    alpha: float,
    u: list[np.ndarray],
    mapie: list[tuple[Any, int]] | None,
    checks: dict,
) -> list[dict[str, Any]]:
    """The records of every split of the real table (X, y) for one model and K: splits ``s``, trained ``f``, U of
    split b in ``u[b]``; MAPIE's CV+ with ``mapie[b]`` = (estimator, KFold seed) when given. Adds the exactness
    counts to ``checks``."""
    from .core import FoldScores

    out = []
    for b in range(len(u)):
        tr, te = s["train"][b], s["test"][b]
        y_test = y[te]
        scores = FoldScores(f["res"][b])
        rows = fold_rows(scores, f, b, y_test, alpha, u[b], checks)
        if mapie is not None:
            est, seed = mapie[b]
            lo, hi = mapie_cv_plus(est, X[tr], y[tr], X[te], K, alpha, seed)
            rows.append(interval_rows("mapie_cv+", lo, hi, y_test))
        out += records(rows, data=data, model=model, K=K, p=X.shape[1], rep=b)
    return out


# --------------------------------------------------------------------------------------------------- summaries
def summary(frame, keys: list[str]):
    """Per ``keys``: coverage (mean over replicates of the per-replicate coverage), its Monte-Carlo SE (SD between
    replicates / sqrt(replicates)), the SD across replicates of the per-replicate mean width (``width_sd``), and
    the mean / median width over all test points."""
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


def vovk_against_cv_plus(sim) -> dict[str, float | int]:
    """Vovk's set against the CV+ interval on the same folds (exact sets of the simulation; Barber et al. 2021:
    the first lies inside the second): the fraction of test points where the widths agree (relative 1e-9) and
    the number where Vovk's set is wider."""
    ex = sim[sim.construction == "exact"].set_index(["p", "rep", "t", "method"])["width"]
    vw, cw = ex.xs("vovk", level="method"), ex.xs("cv+", level="method")
    same_width = float(np.mean(np.isclose(vw, cw.loc[vw.index], rtol=1e-9, atol=1e-12)))
    wider = int(np.sum(vw.to_numpy() > cw.loc[vw.index].to_numpy() * (1 + 1e-9) + 1e-12))
    return {"same_width": same_width, "wider": wider}


def shrink(real_summary) -> list[dict[str, Any]]:
    """Per (model, K) of the real-data summary: each variant's width reduction relative to mod-cross,
    1 - mean width / mean width of mod."""
    rows = []
    for (model, K), part in real_summary.groupby(["model", "K"], sort=False):
        get = {r.method: r for r in part.itertuples()}
        rows.append(
            {"model": model, "K": K, **{v: 1 - get[v].mean_width / get["mod"].mean_width for v in VARIANTS}}
        )
    return rows


def summaries(sets) -> dict[str, Any]:
    """What the report shows, from the evaluated sets (one row per test point, method and construction):
    ``simulation`` (summary by construction, method, p), ``real`` (exact sets, by model, K, method),
    ``shrink`` (rows), ``vovk_vs_cv_plus`` and ``real_name`` (the real table's name)."""
    sim = sets[sets.data == "simulation"]
    real = sets[(sets.data != "simulation") & (sets.construction == "exact")]
    real_summary = summary(real, ["model", "K", "method"])
    return {
        "simulation": summary(sim, ["construction", "method", "p"]),
        "real": real_summary,
        "shrink": shrink(real_summary),
        "vovk_vs_cv_plus": vovk_against_cv_plus(sim),
        "real_name": str(real.data.iloc[0]) if len(real) else "real data",
    }


# --------------------------------------------------------------------------------------------------- the folder
def write_evaluated(
    out, records_: list[dict[str, Any]], checks: dict, *, alpha: float, sets: str, n: int, K: int
) -> dict[str, Any]:
    """What evaluate writes into ``out`` (the files the claims read): sets.csv.gz (``records_``, one row per test
    point, method and construction; no timestamp in the gzip header, so the same sets give the same bytes),
    checks.json (the exactness counts ``checks`` of "simulation" and "real", with ``alpha`` and the shown
    construction ``sets``), and the summaries of the sets as written: summary_simulation.csv, summary_real.csv,
    shrink.csv and summary.json (alpha, alpha' for the simulation's ``n`` and ``K``, the real table's name, Vovk's
    set against CV+). Returns the summaries. The stage and the stub tests write through this one function."""
    from pathlib import Path

    import pandas as pd

    from icml25.io import write_json

    from .core import alpha_prime

    out = Path(out)
    pd.DataFrame(records_).to_csv(
        out / "sets.csv.gz", index=False, compression={"method": "gzip", "mtime": 0}
    )
    write_json(out / "checks.json", {**checks, "alpha": alpha, "sets": sets})
    summ = summaries(pd.read_csv(out / "sets.csv.gz"))
    summ["simulation"].to_csv(out / "summary_simulation.csv", index=False)
    summ["real"].to_csv(out / "summary_real.csv", index=False)
    pd.DataFrame(summ["shrink"]).to_csv(out / "shrink.csv", index=False)
    write_json(
        out / "summary.json",
        {
            "alpha": alpha,
            "alpha_prime": float(alpha_prime(alpha, n, K)),
            "real_name": summ["real_name"],
            "vovk_vs_cv_plus": summ["vovk_vs_cv_plus"],
        },
    )
    return summ
