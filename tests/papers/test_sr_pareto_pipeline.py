"""sr_pareto's smoke run through `dvc repro` (the session's smoke repo): report, claims and the fronts."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

SLUG = "sr_pareto"
pytestmark = pytest.mark.filterwarnings("ignore")


def test_smoke_repro_writes_fronts_and_report(smoke_repo, root):
    work, log = smoke_repo
    for stage in ("prepare", "validate", "train", "evaluate", "report"):
        assert f"Running stage '{stage}@{SLUG}'" in log
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())
    assert claims["profile"] == "smoke"
    assert set(claims["claims"]) == {
        "exact_recovery",
        "full_dominates_karva",
        "apo_dominates_peer",
        "optimizers_close",
        "fast_path_faithful",
    }
    checker = root.parent / "shared" / "tools" / "check_claims.py"
    if checker.exists():
        res = subprocess.run([sys.executable, str(checker), SLUG], cwd=work, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout
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
    assert "figures/fronts.png" in (work / "reports" / SLUG / "README.md").read_text()
