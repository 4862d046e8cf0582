"""The federated data: scikit-learn's digits (or a user's table, or Dolly-style instructions), a train/test split
and a Dirichlet(alpha) label split over clients.

Dirichlet split (the paper's Dolly setup, and the usual non-i.i.d. benchmark): for every class c, proportions
p_c ~ Dir(alpha 1_N) over the N clients, and the class's rows are cut at the cumulative proportions; the draw
is repeated until every client holds at least ``min_rows`` rows (the standard rejection loop), and a split that
cannot get there in ``tries`` draws is an error naming the smallest client.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icml25.errors import UserError


@dataclass(frozen=True)
class FedData:
    """Standardised features, integer labels 0..classes-1, the client of each training row."""

    x_train: np.ndarray
    y_train: np.ndarray
    client: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int
    train_index: np.ndarray | None = (
        None  # the rows of the source that are x_train's (and x_test's), in order
    )
    test_index: np.ndarray | None = None

    @property
    def clients(self) -> int:
        return int(self.client.max()) + 1

    def rows(self, c: int) -> np.ndarray:
        return np.flatnonzero(self.client == c)


def digits() -> tuple[np.ndarray, np.ndarray, str]:
    """scikit-learn's 8 x 8 digits (shipped with the package), pixels / 16."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float64) / 16.0, d.target.astype(np.int64), "scikit-learn digits (1,797 x 64)"


def labels(values: np.ndarray) -> tuple[np.ndarray, list]:
    """Class labels -> 0..C-1 (sorted), and the original labels."""
    names, y = np.unique(values, return_inverse=True)
    return y.astype(np.int64), names.tolist()


def from_csv(path: str | Path, target: str) -> tuple[np.ndarray, np.ndarray, str]:
    """A user's table: numeric feature columns and a ``target`` column of class labels."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        frame = pd.read_csv(path)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    if target not in frame.columns:
        raise UserError(f"{path}: no column {target!r} (columns: {', '.join(map(str, frame.columns))})")
    features = frame.drop(columns=[target])
    bad = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if bad:
        raise UserError(f"{path}: column {bad[0]!r} is not numeric")
    if features.shape[1] == 0:
        raise UserError(f"{path}: no feature columns besides {target!r}")
    x = features.to_numpy(dtype=np.float64)
    if not np.isfinite(x).all():
        raise UserError(f"{path}: missing or non-finite feature values")
    if frame[target].isna().any():
        raise UserError(f"{path}: missing values in the target {target!r}")
    y, names = labels(frame[target].to_numpy())
    if len(names) < 2:
        raise UserError(f"{path}: the target {target!r} has a single class")
    return x, y, f"{path.name} ({len(x)} x {x.shape[1]}, target {target}, {len(names)} classes)"


DOLLY_FIELDS = ("instruction", "context", "response", "category")


def read_dolly(path: str | Path) -> list[dict]:
    """Dolly-15K-style JSONL: one object per line with instruction, context, response and category."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    records = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UserError(f"{path}:{n}: not UTF-8 text (byte {exc.start + 1} of the line)") from None
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise UserError(f"{path}:{n}: not a JSON object") from None
            if not isinstance(rec, dict):
                raise UserError(f"{path}:{n}: not a JSON object")
            missing = [k for k in DOLLY_FIELDS if not isinstance(rec.get(k), str)]
            if missing:
                raise UserError(f"{path}:{n}: no string field {missing[0]!r}")
            records.append(rec)
    if not records:
        raise UserError(f"{path}: no records")
    return records


def hashed_features(texts: list[str], dim: int) -> np.ndarray:
    """Bag of lower-cased words hashed (CRC-32) into ``dim`` buckets, log(1 + count): the CPU stand-in's features
    of an instruction (ours)."""
    x = np.zeros((len(texts), dim))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            x[i, zlib.crc32(word.strip(".,;:!?\"'()").encode()) % dim] += 1.0
    return np.log1p(x)


def from_dolly(path: str | Path, dim: int = 256) -> tuple[np.ndarray, np.ndarray, str, list[dict]]:
    """Dolly records -> (hashed instruction + context features, category labels): at CPU scale the network
    learns the category (ours; the paper tunes an LLM on the responses). The records come back for the LLM."""
    records = read_dolly(path)
    x = hashed_features([r["instruction"] + " " + r["context"] for r in records], dim)
    y, names = labels(np.array([r["category"] for r in records]))
    if len(names) < 2:
        raise UserError(f"{path}: every record has the category {names[0]!r}")
    return x, y, f"{Path(path).name} ({len(records)} records, {len(names)} categories)", records


def split(n: int, n_test: int, g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random train/test split of n rows."""
    if not 1 <= n_test < n:
        raise UserError(f"test rows {n_test}: must be between 1 and {n - 1} for {n} rows")
    perm = g.permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def dirichlet_partition(
    y: np.ndarray, clients: int, alpha: float, g: np.random.Generator, min_rows: int = 10, tries: int = 1000
) -> np.ndarray:
    """The client of every row: per class, Dir(alpha) proportions over clients, redrawn until every client
    has ``min_rows`` rows."""
    if clients < 1:
        raise UserError(f"clients {clients}: must be >= 1")
    if not alpha > 0:
        raise UserError(f"alpha {alpha}: the Dirichlet concentration must be > 0")
    if len(y) < clients * min_rows:
        raise UserError(f"clients {clients}: {len(y)} training rows cannot give every client {min_rows} rows")
    classes = np.unique(y)
    smallest = 0
    for _ in range(tries):
        owner = np.empty(len(y), dtype=np.int64)
        for c in classes:
            rows = g.permutation(np.flatnonzero(y == c))
            cuts = (np.cumsum(g.dirichlet(np.full(clients, alpha)))[:-1] * len(rows)).astype(int)
            for k, part in enumerate(np.split(rows, cuts)):
                owner[part] = k
        counts = np.bincount(owner, minlength=clients)
        smallest = int(counts.min())
        if smallest >= min_rows:
            return owner
    raise UserError(
        f"alpha {alpha}, clients {clients}: no Dirichlet split in {tries} draws gives every client {min_rows} "
        f"rows (the last draw's smallest client had {smallest}); raise alpha or lower clients"
    )


def standardise(x_train: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and scale by the training rows' mean and standard deviation (a constant column stays 0)."""
    mu, sd = x_train.mean(0), x_train.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return (x_train - mu) / sd, (x_test - mu) / sd


def federate(
    x: np.ndarray,
    y: np.ndarray,
    *,
    n_test: int,
    clients: int,
    alpha: float,
    g: np.random.Generator,
    scale: bool = True,
    min_rows: int = 10,
) -> FedData:
    """Split, partition the training rows over clients, and (``scale``) standardise."""
    train, test = split(len(y), n_test, g)
    owner = dirichlet_partition(y[train], clients, alpha, g, min_rows)
    xtr, xte = x[train], x[test]
    if scale:
        xtr, xte = standardise(xtr, xte)
    return FedData(
        xtr.astype(np.float32),
        y[train],
        owner,
        xte.astype(np.float32),
        y[test],
        int(y.max()) + 1,
        train,
        test,
    )
