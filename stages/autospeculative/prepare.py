"""Prepare: the mixture's components (``mixture.csv``: mean, sigma, weight per component), the data the network
learns (``data.npz``: ``x`` (n, d) in [-1, 1]; scikit-learn's digits scaled by x / 8 - 1, or with ``source: npy``
the user's (n, d) array from data/autospeculative/input/), one cosine-schedule SL grid per K (``grids.csv``: K, k,
t; the mixture's Ks and the digits' K) and ``meta.json``. Nothing is downloaded: the digits ship with
scikit-learn."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _data(ctx: StageContext):
    import numpy as np

    from icml25.errors import UserError

    pp = ctx.params.prepare
    if pp.source == "digits":
        from sklearn.datasets import load_digits

        return load_digits().data.astype(np.float64) / 8.0 - 1.0, "scikit-learn digits (8 x 8, x / 8 - 1)"
    if not pp.npy:
        raise UserError(
            "papers.autospeculative.prepare.npy: empty; name an (n, d) .npy file under data/autospeculative/input/"
        )
    path = ctx.input_path("npy", pp.npy)
    if not path.is_file():
        raise UserError(f"{path}: no such file (papers.autospeculative.prepare.npy)")
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable .npy array ({str(exc).splitlines()[0]})") from None
    if x.ndim != 2 or x.shape[0] < 2 or x.dtype.kind not in "fiu":
        raise UserError(
            f"{path}: expected a numeric (n, d) array with n >= 2, got {x.dtype} of shape {x.shape}"
        )
    return x.astype(np.float64), f"{pp.npy} ({x.shape[0]} x {x.shape[1]})"


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from models.autospeculative.denoisers import Mixture
    from models.autospeculative.sl import cosine_grid

    pp = ctx.params.prepare
    mix = Mixture.circle(pp.components, pp.radius, pp.sigma)
    pd.DataFrame(
        {
            "component": np.arange(pp.components),
            "mean_x": mix.means[:, 0],
            "mean_y": mix.means[:, 1],
            "sigma": mix.sigma,
            "weight": mix.weights,
        }
    ).to_csv(ctx.out / "mixture.csv", index=False)
    x, described = _data(ctx)
    np.savez(ctx.out / "data.npz", x=x)
    grids = []
    for K in sorted({*pp.Ks, pp.digits_K}):
        t = cosine_grid(K)
        grids.append(pd.DataFrame({"K": K, "k": np.arange(K + 1), "t": t}))
    pd.concat(grids, ignore_index=True).to_csv(ctx.out / "grids.csv", index=False)
    ctx.write_json(
        "meta.json",
        {
            "Ks": sorted(pp.Ks),
            "digits_K": pp.digits_K,
            "data": described,
            "rows": len(x),
            "dim": int(x.shape[1]),
        },
    )
    ctx.log.info("data: %s; grids for K = %s", described, sorted({*pp.Ks, pp.digits_K}))
