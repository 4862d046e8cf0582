"""Absolute Pareto-optimal (APO) fronts: every expression of the grammar up to a length, fitted and scored;
the front holds the best expression of each length, in the published column format.

Columns (``Extracted_APO_Fronts/*_summary.csv``): EquationLength, EquationStructure (``xdata[i]`` features,
``x[j]`` constants), EquationParameters (the numpy-printed constants), NumericalIterations (the optimiser's
``nit``; 0 for closed-form or constant-free fits), MSE (original y units), R2 (training R^2 on all rows).

Every enumerated expression is evaluated: the work is cut into chunks that cover the whole list (the official
generator drops the remainder chunk), and :func:`evaluate_all` returns one result per expression.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .fit import OPTIMIZERS, Fit, compile_expr, fit_protocol, refine
from .grammar import Expr, enumerate_full, enumerate_karva, length, numbered

COLUMNS = ["EquationLength", "EquationStructure", "EquationParameters", "NumericalIterations", "MSE", "R2"]


def standardize(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """z-score the columns of X (rows x features) and y; returns X^T (features x rows), y_z and var(y)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    return Xs.T.copy(), (y - y.mean()) / y.std(), float(y.var())


def expressions(n_features: int, max_length: int, enumeration: str = "full") -> list[Expr]:
    """``full``: every tree; ``karva3`` / ``karva4``: the official Karva space with head length 3 / 4."""
    if enumeration == "full":
        by_len = enumerate_full(n_features, max_length)
    elif enumeration.startswith("karva"):
        by_len = enumerate_karva(n_features, int(enumeration[5:]))
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


@dataclass(frozen=True)
class Row:
    expr: Expr
    fit: Fit


def front(exprs: Sequence[Expr], fits: Sequence[Fit]) -> dict[int, Row]:
    """The best valid expression of each length (ties: the first in enumeration order)."""
    best: dict[int, Row] = {}
    for e, f in zip(exprs, fits, strict=True):
        if math.isnan(f.r2):
            continue
        n = length(e)
        if n not in best or f.r2 > best[n].fit.r2:
            best[n] = Row(e, f)
    return dict(sorted(best.items()))


def front_rows(best: dict[int, Row], y_var: float) -> list[dict]:
    rows = []
    for n, r in best.items():
        params = np.array2string(np.asarray(r.fit.params), precision=17) if r.fit.params else ""
        rows.append(
            {
                "EquationLength": n,
                "EquationStructure": numbered(r.expr),
                "EquationParameters": params,
                "NumericalIterations": r.fit.nit,
                "MSE": r.fit.mse * y_var,
                "R2": r.fit.r2,
            }
        )
    return rows


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
    return front_rows(front(exprs, fits), y_var)
