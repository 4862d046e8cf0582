"""sr_pareto's smoke pipeline in process: report, claims, the fronts and the evaluated summary."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from tests.helpers import check_report, declared_claims

SLUG = "sr_pareto"
pytestmark = pytest.mark.filterwarnings("ignore")


def test_smoke_pipeline_writes_fronts_and_report(smoke):
    work = smoke.run(SLUG)
    ids = {
        "exact_recovery",
        "karva_misses_shapes",
        "apo_dominates_peer",
        "optimizers_close",
        "fast_path_faithful",
    }
    assert set(declared_claims(SLUG)) == ids
    readme = check_report(work, SLUG, "smoke")
    evaluated = work / "data" / SLUG / "evaluated" / "main"
    fronts = evaluated / "fronts"
    front = pd.read_csv(fronts / "planted_len5.csv")
    assert list(front.columns) == [
        "EquationLength",
        "EquationStructure",
        "EquationParameters",
        "NumericalIterations",
        "MSE",
        "R2",
    ]
    at5 = front.set_index("EquationLength").loc[5]  # c x0 x1, in whichever of its equal forms comes first
    tokens = sorted(re.findall(r"\w+\[\d\]|\w+", at5.EquationStructure))
    assert at5.R2 >= 1 - 1e-8 and tokens == ["Mul", "Mul", "x[0]", "xdata[0]", "xdata[1]"]
    # the smoke grammar (Mul, Add) at length 7: the Karva space fitted on its own for the chain set only
    assert (fronts / "planted_len7_chain_karva3.csv").exists() and (
        fronts / "planted_len7_chain_BFGS.csv"
    ).exists()
    assert not (fronts / "planted_len5_karva3.csv").exists()
    assert "figures/fronts.png" in readme
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())["claims"]
    summary = json.loads((evaluated / "summary.json").read_text())
    assert claims["exact_recovery"]["value"] == summary["exact_recovery"]["min_r2"]
    assert claims["karva_misses_shapes"]["value"] == summary["karva_gap"]["min"]
    assert [r["dataset"] for r in summary["karva_gap"]["unreachable"]] == ["planted_len7_chain"]
    assert claims["karva_misses_shapes"]["kind"] == "result"
    assert summary["optimizers"]["length"] == 7 and set(summary["optimizers"]["invalid"]) == {
        "BFGS",
        "CG",
        "L-BFGS-B",
        "Nelder-Mead",
        "Powell",
        "SLSQP",
        "TNC",
        "trust-constr",
    }
