"""The analytic suite (every function, start and step rule), the fit of ell-GD's iterations against the start
(log ||grad f(x0)||), the closed forms against quadrature (models/lsmooth_gd/evaluation.py); the training
results carried for the report."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from models.lsmooth_gd.evaluation import write_evaluated

    worst = write_evaluated(ctx.out, ctx.params.evaluate, ctx.rng("closed_form"))
    ctx.carry(ctx.paths.trained, "history.csv", "final.json")
    ctx.log.info("analytic runs written; closed form vs quadrature: %s", worst)
