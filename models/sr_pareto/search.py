"""A data set's whole search, the train stage's driver, with (X, y) standardised (X columns and y z-scored, so
that R^2 = 1 - mean((y_z - e(X_z; c))^2)):

- the fast path over every tree up to the maximum length (closed-form constants where the expression is linear in
  them, batched Levenberg-Marquardt elsewhere), then BFGS refinement of each length's ``refine_top`` best;
- the paper's protocol with BFGS (one scipy run from 2 U(0,1)^k - 1, the seed re-set per expression) on every
  tree up to ``protocol_max_length``;
- on the Karva data sets, the official search space fitted on its own: the Karva space of head length
  ``karva_head`` enumerated by :func:`.grammar.enumerate_karva` (not a filter of the trees above), every
  expression of it fitted by the same BFGS protocol (those up to ``protocol_max_length`` are the protocol fits
  above: the same expression, start and optimiser give the same numbers, so they are not run twice); and the
  fast path applied to that space (the fast fits of its expressions, then BFGS refinement of the Karva space's own
  ``refine_top`` best of each length), the fast path's counterpart on the same expressions;
- on the optimiser data sets, each of the eight scipy optimisers from the paper's start on one candidate set of
  the expressions of ``optimizer_length`` that hold a constant: the fast path's ``optimizer_top`` best of them
  and a seeded uniform sample of ``optimizer_sample`` of the others (:func:`optimizer_candidates`).

What the evaluate stage builds from its tables is in :mod:`models.sr_pareto.evaluation` (kept apart so that an
edit there does not re-run the search).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .fit import OPTIMIZERS, Fit
from .front import evaluate_all, expressions, refine_front, standardize
from .grammar import OPS, Expr, length, n_constants


def optimizer_candidates(
    exprs: Sequence[Expr], fits: Sequence[Fit], at_length: int, top: int, sample: int, seed: int
) -> list[Expr]:
    """The optimisers' common candidate set: of the expressions of length ``at_length`` holding at least one
    constant, the ``top`` best by the fast path's R^2 (ties in enumeration order; invalid fits last) and
    ``sample`` more drawn uniformly without replacement from the rest (``icml25.random`` stream
    "optimizer_sample"), in enumeration order."""
    from icml25 import random

    idx = [i for i, e in enumerate(exprs) if length(e) == at_length and n_constants(e)]
    ranked = sorted(
        idx, key=lambda i: (math.isnan(fits[i].r2), -fits[i].r2 if not math.isnan(fits[i].r2) else 0)
    )
    best = ranked[:top]
    rest = sorted(ranked[top:])
    drawn = random.rng(seed, "optimizer_sample").choice(len(rest), size=min(sample, len(rest)), replace=False)
    return [exprs[i] for i in sorted(best + [rest[j] for j in drawn])]


def fit_dataset(
    X: np.ndarray,
    y: np.ndarray,
    max_length: int,
    seed: int,
    refine_top: int,
    protocol_max_length: int,
    karva_head: int | None = None,
    optimizers: dict[str, int] | None = None,
    ops: tuple[str, ...] = OPS,
) -> dict[str, Any]:
    """Every expression of one data set (X rows x features, y): the fast path over all trees up to
    ``max_length`` (then BFGS refinement of each length's ``refine_top`` best), the paper's BFGS protocol up to
    ``protocol_max_length``; when ``karva_head`` is given, the Karva space of that head length fitted on its own
    (protocol and fast path); when ``optimizers`` is given (``length``, ``top``, ``sample``), each of the eight
    optimisers on the candidates of :func:`optimizer_candidates`. ``ops`` restricts the grammar (tests).

    Returns ``exprs`` (every tree), ``fast`` (one Fit each), ``refined`` (how many were refined), ``protocol``
    (the BFGS protocol's (expressions, Fits)), ``karva`` (None, or :func:`fit_karva`'s dict), ``optimizers``
    ({optimiser: (candidates, Fits)}, empty when not run), ``y_var`` (the variance of y, to put MSE back in
    y's units) and ``cpu_s`` (this process's CPU seconds, for the log)."""
    start = time.process_time()
    Xt, yz, _ = standardize(X, y)
    d = Xt.shape[0]
    exprs = expressions(d, max_length, ops=ops)
    fast = evaluate_all(exprs, Xt, yz, "fast", seed)
    fast, refined = refine_front(exprs, fast, Xt, yz, seed, refine_top)
    out: dict[str, Any] = {"exprs": exprs, "fast": fast, "refined": refined, "karva": None, "optimizers": {}}
    small = [e for e in exprs if length(e) <= protocol_max_length]
    small_fits = evaluate_all(small, Xt, yz, "BFGS", seed)
    out["protocol"] = (small, small_fits)
    if karva_head is not None:
        out["karva"] = fit_karva(
            Xt, yz, karva_head, max_length, seed, refine_top, (small, small_fits), (exprs, fast), ops
        )
    if optimizers is not None:
        cands = optimizer_candidates(
            exprs, fast, optimizers["length"], optimizers["top"], optimizers["sample"], seed
        )
        for opt in OPTIMIZERS:
            out["optimizers"][opt] = (cands, evaluate_all(cands, Xt, yz, opt, seed))
    out["y_var"] = float(np.var(y))
    out["cpu_s"] = time.process_time() - start  # for the log only (never written to an output)
    return out


def fit_karva(
    Xt: np.ndarray,
    yz: np.ndarray,
    head: int,
    max_length: int,
    seed: int,
    refine_top: int,
    protocol: tuple[Sequence[Expr], Sequence[Fit]],
    fast: tuple[Sequence[Expr], Sequence[Fit]],
    ops: tuple[str, ...] = OPS,
) -> dict[str, Any]:
    """The Karva space of head length ``head`` (lengths <= ``max_length``) on standardised data: every
    expression fitted by the paper's BFGS protocol (taken from ``protocol`` where it already ran on that
    expression: the same computation), and the fast path's fits of its expressions (from ``fast``) refined with
    the space's own ``refine_top`` best of each length."""
    space = expressions(Xt.shape[0], max_length, f"karva{head}", ops)
    done = dict(zip(protocol[0], protocol[1], strict=True))
    todo = [e for e in space if e not in done]
    new = dict(zip(todo, evaluate_all(todo, Xt, yz, "BFGS", seed), strict=True))
    prot = [done[e] if e in done else new[e] for e in space]
    where = {e: i for i, e in enumerate(fast[0])}
    missing = [e for e in space if e not in where]
    if missing:  # the Karva space is a subset of all trees (grammar.enumerate_karva canonicalises)
        raise AssertionError(f"{len(missing)} Karva expressions are not among the trees, e.g. {missing[0]}")
    kfast, refined = refine_front(space, [fast[1][where[e]] for e in space], Xt, yz, seed, refine_top)
    return {"protocol": (space, prot), "fast": (space, kfast), "refined": refined, "fitted": len(todo)}
