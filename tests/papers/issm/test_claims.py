"""issm: every claim against the stub or broken variant the issue names. Each stub is a model file put in the
place of the trained iSSM (an untrained network, the SSM fit, an iSSM whose emission stays at initialisation);
the evaluate stage scores the folder as it scores a real run, and the claims are computed through the report's
claim functions (tests.helpers.claim_verdict). The default tests use the smoke run's fits (30 steps); the slow
control trains one seed at the quick profile's scale, where the real fits hold every claim and the same stubs
fail them."""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from icml25.random import seed_for
from icml25.runner import run_stage
from tests.helpers import claim_verdict

SLUG = "issm"
CLAIMS = (
    "latents_identified",
    "beats_ssm_latents",
    "fit_comparable",
    "dynamics_identified",
    "novel_perturbation",
)


def _fresh(fitted, seed: int):
    """A model of the same configuration at the initialisation the train stage gives it (seeded the same way)."""
    import torch

    from models.issm.api import FittedISSM
    from models.issm.model import ISSM

    torch.manual_seed(seed)
    return FittedISSM(ISSM(fitted.config), [{"elbo": math.nan}])


def untrained(fitted, others, seed):
    """The posterior mean of an untrained recognition network (and an untrained model around it)."""
    return _fresh(fitted, seed)


def ssm_in_place(fitted, others, seed):
    """The SSM fit (iSSM with the clamp removed everywhere) in iSSM's place."""
    return others["ssm"]


def emission_at_init(fitted, others, seed):
    """The trained iSSM with its emission put back to its initialisation."""
    fresh = _fresh(fitted, seed)
    fitted.model.emission.load_state_dict(fresh.model.emission.state_dict())
    return fitted


def evaluated(source: Path, dest: Path, data: str, stub: Callable | None) -> Path:
    """A copy of ``source``'s prepared and trained issm folders with ``stub`` in the place of every seed's iSSM on
    ``data``; the evaluate stage's output folder."""
    from models.issm.api import FittedISSM

    shutil.copy(source / "params.yaml", dest / "params.yaml")
    for stage in ("prepared", "trained"):
        shutil.copytree(source / "data" / SLUG / stage, dest / "data" / SLUG / stage)
    models = dest / "data" / SLUG / "trained" / "main" / "models"
    seed0 = int(yaml.safe_load((dest / "params.yaml").read_text())["papers"][SLUG]["seed"])
    if stub is not None:
        for path in sorted(models.glob(f"{data}_s*_issm.safetensors")):
            seed = int(path.stem.split("_")[1][1:])
            others = {"ssm": FittedISSM.load(models / f"{data}_s{seed}_ssm.safetensors")}
            stub(FittedISSM.load(path), others, seed_for(seed0, "fit", data, seed)).save(path)
    run_stage(dest, SLUG, "evaluate")
    return dest / "data" / SLUG / "evaluated" / "main"


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


@pytest.fixture(scope="module")
def fitted(smoke) -> Path:
    return smoke.run(SLUG)


def test_an_untrained_recognition_network_fails_latents_identified(root, fitted, tmp_path):
    rec = verdict(root, "latents_identified", evaluated(fitted, tmp_path, "attractor", untrained))
    assert rec["passed"] == 0 and abs(rec["value"]) < 0.8


def test_issm_without_the_clamp_fails_beats_ssm_latents(root, fitted, tmp_path):
    rec = verdict(root, "beats_ssm_latents", evaluated(fitted, tmp_path, "attractor", ssm_in_place))
    assert rec["passed"] == 0 and rec["value"] == pytest.approx(0.0, abs=1e-12)


def test_an_issm_with_its_emission_at_initialisation_fails_fit_comparable(root, fitted, tmp_path):
    rec = verdict(root, "fit_comparable", evaluated(fitted, tmp_path, "attractor", emission_at_init))
    assert rec["passed"] == 0 and rec["value"] >= 0.1


def test_ssm_in_issms_place_fails_dynamics_identified(root, fitted, tmp_path):
    rec = verdict(root, "dynamics_identified", evaluated(fitted, tmp_path, "linear", ssm_in_place))
    assert rec["passed"] == 0 and rec["value"] > 0.5


def test_ssm_in_issms_place_fails_novel_perturbation(root, fitted, tmp_path):
    rec = verdict(root, "novel_perturbation", evaluated(fitted, tmp_path, "linear", ssm_in_place))
    assert rec["passed"] == 0 and rec["value"] == pytest.approx(1.0)


def test_a_run_without_the_attractor_fails_its_claims_saying_why(root, fitted, tmp_path):
    """A claim whose data set did not run (here: the attractor's summary removed) fails with a reason."""
    import json

    folder = evaluated(fitted, tmp_path, "attractor", None)
    summary = json.loads((folder / "summary.json").read_text())
    del summary["sets"]["attractor"]
    (folder / "summary.json").write_text(json.dumps(summary))
    rec = verdict(root, "latents_identified", folder)
    assert rec["passed"] == 0 and "no attractor data set" in rec["note"]


@pytest.mark.slow
def test_at_quick_scale_the_fits_hold_every_claim_and_the_stubs_fail_them(root, tmp_path):
    """The control: one seed of the quick profile (10 trials x 200 bins, 500 steps; about a minute on 2 cores)."""
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"]["seeds"] = 1
    params["papers"][SLUG]["train"]["ablation_sets"] = []
    real = tmp_path / "real"
    real.mkdir()
    (real / "params.yaml").write_text(yaml.safe_dump(params))
    for stage in ("prepare", "validate", "train", "evaluate"):
        run_stage(real, SLUG, stage)
    folder = real / "data" / SLUG / "evaluated" / "main"
    assert {c: verdict(root, c, folder)["passed"] for c in CLAIMS} == dict.fromkeys(CLAIMS, 1)
    stubs = {
        "latents_identified": ("attractor", untrained),
        "beats_ssm_latents": ("attractor", ssm_in_place),
        "fit_comparable": ("attractor", emission_at_init),
        "dynamics_identified": ("linear", ssm_in_place),
        "novel_perturbation": ("linear", ssm_in_place),
    }
    for claim_id, (data, stub) in stubs.items():
        dest = tmp_path / claim_id
        dest.mkdir()
        assert verdict(root, claim_id, evaluated(real, dest, data, stub))["passed"] == 0, claim_id
