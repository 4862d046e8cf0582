"""Data: the paper's OLS simulation (a replica of Barber et al. 2021) and real regression tables.

OLS simulation, one replicate: beta ~ N(0, I_p) rescaled to ||beta||^2 = signal (10 in the paper),
X ~ N(0, 1)^{(n + n_test) x p}, y = X beta + N(0, 1). The official script draws n + 1 rows and keeps the last as
the single test point (n_test = 1).

Real data: scikit-learn's bundled diabetes table (442 x 10, offline), or any CSV with a numeric target column
(the paper's Abalone, Boston, Crime, ... CSVs, read from disk, never downloaded), checked by icml25.tables.

The prepared files: ``sim_p<p>.npz`` per p of the simulation, and the fold summary the validation checks.
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


def ols_simulation(
    rng: np.random.Generator, n: int, p: int, replications: int, n_test: int = 1, signal: float = 10.0
):
    """B replicates stacked: X (B, n + n_test, p), y (B, n + n_test), beta (B, p), drawn from ``rng``."""
    reps = [ols_replicate(rng, n, p, n_test, signal) for _ in range(replications)]
    return tuple(np.stack(a) for a in zip(*reps, strict=True))


#: The real table's response column: prepare writes it last (train reads the table by position).
REAL_TARGET = "target"
#: The bundled diabetes table's feature columns, in the order prepare writes them (then :data:`REAL_TARGET`).
DIABETES_FEATURES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")


def diabetes_frame():
    """scikit-learn's diabetes table: the :data:`DIABETES_FEATURES` columns, then :data:`REAL_TARGET`."""
    import pandas as pd
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    frame = pd.DataFrame(d.data, columns=d.feature_names)[list(DIABETES_FEATURES)]
    frame[REAL_TARGET] = d.target.astype(float)
    return frame


def read_table(path: Path, target: str):
    """A CSV of numbers as a frame of its feature columns then ``target`` renamed to :data:`REAL_TARGET`, or ValueError
    naming the path and the problem (missing or unreadable file, no such column, a non-numeric column, the
    first row with a NaN or infinite value: icml25.tables)."""
    from icml25.tables import numeric_table, read_csv

    frame = read_csv(path)
    _, _, features = numeric_table(frame, target, str(path))
    return frame[features + [target]].rename(columns={target: REAL_TARGET})


# ------------------------------------------------------------------------------ the prepared files
def sim_name(p: int) -> str:
    """The file of the simulation at dimension p (prepared and trained)."""
    return f"sim_p{p:03d}.npz"


def fold_summary(labels: np.ndarray, K: int) -> dict[str, int]:
    """What the validation checks of one replicate's fold labels: the spread of the fold sizes (0 when equal),
    the number of non-empty folds, the number of points left out (-1) and whether every label is in -1..K-1."""
    sizes = np.bincount(labels[labels >= 0], minlength=K)
    return {
        "fold_spread": int(sizes.max() - sizes.min()),
        "folds_seen": int(np.sum(sizes > 0)),
        "dropped": int(np.sum(labels < 0)),
        "label_ok": int(labels.min() >= -1 and labels.max() < K),
    }
