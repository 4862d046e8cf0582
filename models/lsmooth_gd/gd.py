"""The analytic experiments: test functions with a known ell, and gradient descent with each step rule.

Test functions (each ell bounds the Hessian's operator norm by the Euclidean gradient norm everywhere):
- ``cosh``: f = sum_i cosh x_i; hess = diag(cosh x_i), ||grad|| >= max |sinh x_i| and cosh <= 1 + |sinh|, so
  ell(s) = 1 + s. Minimum 0 at x = 0 (f* = d).
- ``quartic``: f = x^4/4 + x^2/2; f'' = 3 x^2 + 1 and |f'| = |x^3 + x| >= |x|^3, so ell(s) = 1 + 3 s^(2/3)
  (no closed form: the step is a quadrature).
- ``xlogx``: f = x - log x on x > 0 (+inf elsewhere); f'' = 1/x^2 and |f'| = |1 - 1/x|, so ell(s) = (1 + s)^2.

Step rules, gamma_k as a function of s_k = ||grad f(x_k)||:
- ``ell``: the paper's int_0^1 dv / ell(s_k (1 + v));
- ``1/ell(0)``: constant 1/L0 (GD for L-smooth functions with L = ell(0));
- ``1/ell(s0)``: constant 1/ell(||grad f(x0)||) (the conservative constant step of Li et al. 2024);
- ``1/ell(s)``: 1/ell(s_k) ((L0, L1)-GD's 1/(L0 + L1 s_k) of Gorbunov et al. / Vankov et al., for any ell);
- ``clipped``: min(1/ell(0), c / s_k) with c = 1/(2 L1), L1 = ell(1) - ell(0) (clipped GD, Zhang et al. 2020);
- ``normalized``: eta / s_k with a fixed eta (normalised GD).
A run stops at ||grad f|| <= tol, at max_iter, or when f becomes +inf / NaN (diverged: outside the domain or
overflow). Each step records f_k, s_k, gamma_k and whether f(x_{k+1}) <= f(x_k) - gamma_k s_k^2 / 2 (to
rounding: a relative slack of 1e-12 |f(x_k)|).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .ell import Ell, step_size


@dataclass(frozen=True)
class TestFunction:
    name: str
    ell: Ell
    f: object
    grad: object


def _cosh_f(x):
    with np.errstate(over="ignore"):
        return float(np.sum(np.cosh(x)))


def _cosh_g(x):
    with np.errstate(over="ignore"):
        return np.sinh(x)


def _quartic_f(x):
    return float(np.sum(x**4 / 4 + x**2 / 2))


def _quartic_g(x):
    return x**3 + x


def _xlog_f(x):
    if np.any(x <= 0):
        return math.inf
    return float(np.sum(x - np.log(x)))


def _xlog_g(x):
    return 1.0 - 1.0 / x


FUNCTIONS = {
    "cosh": TestFunction("cosh", Ell.affine(1.0, 1.0), _cosh_f, _cosh_g),
    "quartic": TestFunction("quartic", Ell.parse("1 + 3 * s ** (2/3)"), _quartic_f, _quartic_g),
    "xlogx": TestFunction("xlogx", Ell.square(1.0, 1.0), _xlog_f, _xlog_g),
}
RULES = ("ell", "1/ell(0)", "1/ell(s0)", "1/ell(s)", "clipped", "normalized")


@dataclass
class Run:
    rule: str
    converged: bool = False
    diverged: bool = False
    iterations: int = 0
    f: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    gamma: list[float] = field(default_factory=list)
    descent_ok: list[bool] = field(default_factory=list)

    @property
    def final_grad_norm(self) -> float:
        return self.grad_norm[-1]


def gamma_rule(rule: str, ell: Ell, s: float, s0: float, eta: float = 0.1) -> float:
    if rule == "ell":
        return step_size(ell, s)
    if rule == "1/ell(0)":
        return 1.0 / ell(0.0)
    if rule == "1/ell(s0)":
        return 1.0 / ell(s0)
    if rule == "1/ell(s)":
        return 1.0 / ell(s)
    if rule == "clipped":
        L1 = max(ell(1.0) - ell(0.0), 1e-12)
        return min(1.0 / ell(0.0), 1.0 / (2 * L1 * s)) if s > 0 else 1.0 / ell(0.0)
    if rule == "normalized":
        return eta / s if s > 0 else 0.0
    raise ValueError(f"unknown step rule {rule!r}; one of {', '.join(RULES)}")


def run_gd(
    fn: TestFunction, x0, rule: str, max_iter: int = 10_000, tol: float = 1e-8, eta: float = 0.1
) -> Run:
    """Gradient descent on ``fn`` from x0 with a step rule; records every step (see the module docstring)."""
    x = np.array(x0, dtype=float)
    run = Run(rule)
    fx = fn.f(x)
    g = fn.grad(x)
    s = float(np.linalg.norm(g))
    s0 = s
    for k in range(max_iter + 1):
        run.f.append(fx)
        run.grad_norm.append(s)
        if not (math.isfinite(fx) and math.isfinite(s)):
            run.diverged, run.iterations = True, k
            return run
        if s <= tol:
            run.converged, run.iterations = True, k
            return run
        if k == max_iter:
            break
        gamma = gamma_rule(rule, fn.ell, s, s0, eta)
        with np.errstate(over="ignore", invalid="ignore"):
            x = x - gamma * g
            fnew = fn.f(x)
            g = fn.grad(x)
        run.gamma.append(gamma)
        run.descent_ok.append(bool(fnew <= fx - gamma * s * s / 2 + 1e-12 * abs(fx)))
        fx = fnew
        s = float(np.linalg.norm(g)) if np.all(np.isfinite(g)) else math.inf
    run.iterations = max_iter
    return run


def analytic_suite(
    dim: int,
    cosh_starts: tuple[float, ...],
    main_start: float,
    quartic_x0: float,
    xlogx_x0: float,
    max_iter: int,
    tol: float,
) -> tuple[list[dict], list[dict]]:
    """The paper's step (``ell``) on every function and start, and every comparator rule on each function (on
    cosh from ``main_start`` only): one row per run (iterations, converged, diverged, final gradient norm, descent
    violations, steps) and the gradient-norm traces (about 200 log-spaced iterations per run) of the ``ell``
    runs and of every rule on cosh from ``main_start``."""
    runs, traces = [], []
    cases = [("cosh", c, np.full(dim, c)) for c in cosh_starts]
    cases += [("quartic", quartic_x0, np.array([quartic_x0])), ("xlogx", xlogx_x0, np.array([xlogx_x0]))]
    for name, start, x0 in cases:
        for rule in RULES:
            if rule != "ell" and not (name != "cosh" or start == main_start):
                continue  # comparators: every function, but only the main cosh start
            r = run_gd(FUNCTIONS[name], x0, rule, max_iter=max_iter, tol=tol)
            runs.append(
                {
                    "function": name,
                    "start": start,
                    "rule": rule,
                    "iterations": r.iterations,
                    "converged": r.converged,
                    "diverged": r.diverged,
                    "final_grad_norm": r.final_grad_norm if math.isfinite(r.final_grad_norm) else "inf",
                    "descent_violations": int(np.sum(~np.array(r.descent_ok, dtype=bool))),
                    "steps": len(r.gamma),
                }
            )
            if name == "cosh" and start == main_start or rule == "ell":
                keep = np.unique(np.geomspace(1, len(r.grad_norm), 200).astype(int) - 1)
                traces += [
                    {"function": name, "start": start, "rule": rule, "k": int(k), "grad_norm": r.grad_norm[k]}
                    for k in keep
                ]
    return runs, traces
