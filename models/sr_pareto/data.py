"""Data sets for the APO fronts: planted expressions, scikit-learn's Friedman generators and diabetes, and
SRBench's PMLB files read from a local folder (never downloaded).

Planted sets are built so that the *standardised* target is exactly an expression of the planted length (the
search z-scores y, so a planted form must absorb an affine map of y):

- ``planted_len3``: y = x0 - x1 with sample corr(x0, x1) = 1/2 exactly, so var(y) = 1, mean 0: ``Sub(x0,x1)``;
- ``planted_len5``: y = x0 x1 with x0, x1 exactly orthogonal, so mean(y) = 0 and y_z = c x0 x1:
  ``Mul(Mul(x0,x1),c)``;
- ``planted_len7_chain``: y = 1.7 x0 x1 + 0.3 with corr(x0, x1) = 0.8 exactly: ``Add(Mul(Mul(x0,x1),c),c)``,
  c0 a b + c1, the shape a Karva head of length 3 cannot encode;
- ``planted_len7_pow``: y = 0.8 |x0|^x1 - 0.5: ``Add(Mul(Pow(x0,x1),c),c)`` (also out of Karva L = 3's reach);
- ``planted_len7_sum``: y = 1.3 x0 - 0.6 x1: ``Add(Mul(c,x0),Mul(c,x1))`` (the balanced shape Karva L = 3 reaches);
- ``*_noisy``: the same plus Gaussian noise of 10% of y's standard deviation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

TARGET = "target"


@dataclass(frozen=True)
class Planted:
    expression: str  # canonical form (grammar.show) of the standardised target
    length: int
    karva3: bool  # reachable by a Karva head of length 3


def _orthonormal(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """d columns with mean exactly 0, variance exactly 1 and zero sample correlation."""
    Z = rng.standard_normal((n, d))
    Z -= Z.mean(axis=0)
    Q, _ = np.linalg.qr(Z)
    return Q * np.sqrt(n)


def _len3(rng, n):
    Q = _orthonormal(rng, n, 2)
    x0, x1 = Q[:, 0], 0.5 * Q[:, 0] + np.sqrt(0.75) * Q[:, 1]
    return np.stack([x0, x1], axis=1), x0 - x1


def _standard(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Columns with sample mean 0 and variance 1 exactly (the search standardises X: no change)."""
    X = rng.standard_normal((n, d))
    return (X - X.mean(0)) / X.std(0)


def _len5(rng, n):
    """x1 is orthogonal to x0 but depends on it (x0^2 - 1 made orthogonal), so std(x0 x1) is far from 1 and
    the unscaled Mul(x0,x1) at length 3 is a poor fit."""
    z = rng.standard_normal(n)
    Z = np.stack([z, z**2 - 1 + 0.3 * rng.standard_normal(n)], axis=1)
    Z -= Z.mean(axis=0)
    Q, _ = np.linalg.qr(Z)
    Q = Q * np.sqrt(n)
    return Q, Q[:, 0] * Q[:, 1]


def _chain(rng, n):
    """Sample correlation 0.8 exactly: with independent features sd(x0 x1) is close to 1, so y_z ~ x0 x1 - mean
    and Karva L = 3's scale-free balanced forms (e.g. Mul(Sub(x0,c),Sub(x1,c))) come within 3e-4 of R^2 = 1;
    with rho = 0.8, sd(x0 x1) = sqrt(1 + rho^2) and the required scale 1 / (1.7 sd) is far from 1."""
    Q = _orthonormal(rng, n, 2)
    rho = 0.8
    X = np.stack([Q[:, 0], rho * Q[:, 0] + np.sqrt(1 - rho**2) * Q[:, 1]], axis=1)
    return X, 1.7 * X[:, 0] * X[:, 1] + 0.3


def _pow(rng, n):
    X = _standard(rng, n, 2)
    return X, 0.8 * np.abs(X[:, 0]) ** X[:, 1] - 0.5


def _sum(rng, n):
    X = _standard(rng, n, 2)
    return X, 1.3 * X[:, 0] - 0.6 * X[:, 1]


PLANTED: dict[str, tuple[Callable, Planted]] = {
    "planted_len3": (_len3, Planted("Sub(x0,x1)", 3, True)),
    "planted_len5": (_len5, Planted("Mul(Mul(x0,x1),c)", 5, True)),
    "planted_len7_chain": (_chain, Planted("Add(Mul(Mul(x0,x1),c),c)", 7, False)),
    "planted_len7_pow": (_pow, Planted("Add(Mul(Pow(x0,x1),c),c)", 7, False)),
    "planted_len7_sum": (_sum, Planted("Add(Mul(c,x0),Mul(c,x1))", 7, True)),
}


def planted(name: str, n: int, seed: int) -> pd.DataFrame:
    """A planted set of ``n`` rows (features x0, x1 and ``target``); ``*_noisy`` adds Gaussian noise of 10% of
    y's standard deviation, drawn from its own stream (``icml25.random``, "planted_noise")."""
    from icml25 import random

    base = name.removesuffix("_noisy")
    X, y = PLANTED[base][0](np.random.default_rng(seed), n)
    if name.endswith("_noisy"):
        y = y + 0.1 * y.std() * random.rng(seed, "planted_noise").standard_normal(n)
    return _frame(X, y)


def _frame(X: np.ndarray, y: np.ndarray, names: list[str] | None = None) -> pd.DataFrame:
    names = names or [f"x{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    frame[TARGET] = y
    return frame


def friedman(which: int, n: int, features: list[int], seed: int) -> pd.DataFrame:
    """scikit-learn's make_friedman{1,2,3} (noise-free), restricted to a fixed subset of its features."""
    from sklearn import datasets

    maker = {1: datasets.make_friedman1, 2: datasets.make_friedman2, 3: datasets.make_friedman3}[which]
    X, y = (
        maker(n_samples=n, random_state=seed)
        if which > 1
        else maker(n_samples=n, n_features=5, random_state=seed)
    )
    return _frame(X[:, features], y, [f"x{i}" for i in features])


DIABETES_FEATURES = ("bmi", "bp", "s5")


def diabetes(features: tuple[str, ...] = DIABETES_FEATURES) -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    d = load_diabetes(as_frame=True)
    return _frame(d.data[list(features)].to_numpy(), d.target.to_numpy(), list(features))


def pmlb(root: Path, name: str) -> pd.DataFrame:
    """A PMLB data set from ``root/<name>/<name>.tsv.gz`` (PMLB's own layout; its ``target`` column is y)."""
    path = Path(root) / name / f"{name}.tsv.gz"
    if not path.exists():
        raise FileNotFoundError(f"PMLB data set {name!r} not found at {path} (no downloads here)")
    frame = pd.read_csv(path, sep="\t", compression="gzip")
    if TARGET not in frame.columns:
        raise ValueError(f"{path}: no 'target' column")
    return frame


def builtin(name: str, n_rows: int, friedman_features: list[int], seed: int) -> pd.DataFrame:
    """One builtin data set by name: ``planted_*`` (with the seed), ``friedman1``-``friedman3`` (``n_rows`` rows,
    the given feature subset, with the seed) or ``diabetes`` (bmi, bp, s5; fixed)."""
    if name.startswith("planted"):
        return planted(name, n_rows, seed)
    if name.startswith("friedman"):
        return friedman(int(name[-1]), n_rows, list(friedman_features), seed)
    return diabetes()


def planted_info(name: str) -> dict | None:
    """The planted expression of a noise-free planted set (canonical form, length, reachable by Karva L = 3), as
    prepare's meta.json records it; None for noisy, Friedman, diabetes and PMLB sets."""
    base = name.removesuffix("_noisy")
    if base not in PLANTED or name.endswith("_noisy"):
        return None
    plant = PLANTED[base][1]
    return {"expression": plant.expression, "length": plant.length, "karva3": plant.karva3}


def read_prepared(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """A prepared data set (one CSV: features and ``target``) as (X rows x features, y, feature names): every
    column numeric and finite, none constant, at least 2 rows (ValueError naming the file otherwise)."""
    from icml25.tables import numeric_table, read_csv

    path = Path(path)
    return numeric_table(read_csv(path), TARGET, path.name, min_rows=2, reject_constant=True)
