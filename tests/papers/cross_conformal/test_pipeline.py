"""cross_conformal's smoke pipeline in process: report, claims, artifacts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tests.helpers import check_report

SLUG = "cross_conformal"


def test_smoke_pipeline_writes_sets_scores_and_report(smoke):
    work = smoke.run(SLUG)
    ids = {"mod_coverage", "variants_coverage", "variants_smaller", "nesting", "vovk_identity"}
    readme = check_report(work, SLUG, "smoke")
    data = work / "data" / SLUG
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())["claims"]
    assert set(claims) == ids
    scores = np.load(data / "trained" / "main" / "simulation" / "sim_p020.npz")
    assert scores["res"].shape[1:] == (5, 10) and scores["mu"].shape[1:] == (1, 5)  # smoke: n = 50, K = 5
    sets = pd.read_csv(data / "evaluated" / "main" / "sets.csv.gz")
    assert {
        "mod",
        "e-mod",
        "u-mod",
        "eu-mod",
        "vovk",
        "split",
        "cv+",
        "jackknife+",
        "full",
        "mapie_cv+",
    } <= set(sets.method)
    assert set(sets.construction) == {"exact", "official_grid"}
    checks = json.loads((data / "evaluated" / "main" / "checks.json").read_text())
    assert claims["nesting"]["value"] == checks["simulation"]["nesting"] + checks["real"]["nesting"] == 0
    assert "figures/ols_simulation.png" in readme and "MAPIE" in readme
