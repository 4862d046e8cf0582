"""star: every claim against the stub or broken variant that kills it. Stage-1 fits on the skill world (12 tasks,
40 training and 10 held-out demos per task) for 300 steps, one seed; summary.json is built by the function the
evaluate stage uses (``experiment.summarize``) from the held-out usage of each fit and the rotation checks,
and the claims are computed through the report's own claim functions (tests.helpers.claim_verdict).

- ``no_collapse``: STE in RaRSQ's place (the ratio is then 1) fails it.
- ``recon_not_worse``: RaRSQ with a codebook that never updates fails it (its MSE is 1.24 to 1.32 x STE's at
  300 steps, measured).
- ``forward_exact``: the rotation without lambda fails it; ``peer_agreement``: w unnormalised, or the rotation
  not detached, fails it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import claim_verdict

SLUG = "star"
STEPS = 300
RESULTS = ("no_collapse", "recon_not_worse")
INVARIANTS = ("forward_exact", "peer_agreement")


@pytest.fixture(scope="module")
def fits():
    """Held-out standardised chunks and three stage-1 models from one seed: RaRSQ, STE, RaRSQ with a frozen
    codebook."""
    from models.star.policy import Standardiser
    from models.star.skills import SkillConfig, fit_skills
    from models.star.world import demos, make_tasks, windows

    rng = np.random.default_rng(0)
    tasks = make_tasks(rng, 12)
    train = demos(tasks, 40, rng, 8, 0.01, 0.2)
    test = demos(tasks, 10, np.random.default_rng(1), 8, 0.01, 0.2)
    x, _ = windows(train["actions"], train["demo_offset"], 8)
    xt, _ = windows(test["actions"], test["demo_offset"], 8)
    std = Standardiser.fit(x)
    x, xt = std.forward(x), std.forward(xt)
    configs = {
        "rotation": SkillConfig(),
        "ste": SkillConfig(estimator="ste"),
        "frozen": SkillConfig(learn_codebook=False),
    }
    models = {k: fit_skills(x, cfg, STEPS, seed=0)[0] for k, cfg in configs.items()}
    return xt, models


def evaluated(fits, dest: Path, rotation: str = "rotation", **switches) -> Path:
    """summary.json and checks.csv as the evaluate stage writes them, with the model ``rotation`` in RaRSQ's
    place and the rotation's ``switches`` in its checks."""
    import pandas as pd

    from models.star.experiment import check_row, summarize
    from models.star.skills import usage

    xt, models = fits
    rows = []
    for variant, key in (("rotation", rotation), ("ste", "ste")):
        u = usage(models[key], xt)
        rows.append(
            {"seed": 0, "variant": variant, **{k: v for k, v in u.items() if not k.startswith("counts")}}
        )
    checks = [{"seed": 0, "variant": "rotation", **check_row(models["rotation"], xt, 0, **switches)}]
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "summary.json").write_text(json.dumps(summarize(rows, checks, [])))
    pd.DataFrame(checks).to_csv(dest / "checks.csv", index=False)
    return dest


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


def test_the_method_holds_every_claim(root, fits, tmp_path):
    folder = evaluated(fits, tmp_path)
    recs = {c: verdict(root, c, folder) for c in RESULTS + INVARIANTS}
    assert {c: r["passed"] for c, r in recs.items()} == dict.fromkeys(recs, 1), recs
    assert recs["no_collapse"]["value"] > 1.5  # 2.0 measured at 300 steps
    assert recs["peer_agreement"]["value"] < 1e-12


def test_ste_in_place_of_the_rotation_fails_no_collapse(root, fits, tmp_path):
    rec = verdict(root, "no_collapse", evaluated(fits, tmp_path, rotation="ste"))
    assert rec["passed"] == 0 and rec["value"] == pytest.approx(1.0)


def test_a_frozen_codebook_fails_recon_not_worse(root, fits, tmp_path):
    import torch

    xt, models = fits
    book = models["frozen"].quantizer.codebooks
    assert not book.requires_grad
    torch.manual_seed(0)  # the initialisation fit_skills(seed=0) starts from
    from models.star.skills import SkillAE, SkillConfig

    assert torch.equal(book, SkillAE(SkillConfig(learn_codebook=False)).quantizer.codebooks)
    rec = verdict(root, "recon_not_worse", evaluated(fits, tmp_path, rotation="frozen"))
    assert rec["passed"] == 0 and rec["value"] > 1.1


def test_a_rotation_without_lambda_fails_forward_exact(root, fits, tmp_path):
    rec = verdict(root, "forward_exact", evaluated(fits, tmp_path, scale=False))
    assert rec["passed"] == 0


@pytest.mark.parametrize("switch", ["normalize_w", "detach"])
def test_a_broken_rotation_fails_peer_agreement(root, fits, tmp_path, switch):
    rec = verdict(root, "peer_agreement", evaluated(fits, tmp_path, **{switch: False}))
    assert rec["passed"] == 0 and rec["value"] > 1e-6
