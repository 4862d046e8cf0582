"""lsmooth_gd: the smoke pipeline in process, and its claims' calibration."""

from __future__ import annotations

import json

from tests.helpers import check_report

SLUG = "lsmooth_gd"


def test_smoke_pipeline_reports_the_analytic_suite(smoke):
    work = smoke.run(SLUG)
    readme = check_report(work, SLUG, "smoke")
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())["claims"]
    assert claims["converges_cosh"]["value"] == 144
    assert all(c["passed"] for c in claims.values())  # the control of the stub tests (test_claims.py)
    assert "figures/curves.png" in readme
    fit = json.loads((work / "data" / SLUG / "evaluated" / "main" / "log_dependence.json").read_text())
    assert fit["iterations"] == [52, 98, 144] and fit["r2"] > 0.99
