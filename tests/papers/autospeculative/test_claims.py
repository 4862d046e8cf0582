"""autospeculative: every claim against the stub that kills it. The mixture at K in {64, 256, 1024} (100 chains per
arm, 999 permutations: the floor p = 0.001 that the Bonferroni claim needs to see draft-only fail), arms run by
the evaluate stage's own functions (models/autospeculative/experiment.py), summary.json built as the evaluate
stage builds it, and the claims computed by the report's own claim functions (tests.helpers.claim_verdict).

Stubs: ASD with window L = 1 (speedup_k1024); a drafter that calls the model per draft (sublinear_rounds);
draft-only in ASD's place (same_distribution); an ablation that still verifies in draft-only's place
(verification_needed)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd

from tests.helpers import claim_verdict

SLUG = "autospeculative"
KS = (64, 256, 1024)
N, PERMUTATIONS, SEED = 100, 999, 0


@functools.cache
def _arm(variant: str, K: int, L: int | None = None):
    from models.autospeculative.denoisers import Mixture
    from models.autospeculative.experiment import Model, run_arm
    from models.autospeculative.sl import cosine_grid

    mix = Mixture.circle()
    return run_arm(Model("gmm", mix, mix.start), cosine_grid(K), variant, L or K, N, SEED)


def evaluated(dest: Path, asd=("asd", None), draft="draft_only") -> Path:
    """summary.json where ASD's arm (labelled L = K) is ``asd`` = (variant, L or None for K) and draft-only's arm
    is ``draft``."""
    from models.autospeculative.experiment import claims, row, test_row

    rows, tests = [], []
    for K in KS:
        seq, mine = _arm("sequential", K), _arm(asd[0], K, asd[1])
        rows += [row("gmm", K, K, "sequential", seq), row("gmm", K, K, "asd", mine)]
        tests.append(test_row("gmm", K, "asd", mine.samples, seq.samples, PERMUTATIONS, SEED))
        if K == max(KS):
            other = _arm(draft, K)
            tests.append(test_row("gmm", K, "draft_only", other.samples, seq.samples, PERMUTATIONS, SEED))
    summary = claims(pd.DataFrame(rows), pd.DataFrame(tests), max(KS)) | {"Ks": list(KS)}
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "summary.json").write_text(json.dumps(summary))
    return dest


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


def test_the_method_holds_every_claim(root, tmp_path):
    folder = evaluated(tmp_path)
    for claim_id in ("speedup_k1024", "sublinear_rounds", "same_distribution", "verification_needed"):
        assert verdict(root, claim_id, folder)["passed"] == 1, claim_id


def test_window_one_fails_speedup_k1024(root, tmp_path):
    v = verdict(root, "speedup_k1024", evaluated(tmp_path, asd=("asd", 1)))
    assert v["passed"] == 0 and v["value"] > 1.0, v  # every step its own round: K + 2 calls


def test_a_drafter_that_calls_the_model_fails_sublinear_rounds(root, tmp_path):
    v = verdict(root, "sublinear_rounds", evaluated(tmp_path, asd=("model_drafts", None)))
    assert v["passed"] == 0 and v["value"] > 0.95, v  # calls grow linearly in K


def test_draft_only_fails_same_distribution(root, tmp_path):
    v = verdict(root, "same_distribution", evaluated(tmp_path, asd=("draft_only", None)))
    assert v["passed"] == 0 and v["value"] <= 3 / (PERMUTATIONS + 1) + 1e-12, v  # 3 tests at the floor


def test_an_ablation_that_still_verifies_fails_verification_needed(root, tmp_path):
    v = verdict(root, "verification_needed", evaluated(tmp_path, draft="asd"))
    assert v["passed"] == 0 and v["value"] < 0.5, v
