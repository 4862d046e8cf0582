"""Speed and memory of exact cross-conformal sets (run by hand: python benchmarks/cross_conformal.py).

The issue's workload: n = 100 training points, p = 20 (the OLS simulation), K = 5, 1,000 test points; the same
model (min-norm OLS) and K for MAPIE 1.6's CrossConformalRegressor (CV+, the peer; for reference the issue
quotes about 30 ms for it on these machines). Each timing is fit + sets for all test points, the median of 7
calls. Also: n = 1,000 (2,000 breakpoints per test point), the official grid construction vectorised, the
peak memory each call allocates, and the stage times of the last quick-profile `dvc repro` (from
.dvc/tmp/icml25-timing, written by the runner).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._common import stage_times, stage_times_text, timed, write  # noqa: E402
from models.cross_conformal import METHODS, CrossConformalRegressor, MinNormOLS  # noqa: E402
from models.cross_conformal.baselines import cv_plus_from_folds  # noqa: E402
from models.cross_conformal.core import grid_sets  # noqa: E402
from models.cross_conformal.data import ols_replicate  # noqa: E402

T = 1000


def workload(n: int, p: int = 20):
    X, y, _ = ols_replicate(np.random.default_rng(0), n, p, n_test=T)
    return X[:n], y[:n], X[n:]


def ours(X, y, Xt, methods):
    ccr = CrossConformalRegressor(MinNormOLS(), n_folds=5, random_state=0).fit(X, y)
    return ccr.predict_sets(Xt, 0.1, methods)


def ours_cv_plus(X, y, Xt):
    ccr = CrossConformalRegressor(MinNormOLS(), n_folds=5, random_state=0).fit(X, y)
    return cv_plus_from_folds(ccr.scores_.residuals, ccr.fold_predictions(Xt), 0.1)


def ours_grid(X, y, Xt):
    ccr = CrossConformalRegressor(MinNormOLS(), n_folds=5, random_state=0).fit(X, y)
    grid = np.linspace(-np.max(np.abs(y)), np.max(np.abs(y)), 1000)
    return grid_sets(ccr.scores_, ccr.fold_predictions(Xt), grid, 0.1, "e-mod", ccr.draw_u(len(Xt)))


def mapie(X, y, Xt):
    from mapie.regression import CrossConformalRegressor as Peer
    from sklearn.model_selection import KFold

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = Peer(
            MinNormOLS(), confidence_level=0.9, method="plus", cv=KFold(5, shuffle=True, random_state=0)
        )
        peer.fit_conformalize(X, y)
        return peer.predict_interval(Xt)


CASES = {
    "ours: exact e-mod sets": lambda X, y, Xt: ours(X, y, Xt, ["e-mod"]),
    "ours: exact sets, all 8 methods": lambda X, y, Xt: ours(X, y, Xt, list(METHODS)),
    "ours: CV+ intervals from the same fold scores": ours_cv_plus,
    "ours: official 1,000-point grid, e-mod": ours_grid,
    "MAPIE 1.6 CrossConformalRegressor (CV+)": mapie,
}


def traced_peak_mb(fn, *args) -> float:
    """Peak of the memory allocated while fn runs (numpy arrays included: numpy reports to tracemalloc)."""
    import tracemalloc

    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    rows = []
    for n in (100, 1000):
        X, y, Xt = workload(n)
        mapie_s = None
        results = {}
        for case, fn in CASES.items():
            fn(X, y, Xt)  # warm-up (imports, caches)
            median, best = timed(lambda fn=fn, X=X, y=y, Xt=Xt: fn(X, y, Xt), repeat=7)
            results[case] = (median, best)
            if case.startswith("MAPIE"):
                mapie_s = median
        for case, (median, best) in results.items():
            peak = traced_peak_mb(CASES[case], X, y, Xt)
            rows.append(
                {
                    "workload": f"n={n}, p=20, K=5, {T} test points",
                    "method": case,
                    "median ms": round(1000 * median, 1),
                    "best ms": round(1000 * best, 1),
                    "speed vs MAPIE": f"{mapie_s / median:.2f}x" if mapie_s else "",
                    "peak allocated MiB": f"{peak:.1f}",
                }
            )
            print(rows[-1], flush=True)
    stages = stage_times("cross_conformal")
    if stages:
        rows.append(
            {
                "workload": "quick profile, `dvc repro` (last run's stage wall times)",
                "method": stage_times_text(stages),
                "median ms": round(1000 * sum(stages.values())),
                "best ms": "",
                "speed vs MAPIE": "",
                "peak allocated MiB": "",
            }
        )
    write(
        "cross_conformal",
        ["workload", "method", "median ms", "best ms", "speed vs MAPIE", "peak allocated MiB"],
        rows,
        note="Ours: fit of the K = 5 fold models plus the exact sets (unions of intervals from the 2n score "
        "breakpoints, no grid) of every test point. MAPIE's CV+ is an interval, not the cross-conformal set: "
        "it is the natural peer (Vovk's set lies inside it) but computes less. The issue's reference for "
        "MAPIE's CV+ at n = 100 is about 30 ms. Memory: the peak of what the call allocates (tracemalloc, numpy "
        "arrays included); the interpreter and its imports are not counted.",
    )


if __name__ == "__main__":
    main()
