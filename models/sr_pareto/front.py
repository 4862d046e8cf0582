"""Absolute Pareto-optimal (APO) fronts: every expression of the grammar up to a length, fitted and scored;
the front holds the best expression of each length, in the published column format.

Columns (``Extracted_APO_Fronts/*_summary.csv``): EquationLength, EquationStructure (``xdata[i]`` features,
``x[j]`` constants), EquationParameters (the numpy-printed constants), NumericalIterations (the optimiser's
``nit``; 0 for closed-form or constant-free fits), MSE (original y units), R2 (training R^2 on all rows).

Every enumerated expression is evaluated: the work is cut into chunks that cover the whole list (the official
generator drops the remainder chunk), and :func:`evaluate_all` returns one result per expression.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence

import numpy as np

from .fit import OPTIMIZERS, Fit, compile_expr, fit_protocol, refine
from .grammar import OPS, Expr, enumerate_full, enumerate_karva, length, show

COLUMNS = ["EquationLength", "EquationStructure", "EquationParameters", "NumericalIterations", "MSE", "R2"]


class ScaleError(ValueError):
    """A target whose squared errors cannot be represented in float64 (its variance overflows or underflows)."""


_TINY = float(np.finfo(float).tiny)


def _zscore(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(v - mean) / std`` per column, var(v) and log10 std(v), for columns of any finite scale.

    The direct computation squares v: a column of scale 1e300 overflows (std = inf, every z-score 0) and one of
    scale 1e-300 underflows (std = 0). Such a column is z-scored as v / max|v| instead (the same z-scores up to
    rounding); columns the direct computation handles keep its exact values. The variance returned is the
    true one, which can itself be inf or 0 when beyond float64."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        z, var = (v - v.mean(axis=0)) / v.std(axis=0), v.var(axis=0)
        m = np.max(np.abs(v), axis=0)
        m = np.where(m > 0, m, 1.0)
        u = v / m
        su = u.std(axis=0)
        zu = (u - u.mean(axis=0)) / su
        log_std = np.log10(su) + np.log10(m)
        fine = np.isfinite(var) & (var >= _TINY) & np.all(np.isfinite(z), axis=0)
        return np.where(fine, z, zu), np.where(fine, var, (su * m) ** 2), log_std


def standardize(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """z-score the columns of X (rows x features) and y; returns X^T (features x rows), y_z and var(y).

    Any finite scale of X and y is z-scored correctly (see :func:`_zscore`). MSE is reported in y's units, that
    is the standardised MSE times var(y): a y whose variance overflows float64 (std above ~1e154) or underflows
    it (std below ~1e-154) raises :class:`ScaleError` rather than giving R2 = 1.0 with an empty MSE."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    Xs, _, _ = _zscore(X)
    yz, y_var, log_std = _zscore(y)
    if not (math.isfinite(y_var) and y_var >= _TINY):
        if np.isfinite(log_std):  # not constant: a scale float64 cannot square
            e = round(float(log_std))
            how = f"divide it by 1e{e}" if e > 0 else f"multiply it by 1e{-e}"
            raise ScaleError(
                f"the target's standard deviation is about 1e{e}: its variance, and so the MSE column, "
                f"{'overflows' if e > 0 else 'underflows'} float64; rescale the target ({how})"
            )
    return Xs.T.copy(), yz, float(y_var)


def expressions(
    n_features: int, max_length: int, enumeration: str = "full", ops: tuple[str, ...] = OPS
) -> list[Expr]:
    """``full``: every tree; ``karva3`` / ``karva4``: the official Karva space with head length 3 / 4 (its
    expressions up to ``max_length``); ``ops`` restricts the operators (a smaller grammar for tests)."""
    if enumeration == "full":
        by_len = enumerate_full(n_features, max_length, ops)
    elif enumeration.startswith("karva"):
        by_len = enumerate_karva(n_features, int(enumeration[5:]), ops)
    else:
        raise ValueError(f"unknown enumeration {enumeration!r}")
    return [e for n, es in sorted(by_len.items()) if n <= max_length for e in es]


def _fit_chunk(chunk: Sequence[Expr], X, y, method: str, seed: int) -> list[Fit]:
    if method == "fast":
        from .batch import fit_batched

        return fit_batched(chunk, X, y, seed)
    return [fit_protocol(e, X, y, method, seed, compile_expr(e)) for e in chunk]


def evaluate_all(
    exprs: Sequence[Expr],
    X: np.ndarray,
    y: np.ndarray,
    method: str = "fast",
    seed: int = 11284,
    n_jobs: int = 1,
    chunk: int = 20000,
    progress: Callable[[int], None] | None = None,
) -> list[Fit]:
    """One :class:`Fit` per expression (method ``fast`` or one of the eight scipy optimisers)."""
    if method != "fast" and method not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {method!r}; one of fast, {', '.join(OPTIMIZERS)}")
    chunks = [exprs[i : i + chunk] for i in range(0, len(exprs), chunk)]
    results: list[Fit] = []
    if n_jobs == 1:
        for c in chunks:
            results += _fit_chunk(c, X, y, method, seed)
            if progress:
                progress(len(c))
    else:
        from joblib import Parallel, delayed

        for part, c in zip(
            Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(_fit_chunk)(c, X, y, method, seed) for c in chunks
            ),
            chunks,
            strict=True,
        ):
            results += part
            if progress:
                progress(len(c))
    assert len(results) == len(exprs)
    return results


def results_table(exprs: Sequence[Expr], fits: Sequence[Fit]):
    """One row per expression: its printed form, length, R^2 (NaN: invalid), MSE (standardised), constants
    (space-separated reprs) and iterations: what the train stage stores and every front is read from."""
    import pandas as pd

    return pd.DataFrame(
        {
            "expression": [show(e) for e in exprs],
            "length": [length(e) for e in exprs],
            "r2": [f.r2 for f in fits],
            "mse": [f.mse for f in fits],
            "params": [" ".join(repr(v) for v in f.params) for f in fits],
            "nit": [f.nit for f in fits],
        }
    )


def best_by_length(table):
    """The front of a results table: the first row of maximal R^2 at each length (NaN rows are invalid)."""
    valid = table[table.r2.notna()]
    return valid.loc[valid.groupby("length").r2.idxmax()].sort_values("length")


def structure(text: str) -> str:
    """``Add(Mul(c,x0),c)`` -> ``Add(Mul(x[0],xdata[0]),x[1])`` (the published EquationStructure)."""
    counter = itertools.count()
    text = re.sub(r"x(\d+)", r"xdata[\1]", text)
    return re.sub(r"\bc\b", lambda _: f"x[{next(counter)}]", text)


def published(front_table, y_var: float):
    """A front in the published columns; MSE back in y's original units."""
    import pandas as pd

    return pd.DataFrame(
        {
            "EquationLength": front_table.length.to_numpy(),
            "EquationStructure": [structure(s) for s in front_table.expression],
            "EquationParameters": [f"[{p}]" if isinstance(p, str) and p else "" for p in front_table.params],
            "NumericalIterations": front_table.nit.to_numpy(),
            "MSE": front_table.mse.to_numpy() * y_var,
            "R2": front_table.r2.to_numpy(),
        },
        columns=COLUMNS,
    )


def refine_front(
    exprs: Sequence[Expr], fits: list[Fit], X, y, seed: int = 11284, top: int = 25
) -> tuple[list[Fit], int]:
    """The fast path's second step: the ``top`` best candidates of each length are refined with scipy's BFGS,
    from their batched constants and from the paper's start (the protocol's own BFGS run); each keeps the best
    of its fits. Returns the updated fits and how many expressions were refined."""
    by_len: dict[int, list[int]] = {}
    for i, e in enumerate(exprs):
        by_len.setdefault(length(e), []).append(i)
    fits = list(fits)
    n = 0
    for idx in by_len.values():
        ranked = sorted(idx, key=lambda i: -fits[i].r2 if not math.isnan(fits[i].r2) else math.inf)
        for i in ranked[:top]:
            fits[i] = refine(exprs[i], X, y, fits[i], seed)
            n += 1
    return fits, n


def apo_front(
    X: np.ndarray,
    y: np.ndarray,
    max_length: int = 7,
    optimizer: str = "fast",
    enumeration: str = "full",
    seed: int = 11284,
    n_jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """The APO front of (X rows x features, y) in the published columns: standardise, enumerate, fit every
    expression (``fast``: closed form / batched LM, then BFGS refinement of the best; or one scipy optimiser
    from the paper's start), keep the best of each length."""
    Xt, yz, y_var = standardize(X, y)
    exprs = expressions(Xt.shape[0], max_length, enumeration)
    fits = evaluate_all(exprs, Xt, yz, optimizer, seed, n_jobs=n_jobs, progress=progress)
    if optimizer == "fast":
        fits, _ = refine_front(exprs, fits, Xt, yz, seed)
    return published(best_by_length(results_table(exprs, fits)), y_var).to_dict("records")
