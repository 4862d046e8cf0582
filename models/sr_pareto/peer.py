"""Peer baseline: the final population of a gplearn genetic-programming run, as (length, R^2) points.

Function set add/sub/mul only. gplearn's ``div`` is *protected* (it returns 1 where |denominator| < 0.001)
while the sr_pareto grammar's Div is the plain quotient; gplearn has no power function to match the
grammar's Pow(a, b) = |a|^b, and its unary functions (sqrt, log, neg, inv, ...) and max/min are not in the
binary-only grammar. With those left out, every gplearn program is literally an expression of the grammar
(add = Add, sub = Sub, mul = Mul, a feature X_i = x_i, a constant = c), with its constants frozen at whatever
values evolution left there. The exhaustive APO front fits the constants of every canonical
expression of length n, so each gplearn program of length n is a point that the front at length n must match
or beat. (One caveat: a constant-only subtree such as ``add(0.3, 0.5)`` collapses to a single c in the
grammar's canonical form, so that program's expression is counted at the shorter length it reduces to.)

Length is the paper's node count: binary operators + leaves, i.e. ``len(program.program)`` (gplearn stores
a program as its flattened prefix list of functions and terminals). All three functions have arity 2, so
lengths are odd: 1, 3, 5, 7, ...

R^2: X and y arrive standardised (y z-scored), so R^2 = 1 - mean((y - pred)^2), the same convention as
:mod:`models.sr_pareto.fit`. Note the layouts differ: here X is rows x features (gplearn's), there the
generated numpy source takes features x rows.

init_depth: in gplearn a program of depth d has at most 2^(d+1) - 1 nodes (depth 1: a function over two
leaves, 3 nodes; depth 2: up to 7; depth 3: up to 15) and every initial program starts with a function, so
initial lengths are >= 3. We ramp the depth over 1..floor(log2(max_length + 1)), which is (1, 3) at the
default max_length = 7: measured on planted data, about 69% of the initial programs then have length <= 7
(versus 23% at gplearn's default (2, 6)), while the depth-3 trees keep some longer material for crossover
and hoist/subtree mutation to cut down. Length-1 programs only appear through mutation.
"""

from __future__ import annotations

import math

import numpy as np

FUNCTION_SET = ("add", "sub", "mul")


def gplearn_population(
    X: np.ndarray,
    y: np.ndarray,
    seed: int,
    population_size: int = 500,
    generations: int = 10,
    max_length: int = 7,
) -> list[dict]:
    """Fit gplearn's SymbolicRegressor and return its final population's short programs.

    Returns one dict ``{"length": int, "r2": float, "program": str}`` per distinct program string (gplearn's
    printed form, constants to 3 decimals) of length <= ``max_length`` in the final generation, the best R^2
    kept where several programs print alike. Programs with a non-finite prediction are skipped.
    """
    from gplearn.genetic import SymbolicRegressor

    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    init_depth = (1, max(1, int(math.log2(max_length + 1))))
    est = SymbolicRegressor(
        function_set=FUNCTION_SET,
        population_size=population_size,
        generations=generations,
        random_state=seed,
        n_jobs=1,
        verbose=0,
        metric="mse",
        parsimony_coefficient=0.001,
        const_range=(-1.0, 1.0),
        init_depth=init_depth,
    )
    est.fit(X, y)

    best: dict[str, dict] = {}
    for program in est._programs[-1]:
        if program is None:
            continue
        n = len(program.program)
        if n > max_length:
            continue
        with np.errstate(all="ignore"):
            pred = program.execute(X)
        if not np.all(np.isfinite(pred)):
            continue
        r2 = float(1.0 - np.mean((y - pred) ** 2))
        text = str(program)
        if text not in best or r2 > best[text]["r2"]:
            best[text] = {"length": n, "r2": r2, "program": text}
    return list(best.values())
