"""Prepare: ``images.npz`` with ``train`` and ``test`` arrays (n, 1, H, W) in [-1, 1]: scikit-learn's digits
split 1,500 / 297 by ``ctx.rng("split")``, or with ``source: folder`` the digits for training and the user's
images (grayscale, resized to ``size``) as the test set."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np

    from icml25.errors import UserError
    from models.easyinv.data import digits, folder

    pp = ctx.params.prepare
    try:
        train, test = digits(ctx.rng("split"), pp.train, pp.test)
        if pp.source == "folder":
            test = folder(ctx.input_path("folder", pp.folder), pp.size)
            if pp.size != 8:
                raise UserError(
                    f"papers.easyinv.prepare.size: {pp.size}, but the digits the model trains on are 8x8"
                )
    except ValueError as exc:
        raise UserError(f"papers.easyinv.prepare: {exc}") from None
    np.savez(ctx.out / "images.npz", train=train, test=test)
    ctx.write_json(
        "meta.json",
        {"source": pp.source, "train": len(train), "test": len(test), "shape": list(test.shape[1:])},
    )
    ctx.log.info("%d train and %d test images of %s", len(train), len(test), test.shape[1:])
