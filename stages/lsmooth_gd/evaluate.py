"""The analytic suite (every function, start and step rule), the fit of ell-GD's iterations against the start
(log ||grad f(x0)||), the closed forms against quadrature; the training results carried for the report."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd
    from scipy.stats import linregress

    from models.lsmooth_gd.ell import closed_form_error
    from models.lsmooth_gd.gd import analytic_suite

    ev = ctx.params.evaluate
    runs, traces = analytic_suite(
        ev.dim, ev.cosh_starts, ev.main_start, ev.quartic_x0, ev.xlogx_x0, ev.max_iter, ev.tol
    )
    pd.DataFrame(runs).to_csv(ctx.out / "runs.csv", index=False)
    pd.DataFrame(traces).to_csv(ctx.out / "traces.csv", index=False)

    cosh = sorted(
        (r for r in runs if r["function"] == "cosh" and r["rule"] == "ell"), key=lambda r: r["start"]
    )
    fit = {"r2": 0.0, "slope": float("nan")}
    if all(r["converged"] for r in cosh) and len(cosh) > 2:
        line = linregress([r["start"] for r in cosh], [r["iterations"] for r in cosh])
        fit = {"r2": float(line.rvalue**2), "slope": float(line.slope)}
    fit.update(starts=[r["start"] for r in cosh], iterations=[r["iterations"] for r in cosh])
    ctx.write_json("log_dependence.json", fit)

    worst = closed_form_error(ctx.rng("closed_form"), ev.closed_form_samples)
    ctx.write_json("closed_form.json", {"samples": ev.closed_form_samples, "max_rel_diff": worst})
    ctx.carry(ctx.paths.trained, "history.csv", "final.json")
    ctx.log.info("%d analytic runs; closed form vs quadrature: %s", len(runs), worst)
