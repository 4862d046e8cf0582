"""sr_pareto's smoke pipeline in process: report, claims, the fronts and the evaluated summary."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.helpers import check_report, declared_claims

SLUG = "sr_pareto"
pytestmark = pytest.mark.filterwarnings("ignore")


def test_smoke_pipeline_writes_fronts_and_report(smoke):
    work = smoke.run(SLUG)
    ids = {
        "exact_recovery",
        "full_dominates_karva",
        "apo_dominates_peer",
        "optimizers_close",
        "fast_path_faithful",
    }
    assert set(declared_claims(SLUG)) == ids
    readme = check_report(work, SLUG, "smoke")
    evaluated = work / "data" / SLUG / "evaluated" / "main"
    fronts = evaluated / "fronts"
    front = pd.read_csv(fronts / "planted_len3.csv")
    assert list(front.columns) == [
        "EquationLength",
        "EquationStructure",
        "EquationParameters",
        "NumericalIterations",
        "MSE",
        "R2",
    ]
    assert front.set_index("EquationLength").loc[3, "EquationStructure"] == "Sub(xdata[0],xdata[1])"
    assert (fronts / "planted_len3_karva3.csv").exists() and (fronts / "planted_len3_BFGS.csv").exists()
    assert "figures/fronts.png" in readme
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())["claims"]
    summary = json.loads((evaluated / "summary.json").read_text())
    assert claims["exact_recovery"]["value"] == summary["exact_recovery"]["min_r2"]
    assert claims["full_dominates_karva"]["value"] == summary["karva_gap"]["min"]
