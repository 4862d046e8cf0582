"""lsmooth_gd: the step-size rule (closed forms, limits, bounds), the safe ell parser, the optimizer, the
analytic runs (and a fixed-step stub failing them) and the CLI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from flows.cli import main as cli_main
from models.lsmooth_gd import Ell, step_size
from models.lsmooth_gd import gd as gd_module
from models.lsmooth_gd.gd import FUNCTIONS, run_gd


def test_constant_ell_gives_one_over_L():
    for L in (0.5, 3.0, 1e4):
        for s in (0.0, 1.0, 1e6):
            assert step_size(Ell.constant(L), s) == pytest.approx(1 / L)
            assert step_size(Ell.parse(str(L)), s, "quad") == pytest.approx(1 / L, rel=1e-12)


def test_closed_forms_limits_and_bounds():
    ell = Ell.affine(2.0, 3.0)
    assert step_size(ell, 0.0) == 0.5  # 1/ell(0)
    assert step_size(ell, 1e-9) == pytest.approx(0.5, rel=1e-8)  # s -> 0
    s = 1e12
    assert step_size(ell, s) == pytest.approx(math.log(2) / (3.0 * s), rel=1e-6)  # s -> inf: ln 2/(L1 s)
    sq = Ell.square(1.0, 1.0)
    assert step_size(sq, 4.0) == pytest.approx(1 / (5 * 9))  # 1/((1 + s)(1 + 2 s))
    assert step_size(sq, 1e-12) == pytest.approx(1.0)
    for e in (ell, sq, Ell.parse("1 + 3 * s ** (2/3)"), Ell.parse("2 + s^3")):
        for s in np.geomspace(1e-4, 1e6, 25):
            g = step_size(e, s)
            assert 1 / e(2 * s) * (1 - 1e-12) <= g <= 1 / e(s) * (1 + 1e-12)
            assert g == pytest.approx(step_size(e, s, "quad"), rel=1e-9)


def test_parser_recognises_the_families_and_refuses_the_rest():
    assert Ell.parse("1 + s").kind == "affine" and Ell.parse("1 + s").coef == (1.0, 1.0)
    assert Ell.parse("(1+s)^2").kind == "square" and Ell.parse("4").kind == "constant"
    assert Ell.parse("1 + 3*s**(2/3)").kind == "general"
    for bad, message in [
        ("1 - s", "must be positive"),
        ("2 / (1 + s)", "must be non-decreasing"),
        ("__import__('os').system('true')", "Call is not allowed"),
        ("s.real", "Attribute is not allowed"),
        ("1 + x", "unknown name 'x'"),
        ("1/s", "not defined at s = 0"),
        ("1 +", "not a valid expression"),
        ("[1]", "List is not allowed"),
    ]:
        with pytest.raises(ValueError, match=message):
            Ell.parse(bad)


def test_optimizer_step_equals_the_function_level_rule_on_a_quadratic():
    import torch

    from models.lsmooth_gd import LSmoothGD

    A = torch.diag(torch.tensor([1.0, 4.0, 9.0]))
    x = torch.tensor([3.0, -2.0, 1.0], requires_grad=True)
    opt = LSmoothGD([x], "2 + 0.5 * s")
    for _ in range(5):
        opt.zero_grad()
        (0.5 * x @ A @ x).backward()
        g = x.grad.detach().clone()
        before = x.detach().clone()
        opt.step()
        expected = before - step_size(Ell.affine(2.0, 0.5), float(g.norm())) * g
        assert torch.allclose(x.detach(), expected)
        assert opt.last_grad_norm == pytest.approx(float(g.norm()))


def test_optimizer_uses_the_norm_of_all_parameters_together():
    import torch

    from models.lsmooth_gd import LSmoothGD

    a = torch.tensor([3.0], requires_grad=True)
    b = torch.tensor([4.0], requires_grad=True)
    opt = LSmoothGD([{"params": [a]}, {"params": [b]}], Ell.affine(1.0, 1.0))
    (a**2 / 2 + b**2 / 2).sum().backward()
    opt.step()
    assert opt.last_grad_norm == pytest.approx(5.0)


def test_analytic_runs_match_the_calibration():
    iters = [run_gd(FUNCTIONS["cosh"], np.full(10, c), "ell").iterations for c in (10, 20, 30)]
    assert iters == [52, 98, 144]
    main = run_gd(FUNCTIONS["cosh"], np.full(10, 30.0), "ell")
    assert main.converged and all(main.descent_ok)
    assert run_gd(FUNCTIONS["cosh"], np.full(10, 30.0), "1/ell(0)").diverged
    quartic = run_gd(FUNCTIONS["quartic"], np.array([1e3]), "ell")
    xlog = run_gd(FUNCTIONS["xlogx"], np.array([1e-8]), "ell")
    assert quartic.converged and xlog.converged and all(quartic.descent_ok) and all(xlog.descent_ok)


def test_a_fixed_step_stub_fails_the_cosh_claims(monkeypatch):
    for fixed in (1.0, 1e-3):
        monkeypatch.setattr(gd_module, "step_size", lambda ell, s, method="auto", fixed=fixed: fixed)
        run = run_gd(FUNCTIONS["cosh"], np.full(10, 30.0), "ell", max_iter=200)
        assert not run.converged  # converges_cosh (<= 200 iterations) fails


def test_step_command_prints_gamma_last(capsys):
    assert cli_main(["lsmooth_gd", "step", "--ell", "1 + s", "--grad-norm", "5"]) == 0
    last = capsys.readouterr().out.split()[-1]
    assert float(last) == pytest.approx(math.log1p(5 / 6) / 5)
    assert cli_main(["lsmooth_gd", "step", "--ell", "1 + 3*s^(2/3)", "--grad-norm", "5"]) == 0
    assert "quadrature" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("ell", "norm", "message"),
    [("1 - s", "5", "must be positive"), ("exp(s)", "5", "Call is not allowed"), ("1 + s", "-1", ">= 0")],
)
def test_step_command_errors_are_one_line(capsys, ell, norm, message):
    assert cli_main(["lsmooth_gd", "step", "--ell", ell, "--grad-norm", norm]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("ell", "message"),
    [
        ("1" * 400, "a 400-digit number is beyond float64"),
        ("1" * 400 + " + s", "a 400-digit number is beyond float64"),
        ("1e400 + s", "the number '1e400' is beyond float64"),
        ("10**400", "overflows float64 at s = 0"),
        ("9^9^9^9", "overflows float64 at s = 0"),
        ("(1 + s)^1000", "overflows float64 at s = 10"),
        ("(" * 51 + "1 + s" + ")" * 51, "parentheses nested deeper than 50"),
        ("(" * 300 + "1 + s" + ")" * 300, "parentheses nested deeper than 50"),
        ("+".join(["s"] * 51), "operators nested deeper than 50"),
        ("-" * 60 + "s", "operators nested deeper than 50"),
        ("+".join(["1"] * 3000), "5999 characters long, at most 1000 allowed"),
    ],
)
def test_step_command_refuses_huge_numbers_and_deep_nesting_in_one_line(capsys, ell, message):
    """A 400-digit literal was an OverflowError traceback, 3,000 terms a RecursionError: now each is one short
    line (the expression is echoed cut to ~60 characters)."""
    assert cli_main(["lsmooth_gd", "step", f"--ell={ell}", "--grad-norm", "5"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and len(err) < 250, err
    assert "Traceback" not in err


def test_nesting_up_to_the_limit_still_parses():
    assert Ell.parse("(" * 50 + "1 + s" + ")" * 50).kind == "affine"
    assert Ell.parse("+".join(["s"] * 49) + " + 1").kind == "affine"
