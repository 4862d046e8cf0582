"""Fitting an expression's constants and scoring it: the paper's protocol and our fast path.

Data are standardised (X column-wise, y z-scored), so R^2 = 1 - mean((y - f(X; c))^2) on all rows, and the
published MSE is that mean times var(y) (original units).

Paper's protocol (``Code/APO_File_Generator.py``): ``scipy.optimize.minimize(MSE, x0, method=M)`` with default
options, x0 = 2 U(0, 1)^k - 1 drawn after re-seeding the generator with the run's seed before *each* expression.
A non-finite prediction or an optimiser error makes the expression invalid (no R^2).

Fast path (:mod:`.batch`, then :func:`.front.refine_front`): where an expression is linear in its constants,
f(X; c) = g_0(X) + sum_j c_j g_j(X) (decided symbolically, see :func:`degree`), the least-squares constants are
exact: c = argmin ||y - g_0 - G c|| with g_0 = f(X; 0), g_j = f(X; e_j) - g_0. Elsewhere a batched
Levenberg-Marquardt from the paper's start screens every expression; then the best candidates of each length
are refined by BFGS from their constants and from the paper's start (:func:`refine`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from .grammar import C, Expr, n_constants

OPTIMIZERS = ("BFGS", "CG", "L-BFGS-B", "Nelder-Mead", "Powell", "SLSQP", "TNC", "trust-constr")
NONLINEAR = 99


def degree(e: Expr, memo: dict | None = None) -> int:
    """Polynomial degree in the constants (NONLINEAR when not polynomial, e.g. a constant under Pow); ``memo`` (a
    dict kept across calls) holds the subtrees already seen."""
    if memo is not None and (got := memo.get(e)) is not None:
        return got
    if e == C:
        return 1
    if len(e) < 3:
        return 0
    op, a, b = e[0], degree(e[1], memo), degree(e[2], memo)
    if NONLINEAR in (a, b):
        d = NONLINEAR
    elif op in ("Add", "Sub"):
        d = max(a, b)
    elif op == "Mul":
        d = a + b
    elif op == "Div":
        d = a if b == 0 else NONLINEAR
    else:
        d = 0 if a == b == 0 else NONLINEAR  # Pow
    if memo is not None:
        memo[e] = d
    return d


def source(e: Expr) -> str:
    """numpy source of f(c, X); X is features x rows."""
    counter = iter(range(10**6))

    def walk(e: Expr) -> str:
        if e[0] == "x":
            return f"X[{e[1]}]"
        if e == C:
            return f"c[{next(counter)}]"
        a, b = walk(e[1]), walk(e[2])
        return {
            "Add": f"({a}+{b})",
            "Sub": f"({a}-{b})",
            "Mul": f"({a}*{b})",
            "Div": f"({a}/{b})",
            "Pow": f"_pow({a},{b})",
        }[e[0]]

    return walk(e)


def _pow(a, b):
    return np.power(np.abs(a), b)


def compile_expr(e: Expr):
    """f(c, X) -> predictions (broadcast to the rows)."""
    return eval(f"lambda c, X: {source(e)}", {"_pow": _pow, "np": np})  # noqa: S307 - our own generated source


@dataclass(frozen=True)
class Fit:
    r2: float  # NaN: invalid (non-finite prediction or optimiser failure)
    mse: float  # standardised units
    params: tuple[float, ...]
    nit: int


INVALID = Fit(math.nan, math.nan, (), 0)


def _mse(f, c, X, y) -> float:
    """mean((y - f(c, X))^2), inf when not finite (a prediction that is NaN or infinite anywhere makes the mean
    NaN or infinite: one pass, no separate check)."""
    with np.errstate(all="ignore"):
        m = float(np.mean((y - f(c, X)) ** 2))
    return m if math.isfinite(m) else math.inf


def _result(f, c, X, y, nit: int) -> Fit:
    m = _mse(f, np.asarray(c, dtype=float), X, y)
    if not math.isfinite(m):
        return INVALID
    return Fit(1.0 - m, m, tuple(float(v) for v in np.atleast_1d(c)), int(nit))


def paper_start(k: int, seed: int) -> np.ndarray:
    """x0 = 2 U(0,1)^k - 1 with the generator re-seeded for every expression (the official protocol)."""
    return 2.0 * np.random.RandomState(seed).rand(k) - 1.0


def _minimize(f, c0: np.ndarray, X: np.ndarray, y: np.ndarray, method: str) -> Fit:
    """One ``scipy.optimize.minimize`` of the MSE from ``c0`` with default options; an optimiser error or a
    non-finite result is INVALID."""
    cost = lambda c: _mse(f, c, X, y)  # noqa: E731
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            res = minimize(cost, c0, method=method)
    except (ValueError, FloatingPointError, np.linalg.LinAlgError, OverflowError):
        return INVALID
    return _result(f, res.x, X, y, getattr(res, "nit", 0))


def fit_protocol(
    e: Expr, X: np.ndarray, y: np.ndarray, method: str = "BFGS", seed: int = 11284, f=None
) -> Fit:
    """The paper's protocol: one local optimisation from the paper's random start."""
    f = f or compile_expr(e)
    k = n_constants(e)
    if k == 0:
        return _result(f, np.zeros(0), X, y, 0)
    return _minimize(f, paper_start(k, seed), X, y, method)


def refine(e: Expr, X: np.ndarray, y: np.ndarray, start: Fit, seed: int = 11284, f=None) -> Fit:
    """The best of ``start`` and BFGS runs from its constants and from the paper's start."""
    f = f or compile_expr(e)
    best = start
    if n_constants(e) == 0:
        return best
    from_start = _minimize(f, np.asarray(start.params), X, y, "BFGS") if start.params else INVALID
    for fit in (fit_protocol(e, X, y, "BFGS", seed, f), from_start):
        if not math.isnan(fit.r2) and (math.isnan(best.r2) or fit.r2 > best.r2):
            best = fit
    return best
