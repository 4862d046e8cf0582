"""A :class:`~models.ucb_ogd.sources.SourcePools` saved to and read from one ``.npz`` (what prepare writes and
train reads): per source k the arrays ``train_X_k``, ``train_y_k``, ``test_X_k``, ``test_y_k``, and ``noise``,
``names``, ``n_classes``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .sources import SourcePools

ARRAYS = ("train_X", "train_y", "test_X", "test_y")


def save_pools(path: Path, pools: SourcePools) -> None:
    arrays = {f"{name}_{k}": getattr(pools, name)[k] for name in ARRAYS for k in range(pools.n_sources)}
    np.savez_compressed(
        path,
        noise=np.asarray(pools.noise, dtype=float),
        names=np.asarray(pools.names, dtype=str),
        n_classes=np.asarray(pools.n_classes),
        **arrays,
    )


def load_pools(path: Path) -> SourcePools:
    from icml25.io import load_npz

    d = load_npz(path)
    K = len(d["names"])
    return SourcePools(
        names=[str(n) for n in d["names"]],
        **{name: [d[f"{name}_{k}"] for k in range(K)] for name in ARRAYS},
        noise=d["noise"],
        n_classes=int(d["n_classes"]),
    )
