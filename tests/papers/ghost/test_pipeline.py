"""GHOST's smoke pipeline in process (the runner DVC calls): the report, its figures and the trained artifacts.
(The S3 round trip of the proxy models lives in tests/integration.)"""

from __future__ import annotations

import json

import pytest

from tests.helpers import check_report

SLUG = "ghost"
pytestmark = pytest.mark.filterwarnings("ignore")


def test_smoke_pipeline_writes_ghost_report_and_artifacts(smoke):
    work = smoke.run(SLUG)
    readme = check_report(work, SLUG, "smoke")
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())
    assert set(claims["claims"]) == {"beats_baselines", "above_chance", "proxy_fidelity"}
    for fig in ("accuracy.png", "label_distribution.png"):
        assert f"figures/{fig}" in readme
        assert (work / "reports" / SLUG / "figures" / fig).stat().st_size > 1000
    trained = work / "data" / SLUG / "trained" / "main" / "run0"
    assert (trained / "generators" / "paper" / "client00.safetensors").exists()
    assert (trained / "generators" / "code" / "client00.safetensors").exists()
    assert (trained / "models" / "ghost_paper.safetensors").exists()
    acc = (work / "data" / SLUG / "evaluated" / "main" / "accuracy.csv").read_text()
    for method in ("ghost_paper", "ghost_code", "ghost_paper_noret", "fedavg", "local", "central"):
        assert f"0,{method}," in acc
