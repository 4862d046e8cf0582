"""A data set's whole search, the train stage's driver, with (X, y) standardised (X columns and y z-scored, so
that R^2 = 1 - mean((y_z - e(X_z; c))^2)):

- the fast path over every tree up to the maximum length (closed-form constants where the expression is linear in
  them, batched Levenberg-Marquardt elsewhere), then BFGS refinement of each length's ``refine_top`` best;
- the paper's protocol with BFGS (one scipy run from 2 U(0,1)^k - 1, the seed re-set per expression) on the
  expressions up to ``protocol_max_length``;
- on the optimiser data sets, the same protocol with each of the eight scipy optimisers up to
  ``optimizers_max_length``.

What the evaluate stage builds from its tables is in :mod:`models.sr_pareto.evaluation` (kept apart so that an
edit there does not re-run the search).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fit import OPTIMIZERS
from .front import evaluate_all, expressions, refine_front, standardize
from .grammar import length


def fit_dataset(
    X: np.ndarray,
    y: np.ndarray,
    max_length: int,
    seed: int,
    refine_top: int,
    protocol_max_length: int,
    optimizers_max_length: int | None = None,
) -> dict[str, Any]:
    """Every expression of one data set (X rows x features, y): the fast path over all trees up to
    ``max_length`` (then BFGS refinement of each length's ``refine_top`` best), the paper's BFGS protocol up to
    ``protocol_max_length`` and, when ``optimizers_max_length`` is given, each of the eight optimisers up to it.

    Returns ``exprs`` (every expression), ``fast`` (one Fit each), ``refined`` (how many were refined),
    ``protocol`` ({optimiser: (its expressions, their Fits)}) and ``y_var`` (the variance of y, to put MSE back
    in y's units)."""
    Xt, yz, _ = standardize(X, y)
    exprs = expressions(Xt.shape[0], max_length)
    fast = evaluate_all(exprs, Xt, yz, "fast", seed)
    fast, refined = refine_front(exprs, fast, Xt, yz, seed, refine_top)
    out: dict[str, Any] = {"exprs": exprs, "fast": fast, "refined": refined, "protocol": {}}
    small = [e for e in exprs if length(e) <= protocol_max_length]
    out["protocol"]["BFGS"] = (small, evaluate_all(small, Xt, yz, "BFGS", seed))
    if optimizers_max_length is not None:
        few = [e for e in exprs if length(e) <= optimizers_max_length]
        for opt in OPTIMIZERS:
            out["protocol"][opt] = (few, evaluate_all(few, Xt, yz, opt, seed))
    out["y_var"] = float(np.var(y))
    return out
