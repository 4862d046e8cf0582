"""model_independence: the smoke pipeline in process (the runner DVC calls), and the artifacts the report and
the integration tests rely on.

Slow (about 11 s on two idle cores: three Lightning fits and Great Expectations): the default run already
reproduces this paper's smoke profile through real `dvc repro` and Prefect in tests/integration/, so this
in-process copy runs with `-m slow`."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.helpers import check_report, declared_claims

SLUG = "model_independence"


@pytest.mark.slow
def test_smoke_pipeline_reports_every_test_on_every_pair(smoke):
    work = smoke.run(SLUG)
    readme = check_report(work, SLUG, "smoke")
    assert "figures/pvalue_histogram.png" in readme and "figures/match_heatmap.png" in readme
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())["claims"]
    assert set(claims) == set(declared_claims(SLUG)) and claims["permtest_exact_floor"]["value"] == 1.0

    data = work / "data" / SLUG
    train = pd.read_csv(data / "prepared" / "main" / "train.csv")
    assert list(train.columns) == [f"p{i}" for i in range(64)] + ["label"]
    ckpts = sorted(p.name for p in (data / "trained" / "main" / "checkpoints").iterdir())
    assert ckpts[:3] == ["base", "ft", "ft_perm"] and len(ckpts) == 3 + 2 * 3  # smoke: n_pairs = 3

    evaluated = data / "evaluated" / "main"
    pv = pd.read_csv(evaluated / "pvalues.csv")
    assert len(pv) == (2 + 3) * 4 and set(pv.stat) == {"u", "h", "match", "l2"}
    summary = json.loads((evaluated / "summary.json").read_text())
    indep = pv[pv.kind == "independent"]
    assert summary["independent_pairs"] == 3
    assert summary["independent_min_log10p"]["match"] == indep[indep.stat == "match"].log10p.min()
    assert claims["independent_uniform_u"]["value"] == summary["independent_ks_p"]["u"]
    metrics = json.loads((work / "reports" / SLUG / "metrics.json").read_text())
    assert metrics["test_accuracy"] == summary["test_accuracy"]
