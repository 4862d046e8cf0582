"""Reading what prepare wrote back into a :class:`~models.ferret.data.FedData`."""

from __future__ import annotations

from pathlib import Path

from .data import FedData


def load_data(path: str | Path) -> FedData:
    import numpy as np

    with np.load(path) as f:
        y, yt = f["y_train"], f["y_test"]
        return FedData(
            f["x_train"].astype(np.float32),
            y.astype(np.int64),
            f["client"].astype(np.int64),
            f["x_test"].astype(np.float32),
            yt.astype(np.int64),
            int(max(y.max(), yt.max())) + 1,
        )
