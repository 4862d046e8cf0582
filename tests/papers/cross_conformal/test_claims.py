"""cross_conformal: the claims against stubs. Each test fits a small OLS simulation (n = 100, K = 5, as the
quick profile; fewer replicates with several test points each) with the experiment's own drivers, evaluates it
with a stub or broken method swapped in, writes the evaluated folder with evaluate's own writer
(experiment.write_evaluated) and computes the claims through the report's claim functions
(tests.helpers.claim_verdict). The real method holds every claim on the same data (the control)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from models.cross_conformal import core
from models.cross_conformal import experiment as ex
from models.cross_conformal.data import ols_simulation
from tests.helpers import claim_verdict

SLUG = "cross_conformal"
N, K, ALPHA = 100, 5, 0.1
P_GRID = (20, 60)  # below the interpolation threshold n (K - 1)/K = 80, where the quick profile's claims read
REPS, N_TEST = 30, 10
CLAIMS = ("mod_coverage", "variants_coverage", "variants_smaller", "nesting", "vovk_identity")


@pytest.fixture(scope="module")
def prepared() -> dict[int, dict[str, np.ndarray]]:
    """The prepared simulation per p, as the prepare stage draws it (X, y with the test rows last, folds, split)."""
    out = {}
    for p in P_GRID:
        rng = np.random.default_rng(p)
        X, y, beta = ols_simulation(rng, N, p, REPS, N_TEST)
        folds, split = ex.replicate_folds(N, K, REPS, rng)
        out[p] = {"X": X, "y": y, "beta": beta, "folds": folds, "split": split}
    return out


@pytest.fixture(scope="module")
def fits(prepared) -> dict[int, dict[str, np.ndarray]]:
    """The fits of every p (experiment.train_simulation, as the train stage; no jackknife+)."""
    return {p: ex.train_simulation(d, N, jackknife=False) for p, d in prepared.items()}


def evaluated(prepared, fits, folder: Path) -> Path:
    """Evaluate (experiment.evaluate_simulation) every p with the code as it is when called (a test patches what
    it breaks), and write the folder as evaluate does."""
    folder.mkdir(parents=True, exist_ok=True)
    checks = {k: ex.new_checks() for k in ("simulation", "real")}
    records = []
    for p, d in prepared.items():
        records += ex.evaluate_simulation(
            d,
            fits[p],
            n=N,
            p=p,
            K=K,
            alpha=ALPHA,
            u=np.random.default_rng(p + 1).random((REPS, N_TEST)),
            grid_factor=1.0,
            grid_points=200,
            full_conformal=False,
            mapie_seeds=None,
            checks=checks["simulation"],
        )
    ex.write_evaluated(folder, records, checks, alpha=ALPHA, sets="exact", n=N, K=K)
    return folder


def verdicts(root: Path, folder: Path, ids: tuple[str, ...] = CLAIMS) -> dict[str, dict]:
    return {c: claim_verdict(root, SLUG, c, folder) for c in ids}


def passed(got: dict[str, dict]) -> dict[str, int]:
    return {c: r["passed"] for c, r in got.items()}


def test_the_real_method_holds_every_claim(root, tmp_path, prepared, fits):
    assert passed(verdicts(root, evaluated(prepared, fits, tmp_path / "evaluated"))) == dict.fromkeys(
        CLAIMS, 1
    )


def test_in_sample_residuals_fail_the_coverage_claims(root, tmp_path, monkeypatch, prepared, fits):
    """An off-by-one fold index: fold k's points scored by mu_{-(k-1)}, a model that trained on them, so the
    "out-of-fold" residuals are in-sample and too small once p is a sizeable fraction of n: mod_coverage and
    variants_coverage fail (the fold predictions at the test points are the real ones)."""
    from sklearn.base import clone

    real_fit_cross = ex.fit_cross

    def shifted(estimator, X, y, folds, x_test):
        _, mu = real_fit_cross(estimator, X, y, folds, x_test)
        K = int(folds.max()) + 1
        res = []
        for k in range(K):
            model = clone(estimator).fit(X[folds != k], y[folds != k])
            scored = folds == (k + 1) % K
            res.append(np.abs(y[scored] - model.predict(X[scored])))
        return np.stack(res), mu

    monkeypatch.setattr(ex, "fit_cross", shifted)
    broken = {**fits, 60: ex.train_simulation(prepared[60], N, jackknife=False)}  # p = 20 keeps the real fits
    folder = evaluated(prepared, broken, tmp_path / "evaluated")
    got = verdicts(root, folder, ("mod_coverage", "variants_coverage"))
    assert passed(got) == {"mod_coverage": 0, "variants_coverage": 0}, got


def _broken_member(kind: str):
    """core.member with the e-statistic (and so eu, which uses it) broken: ``kind`` "fold_min" takes the minimum
    of the fold p-values min_k p_k instead of the running means min_k pbar_k; "mod" returns mod-cross's
    membership for every variant (e, u, eu: a variant that changes nothing)."""
    real = core.member

    def member(name, level, counts, m, u=None, totals=None):
        if kind == "mod" and name in ("e", "u", "eu"):
            return real("mean", level, counts, m, u, totals)
        if kind == "fold_min" and name in ("e", "eu"):
            ok = np.all(1 + counts > math.floor(level * (m + 1)), axis=-1)  # every p_k > level
            if name == "eu":
                ok &= (1 + counts[..., 0]) / (m + 1.0) > float(level) * (2.0 - core._u_like(u, counts))
            return ok
        return real(name, level, counts, m, u, totals)

    return member


def test_a_fold_minimum_e_statistic_fails_variants_coverage(root, tmp_path, monkeypatch, prepared, fits):
    """e-mod built on min_k p_k (each fold's split-conformal p-value) instead of min_k pbar_k (running means) is
    not a valid 2-alpha p-value: variants_coverage (worst of coverage + 3 SE) fails; mod-cross is untouched."""
    monkeypatch.setattr(core, "member", _broken_member("fold_min"))
    got = verdicts(
        root, evaluated(prepared, fits, tmp_path / "evaluated"), ("variants_coverage", "mod_coverage")
    )
    assert passed(got) == {"variants_coverage": 0, "mod_coverage": 1}, got


def test_variants_returning_the_mod_set_fail_variants_smaller(root, tmp_path, monkeypatch, prepared, fits):
    """e-, u- and eu-mod that return mod-cross's set (a stub with the variants' names): coverage holds, and
    variants_smaller fails (every width ratio is 1)."""
    monkeypatch.setattr(core, "member", _broken_member("mod"))
    got = verdicts(
        root, evaluated(prepared, fits, tmp_path / "evaluated"), ("variants_smaller", "variants_coverage")
    )
    assert passed(got) == {"variants_smaller": 0, "variants_coverage": 1}, got
    assert got["variants_smaller"]["value"] == pytest.approx(1.0)
