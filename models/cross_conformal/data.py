"""Data: the paper's OLS simulation (a replica of Barber et al. 2021) and real regression tables.

OLS simulation, one replicate: beta ~ N(0, I_p) rescaled to ||beta||^2 = signal (10 in the paper),
X ~ N(0, 1)^{(n + n_test) x p}, y = X beta + N(0, 1). The official script draws n + 1 rows and keeps the last as
the single test point (n_test = 1).

Real data: scikit-learn's bundled diabetes table (442 x 10, offline), or any CSV with a numeric target column
(the paper's Abalone, Boston, Crime, ... CSVs, read from disk, never downloaded).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def ols_replicate(rng: np.random.Generator, n: int, p: int, n_test: int = 1, signal: float = 10.0):
    """One replicate: (X (n + n_test, p), y (n + n_test,), beta (p,)); the last n_test rows are the test set."""
    beta = rng.standard_normal(p)
    beta *= np.sqrt(signal) / np.linalg.norm(beta)
    X = rng.standard_normal((n + n_test, p))
    y = X @ beta + rng.standard_normal(n + n_test)
    return X, y, beta


def ols_simulation(seed: int, n: int, p: int, replications: int, n_test: int = 1, signal: float = 10.0):
    """B replicates stacked: X (B, n + n_test, p), y (B, n + n_test), beta (B, p); seeded by (seed, p)."""
    rng = np.random.default_rng([seed, p])
    reps = [ols_replicate(rng, n, p, n_test, signal) for _ in range(replications)]
    return tuple(np.stack(a) for a in zip(*reps, strict=True))


def diabetes_frame():
    import pandas as pd
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    frame = pd.DataFrame(d.data, columns=d.feature_names)
    frame["target"] = d.target.astype(float)
    return frame


def read_table(path: Path, target: str):
    """A CSV's numeric columns as (X, y, feature names), with one-line errors that name the problem."""
    from icml25.tables import read_csv

    return check_table(read_csv(path), target, str(path))


def check_table(frame, target: str, where: str = "table", allow_missing_target: bool = False):
    import pandas as pd

    if target not in frame.columns:
        raise ValueError(f"{where}: no column {target!r}; columns are {', '.join(map(str, frame.columns))}")
    features = [c for c in frame.columns if c != target]
    if not features:
        raise ValueError(f"{where}: no feature columns besides the target {target!r}")
    bad = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        raise ValueError(f"{where}: column {bad[0]!r} is not numeric")
    X = frame[features].to_numpy(float)
    rows = np.flatnonzero(~np.all(np.isfinite(X), axis=1))
    if len(rows):
        raise ValueError(
            f"{where}: NaN or infinite feature values in {len(rows)} rows (first: row {rows[0] + 1})"
        )
    y = frame[target].to_numpy(float)
    if not allow_missing_target and not np.all(np.isfinite(y)):
        first = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"{where}: NaN or infinite target {target!r} in row {first + 1}")
    return X, y, features
