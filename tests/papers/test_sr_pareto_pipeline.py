"""sr_pareto's smoke run through `dvc repro` (the session's smoke repo): report, claims and the fronts."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import check_smoke_report

SLUG = "sr_pareto"
pytestmark = pytest.mark.filterwarnings("ignore")


def test_smoke_repro_writes_fronts_and_report(smoke_repo, root):
    work, log = smoke_repo
    ids = {
        "exact_recovery",
        "full_dominates_karva",
        "apo_dominates_peer",
        "optimizers_close",
        "fast_path_faithful",
    }
    readme = check_smoke_report(work, log, root, SLUG, ids)
    fronts = work / "data" / SLUG / "evaluated" / "main" / "fronts"
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
