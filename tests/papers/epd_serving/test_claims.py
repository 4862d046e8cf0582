"""epd_serving: every claim against the broken variant the issue names, on a reduced grid (rates 0.25, 1 and
2 req/s; 2 and 4 images; 60 requests; one seed) run through the train stage's driver and evaluate's summary;
the claims are computed through the report's claim functions (tests.helpers.claim_verdict). The same grid with
the method as built holds all four (the control)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from icml25.io import json_safe
from models.epd_serving.cost import CostModel
from models.epd_serving.evaluation import summarize
from models.epd_serving.experiment import Point, run_point
from models.epd_serving.workload import Workload
from tests.helpers import claim_verdict

SLUG = "epd_serving"
CLAIMS = ("ttft_lower", "attainment_gain", "encoder_memory", "sanity")
RATES, IMAGES, REQUESTS = (0.25, 1.0, 2.0), (2, 4), 60


def evaluated(folder: Path, irp_off: bool = False, **epd_options) -> Path:
    """summary.json of the reduced grid; ``irp_off`` puts EPD without IRP in EPD's place."""
    cost = CostModel()
    requests, memory = [], []
    for rate in RATES:
        for images in IMAGES:
            w = Workload.poisson(rate, REQUESTS, images, np.random.default_rng(0))
            res = run_point((Point(0, rate, images), w, cost, 1.4, 0.04, False, epd_options))
            requests += res["requests"]
            memory += res["memory"]
    req, mem = pd.DataFrame(requests), pd.DataFrame(memory)
    if irp_off:
        req = req[req.system != "epd"].replace({"system": {"epd_noirp": "epd"}})
        mem = mem[mem.system != "epd"].replace({"system": {"epd_noirp": "epd"}})
    s = summarize(req, mem, 1.4, 0.04)["summary"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(json_safe(s)))
    return folder


def verdicts(root: Path, folder: Path) -> dict[str, int]:
    return {c: claim_verdict(root, SLUG, c, folder)["passed"] for c in CLAIMS}


def test_the_method_holds_every_claim_on_the_reduced_grid(root, tmp_path):
    assert verdicts(root, evaluated(tmp_path / "ev")) == dict.fromkeys(CLAIMS, 1)


def test_irp_switched_off_fails_ttft_lower_and_attainment_gain(root, tmp_path):
    folder = evaluated(tmp_path / "ev", irp_off=True)
    ttft = claim_verdict(root, SLUG, "ttft_lower", folder)
    gain = claim_verdict(root, SLUG, "attainment_gain", folder)
    assert ttft["passed"] == 0 and ttft["value"] == pytest.approx(1.0, abs=0.02)
    assert gain["passed"] == 0 and gain["value"] <= 0.05


def test_an_encoder_that_also_loads_the_llm_fails_encoder_memory(root, tmp_path):
    rec = claim_verdict(root, SLUG, "encoder_memory", evaluated(tmp_path / "ev", encoder_holds_llm=True))
    assert rec["passed"] == 0 and rec["value"] > 0.9


def test_a_prefill_before_the_last_shard_fails_sanity(root, tmp_path):
    rec = claim_verdict(root, SLUG, "sanity", evaluated(tmp_path / "ev", prefill_after_first_shard=True))
    assert rec["passed"] == 0 and "prefill_before_last_shard 0" not in rec["note"]
