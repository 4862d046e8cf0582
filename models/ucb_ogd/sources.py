"""Data sources: label-shifted digits, a user's folder of CSV files, and the pre-drawn sample streams.

``digits`` (scikit-learn's bundled 8x8 digits, pixels / 16 in [0, 1]): K = 5 label-shifted sources

    S1 = {0, 1}, S2 = {4, 7}, S3 = {2, 6}, S4 = {3, 5, 8}, S5 = {8, 9, 5, 3},  pixel noise sigma = 0, .1, .2, .3, .3.

Each class's images are split at random 70 / 30 (ours: per seed, stratified by class); source k's train pool is
the train images of its classes and its test pool the test images of its classes, so train and test pools are
disjoint (the test pools of S4 and S5 share the images of 3, 5 and 8). A draw from source k is an image drawn with
replacement from its train pool plus fresh Gaussian noise of s.d. sigma_k on every pixel, clipped to [0, 1]; the
test pool's noise is drawn once (ours) and fixed.

``csv`` (a user's data): one CSV file per source in a folder (sources in file-name order), a ``label`` column and
numeric feature columns, the same in every file. Labels are mapped to 0..C-1 in sorted order of their union.
Features are min-max scaled to [0, 1] on the union of the train rows and clipped (ours: it gives every source
the same bound ||x~|| <= sqrt(d + 1) the step size uses); each file is split 70 / 30 at random (at least one row
on each side), no noise unless given.

Streams (the "same sample streams" every method sees): for a seed, source k has a pre-drawn sequence of T draws
(pool index and noise); a method consumes source k's stream in order whenever it picks k, so two methods differ
only in which sources they pick (the entropy sampler reads candidate t of every stream at round t, see
``models.ucb_ogd.sampler``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .learners import augment

DIGIT_CLASSES: tuple[tuple[int, ...], ...] = ((0, 1), (4, 7), (2, 6), (3, 5, 8), (8, 9, 5, 3))
DIGIT_NOISE: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.3)
TRAIN_FRACTION = 0.7


@dataclass
class SourcePools:
    """Per source: the clean train pool (features in [0, 1], labels in 0..C-1), the fixed noisy test pool and the
    pixel noise of its draws."""

    names: list[str]
    train_X: list[np.ndarray]
    train_y: list[np.ndarray]
    test_X: list[np.ndarray]
    test_y: list[np.ndarray]
    noise: np.ndarray
    n_classes: int
    classes: list[tuple[int, ...]] = field(default_factory=list)

    @property
    def n_sources(self) -> int:
        return len(self.names)

    @property
    def n_features(self) -> int:
        return self.train_X[0].shape[1]

    @property
    def x_bound(self) -> float:
        """max ||x~|| for features in [0, 1]^d and the bias: sqrt(d + 1)."""
        return float(np.sqrt(self.n_features + 1))

    def draw(self, k: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n draws of source k: pool rows with replacement plus noise sigma_k, clipped to [0, 1]."""
        idx = rng.integers(len(self.train_y[k]), size=n)
        X = self.train_X[k][idx]
        if self.noise[k] > 0:
            X = np.clip(X + self.noise[k] * rng.standard_normal(X.shape), 0.0, 1.0)
        return X, self.train_y[k][idx]

    def streams(self, horizon: int, rng: np.random.Generator) -> Streams:
        """T pre-drawn draws per source (augmented features, labels), from independent children of ``rng``."""
        draws = [self.draw(k, horizon, r) for k, r in enumerate(rng.spawn(self.n_sources))]
        return Streams([augment(X) for X, _ in draws], [y for _, y in draws])

    def validation(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The oracle's validation subset: min(size, pool) distinct train-pool rows per source with noise drawn
        once; (X~ stacked, y stacked, the start offset of each source's rows)."""
        Xs, ys = [], []
        for k, r in enumerate(rng.spawn(self.n_sources)):
            idx = r.choice(len(self.train_y[k]), size=min(size, len(self.train_y[k])), replace=False)
            X = self.train_X[k][idx]
            if self.noise[k] > 0:
                X = np.clip(X + self.noise[k] * r.standard_normal(X.shape), 0.0, 1.0)
            Xs.append(augment(X))
            ys.append(self.train_y[k][idx])
        offsets = np.cumsum([0] + [len(y) for y in ys[:-1]])
        return np.concatenate(Xs), np.concatenate(ys), offsets

    def source_fn(self, k: int) -> Callable[[np.random.Generator], tuple[np.ndarray, int]]:
        """A callable rng -> (x float32 (d,), y) drawing one sample of source k (for :func:`ucb_ogd`)."""

        def source(rng: np.random.Generator) -> tuple[np.ndarray, int]:
            X, y = self.draw(k, 1, rng)
            return X[0].astype(np.float32), int(y[0])

        return source

    def summary(self) -> list[dict[str, Any]]:
        """One row per source: name, classes, noise, train and test pool sizes."""
        return [
            {
                "source": k,
                "name": self.names[k],
                "classes": " ".join(map(str, self.classes[k])) if self.classes else "",
                "noise": float(self.noise[k]),
                "n_train": int(len(self.train_y[k])),
                "n_test": int(len(self.test_y[k])),
            }
            for k in range(self.n_sources)
        ]


class Streams:
    """Pre-drawn per-source draws consumed in order: ``take(k)`` returns the next unused draw of source k (a pair
    (x, y) when labels are given, else the row)."""

    def __init__(self, X: Sequence[np.ndarray], y: Sequence[np.ndarray] | None = None) -> None:
        self.X = list(X)
        self.y = None if y is None else [np.asarray(v) for v in y]
        self.used = np.zeros(len(self.X), dtype=np.int64)

    def take(self, k: int) -> Any:
        i = self.used[k]
        if i >= len(self.X[k]):
            raise IndexError(f"source {k}'s stream is exhausted ({i} draws)")
        self.used[k] = i + 1
        return self.X[k][i] if self.y is None else (self.X[k][i], int(self.y[k][i]))

    def take_batch(self, k: int, n: int) -> Any:
        """The next n draws of source k: (X (n, ...), y (n,)) with labels, else X."""
        i = self.used[k]
        if i + n > len(self.X[k]):
            raise IndexError(f"source {k}'s stream has {len(self.X[k]) - i} draws left, {n} asked")
        self.used[k] = i + n
        return self.X[k][i : i + n] if self.y is None else (self.X[k][i : i + n], self.y[k][i : i + n])

    def fresh(self) -> Streams:
        """The same draws, none consumed (the next method of the seed starts from the top of every stream)."""
        return Streams(self.X, self.y)


def _split(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    perm = rng.permutation(n)
    n_train = min(n - 1, max(1, round(TRAIN_FRACTION * n)))
    return perm[:n_train], perm[n_train:]


def digits_pools(
    rng: np.random.Generator,
    classes: Sequence[Sequence[int]] = DIGIT_CLASSES,
    noise: Sequence[float] = DIGIT_NOISE,
) -> SourcePools:
    """The label-shifted digits sources (module docstring): a 70 / 30 split of every class from ``rng``, then
    the fixed test noise."""
    from sklearn.datasets import load_digits

    if len(classes) != len(noise):
        raise ValueError(f"{len(classes)} class sets but {len(noise)} noise levels")
    d = load_digits()
    X, y = d.data / 16.0, d.target.astype(np.int64)
    split_rng, noise_rng = rng.spawn(2)
    is_train = np.zeros(len(y), dtype=bool)
    for c in range(10):
        idx = np.flatnonzero(y == c)
        tr, _ = _split(len(idx), split_rng)
        is_train[idx[tr]] = True
    pools = SourcePools([], [], [], [], [], np.asarray(noise, dtype=float), 10, [])
    for k, (cls, sigma) in enumerate(zip(classes, noise, strict=True)):
        member = np.isin(y, list(cls))
        tr, te = member & is_train, member & ~is_train
        Xt = X[te]
        if sigma > 0:
            Xt = np.clip(Xt + sigma * noise_rng.standard_normal(Xt.shape), 0.0, 1.0)
        pools.names.append(f"S{k + 1}")
        pools.classes.append(tuple(cls))
        pools.train_X.append(X[tr])
        pools.train_y.append(y[tr])
        pools.test_X.append(Xt)
        pools.test_y.append(y[te])
    return pools


def csv_pools(
    folder: Path | str,
    rng: np.random.Generator,
    label: str = "label",
    noise: Sequence[float] | None = None,
) -> SourcePools:
    """One source per ``*.csv`` file of ``folder`` (module docstring), or ValueError naming the file and the
    problem: no CSV file, an unreadable file, no ``label`` column, non-numeric or missing values, feature
    columns that differ from the first file's, fewer than 2 rows, fewer than 2 classes overall."""
    from icml25.tables import numeric_table, read_csv

    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such folder")
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise ValueError(f"{folder}: no *.csv file (one file per source)")
    frames, features = [], None
    for path in files:
        frame = read_csv(path)
        X, y, cols = numeric_table(frame, label, str(path), min_rows=2)
        if features is None:
            features = cols
        elif sorted(cols) != sorted(features):
            raise ValueError(f"{path}: feature columns {cols} differ from {files[0].name}'s {features}")
        X = frame[features].to_numpy(float)
        if not np.all(y == np.round(y)):
            raise ValueError(f"{path}: column {label!r} must hold integer class labels")
        frames.append((X, y.astype(np.int64)))
    labels = np.unique(np.concatenate([y for _, y in frames]))
    if len(labels) < 2:
        raise ValueError(f"{folder}: a single class ({labels[0]}) in all files; at least 2 are needed")
    sigma = np.zeros(len(files)) if noise is None else np.asarray(noise, dtype=float)
    if len(sigma) != len(files):
        raise ValueError(f"{len(sigma)} noise levels for {len(files)} source files")
    *split_rngs, noise_rng = rng.spawn(len(files) + 1)
    splits = [_split(len(y), r) for (_, y), r in zip(frames, split_rngs, strict=True)]
    train = np.concatenate([X[tr] for (X, _), (tr, _) in zip(frames, splits, strict=True)])
    lo, span = train.min(axis=0), np.ptp(train, axis=0)
    span[span == 0] = 1.0

    def scale(X: np.ndarray) -> np.ndarray:
        return np.clip((X - lo) / span, 0.0, 1.0)

    pools = SourcePools([], [], [], [], [], sigma, len(labels), [])
    for path, (X, y), (tr, te), s in zip(files, frames, splits, sigma, strict=True):
        yk = np.searchsorted(labels, y)
        Xt = scale(X[te])
        if s > 0:
            Xt = np.clip(Xt + s * noise_rng.standard_normal(Xt.shape), 0.0, 1.0)
        pools.names.append(path.stem)
        pools.classes.append(tuple(int(c) for c in np.unique(y)))
        pools.train_X.append(scale(X[tr]))
        pools.train_y.append(yk[tr])
        pools.test_X.append(Xt)
        pools.test_y.append(yk[te])
    return pools
