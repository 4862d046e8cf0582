"""lsmooth_gd: the claims against stubs. Each test writes an evaluated folder with evaluate's own writer
(models/lsmooth_gd/evaluation.py, the quick profile's evaluate params) from a stub or broken step rule, and
computes the claims through the report's claim functions (tests.helpers.claim_verdict): the broken rule fails
the claims named in each test. The control, the paper's rule holding every claim, is the smoke pipeline's report
(test_pipeline.py) and the committed quick-profile report."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from models.lsmooth_gd import ell as ell_module
from models.lsmooth_gd import gd as gd_module
from models.lsmooth_gd.evaluation import write_evaluated
from tests.helpers import claim_verdict, paper_params

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the diverging stubs

SLUG = "lsmooth_gd"
CLAIMS = (
    "converges_cosh",
    "descent_inequality",
    "fixed_step_diverges",
    "conservative_step_stalls",
    "log_dependence",
    "closed_form_matches_quadrature",
)


def evaluated(root: Path, folder: Path, **changes) -> Path:
    """``folder`` written by evaluate's writer with params.yaml's evaluate section (with ``changes``)."""
    folder.mkdir(parents=True, exist_ok=True)
    ev = SimpleNamespace(**{**paper_params(root, SLUG)["papers"][SLUG]["evaluate"], **changes})
    write_evaluated(folder, ev, np.random.default_rng(0))
    return folder


def passed(root: Path, folder: Path, ids: tuple[str, ...] = CLAIMS) -> dict[str, int]:
    return {c: claim_verdict(root, SLUG, c, folder)["passed"] for c in ids}


def test_a_fixed_step_fails_convergence_and_the_log_dependence(root, tmp_path, monkeypatch):
    """converges_cosh and log_dependence fail when the ell step is replaced by a fixed step: 1/ell(0) (GD for
    L-smooth functions), diverges at the first step from every cosh start."""
    monkeypatch.setattr(gd_module, "step_size", lambda ell, s, method="auto": 1.0 / ell(0.0))
    folder = evaluated(
        root, tmp_path / "evaluated", max_iter=300
    )  # it diverges at once: no need for 10^4 steps
    got = passed(root, folder, ("converges_cosh", "log_dependence"))
    assert got == {"converges_cosh": 0, "log_dependence": 0}


def test_comparators_that_re_evaluate_ell_fail_the_comparator_claims(root, tmp_path, monkeypatch):
    """fixed_step_diverges and conservative_step_stalls fail when the constant-step comparators are not
    constant: a 1/ell(0) and a 1/ell(||grad f(x0)||) rule that evaluate ell at the current gradient norm (the
    (L0, L1)-GD step, which converges on cosh in 101 iterations)."""
    real_rule = gd_module.gamma_rule

    def broken(rule, ell, s, s0, eta=0.1):
        return 1.0 / ell(s) if rule in ("1/ell(0)", "1/ell(s0)") else real_rule(rule, ell, s, s0, eta)

    monkeypatch.setattr(gd_module, "gamma_rule", broken)
    ids = ("fixed_step_diverges", "conservative_step_stalls", "converges_cosh")
    got = passed(root, evaluated(root, tmp_path / "evaluated"), ids)
    assert got == {
        "fixed_step_diverges": 0,
        "conservative_step_stalls": 0,
        "converges_cosh": 1,
    }  # ell untouched


def test_the_implementation_checks_catch_a_doubled_step_and_a_wrong_closed_form(root, tmp_path, monkeypatch):
    """The invariants (descent_inequality: Lemma 4.5 for the computed step; closed_form_matches_quadrature)
    hold for the paper's step by proof, so they are implementation checks: a step twice too long breaks the
    descent inequality, and the (L0, L1) step written as 1/(L0 + L1 s) breaks the closed-form check."""
    real_step = ell_module.step_size
    monkeypatch.setattr(gd_module, "step_size", lambda ell, s, method="auto": 2 * real_step(ell, s, method))

    def wrong_closed_form(ell, s, method="auto"):
        if method == "auto" and ell.kind == "affine" and s > 0:
            return 1.0 / ell(s)
        return real_step(ell, s, method)

    monkeypatch.setattr(ell_module, "step_size", wrong_closed_form)
    ids = ("descent_inequality", "closed_form_matches_quadrature")
    got = passed(root, evaluated(root, tmp_path / "evaluated", max_iter=300), ids)
    assert got == dict.fromkeys(ids, 0)
