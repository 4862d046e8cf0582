"""scikit-learn's bundled 8x8 digits (1,797 images, pixels 0-16), a stratified train/test split written as
train.csv and test.csv (pixel columns p0..p63 and label)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from models.model_independence.data import SPLITS, digits_frame, stratified_split

    parts = stratified_split(digits_frame(), ctx.params.prepare.test_fraction, ctx.seed_for("split"))
    for name, part in zip(SPLITS, parts, strict=True):
        part.to_csv(ctx.out / f"{name}.csv", index=False)
    ctx.log.info("digits: %d train, %d test", *(len(p) for p in parts))
