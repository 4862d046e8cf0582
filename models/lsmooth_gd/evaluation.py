"""What evaluate writes (the files the claims read), from the analytic suite: runs.csv and traces.csv
(:func:`~.gd.analytic_suite`), log_dependence.json (the linear fit of ell-GD's iterations against c, x0 = c * 1
on cosh: logarithmic in ||grad f(x0)||) and closed_form.json (the closed forms against quadrature). The stage and
the stub tests (tests/papers/lsmooth_gd/test_claims.py) write through the same function."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def log_dependence(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fit of ell-GD's iterations on cosh against the start c: r2 and slope (r2 = 0 unless every start
    converged and there are at least three), with the starts and iteration counts."""
    from scipy.stats import linregress

    cosh = sorted(
        (r for r in runs if r["function"] == "cosh" and r["rule"] == "ell"), key=lambda r: r["start"]
    )
    fit: dict[str, Any] = {"r2": 0.0, "slope": float("nan")}
    if all(r["converged"] for r in cosh) and len(cosh) > 2:
        line = linregress([r["start"] for r in cosh], [r["iterations"] for r in cosh])
        fit = {"r2": float(line.rvalue**2), "slope": float(line.slope)}
    fit.update(starts=[r["start"] for r in cosh], iterations=[r["iterations"] for r in cosh])
    return fit


def write_evaluated(out: Path, ev: Any, rng: Any) -> dict[str, float]:
    """The analytic suite of the evaluate params ``ev`` (dim, cosh_starts, main_start, quartic_x0, xlogx_x0,
    max_iter, tol, closed_form_samples) written into ``out``; ``rng`` draws the closed-form samples. Returns the
    closed forms' worst relative differences."""
    import pandas as pd

    from icml25.io import write_json

    from .ell import closed_form_error
    from .gd import analytic_suite

    out = Path(out)
    runs, traces = analytic_suite(
        ev.dim, ev.cosh_starts, ev.main_start, ev.quartic_x0, ev.xlogx_x0, ev.max_iter, ev.tol
    )
    pd.DataFrame(runs).to_csv(out / "runs.csv", index=False)
    pd.DataFrame(traces).to_csv(out / "traces.csv", index=False)
    write_json(out / "log_dependence.json", log_dependence(runs))
    worst = closed_form_error(rng, ev.closed_form_samples)
    write_json(out / "closed_form.json", {"samples": ev.closed_form_samples, "max_rel_diff": worst})
    return worst
