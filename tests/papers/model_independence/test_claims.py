"""model_independence: the claims against stubs. Each test runs every statistic on the experiment's pairs
(experiment.pair_tests) of stand-in models, with a stub or broken statistic swapped in, writes the evaluated
folder with evaluate's own writer (experiment.write_evaluated) and computes the claims through the report's claim
functions (tests.helpers.claim_verdict).

Stand-ins (as in test_method.py): ``base`` a default-initialised GLU, ``ft`` = base + 5% noise (a fine-tune),
``ft_perm`` its output-preserving permutation + rescaling, and N_PAIRS independent pairs of freshly initialised
models (H_0 holds exactly: the initialisation law is permutation-invariant). The real statistics hold every claim
on these folders (the control); each stub fails the claims its test names."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from models.model_independence import experiment as ex
from tests.helpers import claim_verdict, lazy

glu = lazy("models.model_independence.glu")
st = lazy("models.model_independence.stats")
api = lazy("models.model_independence.api")
perms = lazy("models.model_independence.permutations")

SLUG = "model_independence"
STATS = "models.model_independence.stats."  # patched by name: ``st`` is a lazy proxy, not the module
L = 2  # blocks of the default GLUConfig
T = 19  # PERMTEST's permutations (the floor is 1/20)
N_PAIRS = 10
DETECTION = (
    "finetune_detected_u",
    "finetune_detected_match",
    "permuted_detected_match",
    "permtest_exact_floor",
)
NULL = (
    "independent_uniform_u",
    "independent_uniform_match",
    "independent_min_u",
    "independent_min_match",
    "permtest_independent_uniform",
)


@pytest.fixture(scope="module")
def models() -> tuple[dict[str, Any], dict[str, Any]]:
    """(weights, activations) of the stand-ins, by the names the experiment's pairs use."""
    import torch

    def init(seed: int):
        return glu.init_weights(glu.GLUConfig(), torch.Generator().manual_seed(seed))

    base = init(0)
    gen = torch.Generator().manual_seed(10)
    ft = {k: v + 0.05 * v.abs().max() * torch.randn(v.shape, generator=gen) for k, v in base.items()}
    weights = {"base": base, "ft": ft, "ft_perm": perms.output_preserving_transform(ft, L, seed=2)}
    weights |= {f"indep_{k:02d}": init(1000 + k) for k in range(2 * N_PAIRS)}
    return weights, ex.activations(weights, api.digits_inputs(100), L)


def evaluated(models, folder: Path) -> Path:
    """The evaluated folder of the stand-ins, written as evaluate writes it, with the statistics of
    ``models.model_independence.stats`` as they are when called (a test patches the ones it breaks)."""
    weights, acts = models
    folder.mkdir(parents=True, exist_ok=True)
    rows = ex.pair_tests(weights, acts, L, permutations=T, seed=0)
    accuracy = dict.fromkeys(weights, 0.9)
    ex.write_evaluated(folder, rows, [], accuracy, T)
    return folder


def verdicts(root: Path, folder: Path, ids: tuple[str, ...]) -> dict[str, int]:
    return {c: claim_verdict(root, SLUG, c, folder)["passed"] for c in ids}


def result(stat: str, log10p: float):
    return st.TestResult(stat, (log10p,) * (stat != "l2") * L, float(log10p))


def test_the_real_statistics_hold_every_claim(root, tmp_path, models):
    folder = evaluated(models, tmp_path / "evaluated")
    assert verdicts(root, folder, DETECTION + NULL) == dict.fromkeys(DETECTION + NULL, 1)


def test_valid_but_powerless_noise_fails_every_detection_claim(root, tmp_path, monkeypatch, models):
    """Statistics that return p ~ Unif(0, 1) whatever the models (PERMTEST: a uniform rank on its support) are
    valid tests with no power: they hold the null claims and fail finetune_detected_u, finetune_detected_match,
    permuted_detected_match and permtest_exact_floor."""
    rng, ranks = np.random.default_rng(1), np.random.default_rng(0)  # (base, ft), tested first, draws rank 18

    monkeypatch.setattr(STATS + "phi_u", lambda *a, **k: result("u", math.log10(rng.uniform())))
    monkeypatch.setattr(STATS + "phi_match", lambda *a, **k: result("match", math.log10(rng.uniform())))
    monkeypatch.setattr(
        STATS + "permtest_l2", lambda *a, **k: result("l2", math.log10(ranks.integers(1, T + 2) / (T + 1)))
    )
    got = verdicts(root, evaluated(models, tmp_path / "evaluated"), DETECTION + NULL)
    assert got == {
        "finetune_detected_u": 0,
        "finetune_detected_match": 0,
        "permuted_detected_match": 0,
        "permtest_exact_floor": 0,
        **dict.fromkeys(NULL, 1),  # valid: the null claims hold
    }


def test_tests_that_always_reject_fail_every_null_claim(root, tmp_path, monkeypatch, models):
    """Statistics that always report dependence: phi_U and phi_MATCH at p = 1e-20, and a PERMTEST stub that
    always returns its floor 1/(T+1). They hold every detection claim, permtest_exact_floor included (why the
    null behaviour of PERMTEST is gated too), and fail independent_uniform_u, independent_uniform_match,
    independent_min_u, independent_min_match and permtest_independent_uniform."""
    monkeypatch.setattr(STATS + "phi_u", lambda *a, **k: result("u", -20.0))
    monkeypatch.setattr(STATS + "phi_match", lambda *a, **k: result("match", -20.0))
    monkeypatch.setattr(STATS + "permtest_l2", lambda *a, **k: result("l2", math.log10(1 / (T + 1))))
    got = verdicts(root, evaluated(models, tmp_path / "evaluated"), DETECTION + NULL)
    assert got == {
        **dict.fromkeys(DETECTION, 1),  # powerful: every detection claim holds, permtest_exact_floor too
        "independent_uniform_u": 0,
        "independent_uniform_match": 0,
        "independent_min_u": 0,
        "independent_min_match": 0,
        "permtest_independent_uniform": 0,
    }
    assert claim_verdict(root, SLUG, "permtest_independent_uniform", tmp_path / "evaluated")["value"] < 1e-6


def test_a_constrained_match_is_fooled_by_the_permuted_fine_tune(root, tmp_path, monkeypatch, models):
    """phi_MATCH without its unconstrained matching (phi_H in its place: the hidden units matched on one
    projection and compared with the identity) fails permuted_detected_match: an output-preserving permutation
    makes the matched permutation a fresh random one."""
    monkeypatch.setattr(STATS + "phi_match", lambda a, b, **k: st.phi_h(a, b, **k))
    got = verdicts(root, evaluated(models, tmp_path / "evaluated"), ("permuted_detected_match",))
    assert got == {"permuted_detected_match": 0}
