"""tmvml: every claim against the stub that kills it. Small runs of the stages' own functions (models/tmvml/
experiment.py: planted_best on planted tensors, run_task and the estimators on Yeast's folds), summary.json built
as the evaluate stage builds it (claim_numbers), and the claims computed by the report's own claim functions
(tests.helpers.claim_verdict).

Stubs: the TNN's estimates in place of the LTR's (tighter_surrogate, rank_recovered); an ADMM with a fixed rho
(mu = 1) and one with the dual step's sign flipped (converges); the label-frequency ranker in place of TMvML on
Yeast (yeast_level)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers import claim_verdict

SLUG = "tmvml"


@functools.cache
def _planted(seeds: int = 4) -> pd.DataFrame:
    from models.tmvml.data import planted
    from models.tmvml.experiment import planted_best

    rows = []
    for k in range(seeds):
        star, noisy = planted(np.random.default_rng(100 + k))
        best = planted_best(star, noisy, np.geomspace(0.005, 10, 16), np.array([0.03, 0.1, 0.3]))
        rows += [{"seed": k, "penalty": p, **b} for p, b in best.items()]
    return pd.DataFrame(rows)


@functools.cache
def _yeast(folds: int = 2) -> tuple:
    from models.tmvml.data import read_yeast

    views, y, _ = read_yeast()
    fold = np.random.default_rng(0).permutation(len(y)) % 5
    return views, y, fold, folds


def _metrics(method: str) -> pd.DataFrame:
    """Two of Yeast's five folds, ``method`` (TMvML with lambda 30, or another estimator) rows labelled ltr."""
    from models.tmvml.experiment import Config, make
    from models.tmvml.metrics import all_metrics

    views, y, fold, folds = _yeast()
    rows = []
    for k in range(folds):
        tr = fold != k
        m = make(method, 30.0, Config()).fit([v[tr] for v in views], y[tr])
        rows.append({"dataset": "real", "split": k, "method": "ltr",
                     **all_metrics(y[~tr], m.decision_function([v[~tr] for v in views]))})  # fmt: skip
    return pd.DataFrame(rows)


def _fits(**admm) -> pd.DataFrame:
    """One LTR fit on a synthetic draw with the ADMM settings ``admm``, as the train stage records it."""
    from models.tmvml.data import synthetic
    from models.tmvml.experiment import Config, make

    xs, y = synthetic(np.random.default_rng(5), 150, q=8, noise_view=False)
    cfg = Config(**admm)
    m = make("ltr", 30.0, cfg).fit(xs, y)
    its = m.iterations_ if m.converged_ else cfg.max_iter + 1
    return pd.DataFrame([{"dataset": "spec_n150", "split": 0, "method": "ltr", "iterations": its, "fits": 1}])


def evaluated(dest: Path, planted: pd.DataFrame, fits: pd.DataFrame, metrics: pd.DataFrame) -> Path:
    from models.tmvml.experiment import claim_numbers

    dest.mkdir(parents=True, exist_ok=True)
    summary = claim_numbers(planted, fits, metrics, "real") | {"source": "yeast", "data": "Yeast (test)"}
    (dest / "summary.json").write_text(json.dumps(summary))
    return dest


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


def _tnn_as_ltr() -> pd.DataFrame:
    p = _planted()
    tnn = p[p.penalty == "tnn"]
    return pd.concat([tnn, tnn.assign(penalty="ltr")], ignore_index=True)


def test_the_method_holds_the_planted_and_convergence_claims(root, tmp_path):
    folder = evaluated(tmp_path, _planted(), _fits(), _metrics("ltr"))
    for claim_id in ("tighter_surrogate", "rank_recovered", "converges", "yeast_level"):
        assert verdict(root, claim_id, folder)["passed"] == 1, claim_id


def test_tnn_in_place_of_ltr_fails_tighter_surrogate(root, tmp_path):
    v = verdict(root, "tighter_surrogate", evaluated(tmp_path, _tnn_as_ltr(), _fits(), _metrics("ltr")))
    assert v["passed"] == 0 and v["value"] == 1.0


def test_tnn_in_place_of_ltr_fails_rank_recovered(root, tmp_path):
    v = verdict(root, "rank_recovered", evaluated(tmp_path, _tnn_as_ltr(), _fits(), _metrics("ltr")))
    assert v["passed"] == 0 and v["value"] == 0.0


def test_fixed_rho_and_a_flipped_dual_step_fail_converges(root, tmp_path):
    fixed = verdict(
        root, "converges", evaluated(tmp_path / "fixed", _planted(), _fits(mu=1.0), _metrics("ltr"))
    )
    assert fixed["passed"] == 0 and fixed["value"] == 301
    flipped = _fits(dual_sign=-1.0)
    v = verdict(root, "converges", evaluated(tmp_path / "flipped", _planted(), flipped, _metrics("ltr")))
    assert v["passed"] == 0 and v["value"] == 301


def test_label_frequency_ranker_fails_yeast_level(root, tmp_path):
    v = verdict(root, "yeast_level", evaluated(tmp_path, _planted(), _fits(), _metrics("freq")))
    assert v["passed"] == 0 and 0.68 < v["value"] < 0.72
