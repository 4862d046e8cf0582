"""bundle_cbf: every claim against the stub that kills it. Closed-loop episodes of the stages' own functions
(models/bundle_cbf/experiment.py: episode_rows on one seed's narrow-passage layouts, the filter using the true
model in place of a fit, which the claims' conditions share), small Neural ODE fits, summary.json built as the
evaluate stage builds it (claim_numbers), and the claims computed by the report's own claim functions
(tests.helpers.claim_verdict).

Stubs: no filter relabelled as the mCBF (mcbf_safe); the mCBF given the worst-case margin, i.e. the robust CBF
relabelled (less_conservative); a nominal CBF that secretly keeps the mCBF's margin (nominal_unsafe); the
weighted fit given uniform sigma (weighting_helps)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import claim_verdict

SLUG = "bundle_cbf"
LAYOUTS = 30  # the default tests'; the slow test runs the claims' 100


@functools.cache
def _runs(n: int = LAYOUTS) -> dict[str, pd.DataFrame]:
    """One seed's passage layouts under the mCBF, robust, nominal and no-filter rules (true model in the filter);
    the default tests' episodes stop at 400 steps (8 s) instead of 600, the slow test's run the claims' length."""
    from models.bundle_cbf.experiment import episode_rows
    from models.bundle_cbf.simulate import Episode
    from models.bundle_cbf.system import TrueModel, passage

    lay = passage(np.random.default_rng(7), n)
    out = {}
    for cond in ("mcbf", "robust", "nominal", "none"):
        out[cond] = episode_rows(lay, cond, np.random.default_rng(8), TrueModel(),
                                 Episode() if n == 100 else Episode(steps=400), seed=0, family="passage")  # fmt: skip
    return out


def _episodes(n: int = LAYOUTS, **as_condition: str) -> pd.DataFrame:
    """The episodes frame, each claim condition's rows taken from the run named in ``as_condition`` (a stub)."""
    runs = _runs(n)
    pick = {"mcbf": "mcbf", "robust": "robust", "nominal": "nominal"} | as_condition
    return pd.concat([runs[src].assign(condition=cond) for cond, src in pick.items()], ignore_index=True)


def _errors(weighted: float = 0.5, unweighted: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame({"seed": [0, 0], "weighting": ["weighted", "unweighted"], "error": [weighted, unweighted],
                         "metric": "test"})  # fmt: skip


def evaluated(dest: Path, episodes: pd.DataFrame, errors: pd.DataFrame) -> Path:
    from models.bundle_cbf.experiment import claim_numbers

    dest.mkdir(parents=True, exist_ok=True)
    summary = claim_numbers(episodes, errors) | {"layouts": LAYOUTS, "metric": "test"}
    (dest / "summary.json").write_text(json.dumps(summary))
    return dest


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


@pytest.mark.slow
def test_the_method_holds_every_claim(root, tmp_path):
    """The claims' scale (100 layouts, rollouts of the quick profile's size): every claim holds on this seed."""
    e = _fits(120, 300, ("weighted", "unweighted"))
    folder = evaluated(tmp_path, _episodes(100), _errors(e["weighted"], e["unweighted"]))
    for claim_id in ("mcbf_safe", "less_conservative", "nominal_unsafe", "weighting_helps"):
        assert verdict(root, claim_id, folder)["passed"] == 1, claim_id


def test_no_filter_fails_mcbf_safe(root, tmp_path):
    v = verdict(root, "mcbf_safe", evaluated(tmp_path / "stub", _episodes(mcbf="none"), _errors()))
    assert v["passed"] == 0 and v["value"] < 0.9
    real = verdict(root, "mcbf_safe", evaluated(tmp_path / "real", _episodes(), _errors()))
    assert real["passed"] == 1


def test_worst_case_margin_fails_less_conservative(root, tmp_path):
    v = verdict(root, "less_conservative", evaluated(tmp_path / "stub", _episodes(mcbf="robust"), _errors()))
    assert v["passed"] == 0 and v["value"] == 0.0  # the same episodes, the same noise: no gap at all
    real = verdict(root, "less_conservative", evaluated(tmp_path / "real", _episodes(), _errors()))
    assert real["value"] > 0.05


def test_nominal_with_a_hidden_margin_fails_nominal_unsafe(root, tmp_path):
    v = verdict(root, "nominal_unsafe", evaluated(tmp_path / "stub", _episodes(nominal="mcbf"), _errors()))
    assert v["passed"] == 0 and v["value"] < 0.02
    real = verdict(root, "nominal_unsafe", evaluated(tmp_path / "real", _episodes(), _errors()))
    assert real["value"] > v["value"]


@functools.cache
def _fits(rollouts: int, steps: int, names: tuple[str, ...]) -> dict[str, float]:
    """Fits of one seed's rollouts: ``weighted`` (the paper's), ``uniform`` (the weighting given a constant
    sigma), ``unweighted``; their held-out relative acceleration errors."""
    from models.bundle_cbf.data import heldout
    from models.bundle_cbf.data import rollouts as simulate
    from models.bundle_cbf.node import accel_error, fit_dynamics
    from models.bundle_cbf.system import TrueModel

    traj = simulate(np.random.default_rng(3), rollouts, 20, 0.02, 0.001)
    v, u = heldout(np.random.default_rng(4), 1000)
    how = {"weighted": ("sigma", True), "uniform": (0.05, True), "unweighted": ("sigma", False)}
    return {
        n: accel_error(fit_dynamics(traj, *how[n], steps=steps, seed=0), TrueModel(), v, u) for n in names
    }


def test_uniform_weights_fail_weighting_helps(root, tmp_path):
    e = _fits(10, 5, ("uniform", "unweighted"))  # identical fits at any length: a few steps show it
    stub = verdict(
        root, "weighting_helps", evaluated(tmp_path, _episodes(), _errors(e["uniform"], e["unweighted"]))
    )
    assert stub["passed"] == 0 and stub["value"] == pytest.approx(
        1.0, abs=1e-6
    )  # the same loss, the same fit
