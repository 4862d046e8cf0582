"""scikit-learn's bundled digits, pixels scaled to [0, 1], a seeded random train/test split."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    from sklearn.datasets import load_digits

    d = load_digits()
    order = ctx.rng("split").permutation(len(d.target))
    n_test = int(round(ctx.params.prepare.test_fraction * len(order)))
    x = d.data / 16.0
    np.savez(
        ctx.out / "digits.npz",
        x_train=x[order[n_test:]],
        y_train=d.target[order[n_test:]],
        x_test=x[order[:n_test]],
        y_test=d.target[order[:n_test]],
    )
    ctx.log.info("digits: %d train, %d test", len(order) - n_test, n_test)
