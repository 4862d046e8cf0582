"""The Python entry: UCB-OGD for any torch module and any source callables.

    from models.ucb_ogd import ucb_ogd
    res = ucb_ogd([src_a, src_b, src_c], torch.nn.Linear(64, 10), budget=2000, radius=10.0, seed=0)
    res.model, res.allocation, res.log.frame()

Each source is a callable returning one labelled sample (x, y) (x without a batch dimension, converted to the
dtype of the module's parameters; ``batched=True``
when a call returns a batch). A source with a required positional argument is called with its own NumPy
Generator (from ``seed``, named stream ``("source", k)``), so runs are reproducible; any other source is called
without arguments.
The round loop, the sampler and the projection are those of the experiments (``models.ucb_ogd.ogd``):
the module's parameters are theta (projected onto ||theta|| <= R together, starting with the initial model),
the loss is ``loss(model(x), y)`` (default: cross-entropy / ln C, C the number of outputs, so the uniform
prediction scores 1), observed once per sample, clipped to [0, 1], and OGD steps along its gradient with
eta = 2R / (G sqrt T). G is ``grad_bound`` when given; without it (and without ``lr``) eta uses the largest
gradient norm seen so far (ours: :class:`~models.ucb_ogd.ogd.RunningMaxStep`).
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .ogd import OUTPUTS, RoundLog, RunningMaxStep, run_rounds, step_size
from .sampler import Sampler, UCBSampler


@dataclass
class UCBOGDResult:
    """``model``: the output model (a copy of the module holding the average iterate, or the trained module for
    ``output="last"``); ``allocation``: labels per source (K,); ``log``: the round log (source and observed
    clipped loss per round; ``log.frame()`` as a DataFrame); ``sampler``: the sampler with its statistics."""

    model: Any
    allocation: np.ndarray
    log: RoundLog
    sampler: Sampler


def _takes_argument(fn: Callable) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is p.VAR_POSITIONAL
        or (p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)
        for p in params
    )


def scaled_cross_entropy(output: Any, y: Any) -> Any:
    """CE / ln C (C = output.shape[-1]): 1 at the uniform prediction, in [0, 1] wherever p_y >= 1 / C."""
    import torch.nn.functional as F

    return F.cross_entropy(output, y) / math.log(output.shape[-1])


def ucb_ogd(
    sources: Sequence[Callable],
    model: Any,
    budget: int,
    radius: float,
    seed: int = 0,
    *,
    loss: Callable[[Any, Any], Any] | None = None,
    lr: float | None = None,
    grad_bound: float | None = None,
    output: str = "average",
    grad_of_clipped: bool = False,
    batched: bool = False,
    sampler: Sampler | None = None,
) -> UCBOGDResult:
    """Collect ``budget`` labels from the K ``sources`` with UCB and train ``model`` by projected OGD on them
    (module docstring). The module is trained in place (it ends at the last iterate). ``sampler`` replaces
    the UCB sampler (any object with ``select()``, ``update(k, loss)`` and ``n_sources``)."""
    import torch

    from icml25.random import rng as named_rng

    from .learners import TorchLearner

    K = len(sources)
    if K < 1:
        raise ValueError("at least one source is needed")
    if int(budget) < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    if radius <= 0:
        raise ValueError(f"radius must be > 0, got {radius}")
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
    if sampler is None:
        sampler = UCBSampler(K)
    elif sampler.n_sources != K:
        raise ValueError(f"the sampler has {sampler.n_sources} sources, {K} were given")
    rngs = [named_rng(seed, "source", k) for k in range(K)]
    with_rng = [_takes_argument(s) for s in sources]

    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)

    def draw(k: int) -> tuple[Any, Any]:
        x, y = sources[k](rngs[k]) if with_rng[k] else sources[k]()
        x = torch.as_tensor(np.asarray(x) if not torch.is_tensor(x) else x, dtype=dtype)
        y = torch.as_tensor(y) if not torch.is_tensor(y) else y
        if not batched:
            x, y = x.unsqueeze(0), y.reshape(1)
        return x, y

    learner = TorchLearner(model, loss or scaled_cross_entropy)
    learner.project(radius)  # theta_1 must lie in Theta
    if lr is not None:
        eta: float | RunningMaxStep = float(lr)
    elif grad_bound is not None:
        eta = step_size(radius, grad_bound, budget)
    else:
        eta = RunningMaxStep(radius, budget)
    log = run_rounds(sampler, learner, draw, int(budget), eta, radius, grad_of_clipped=grad_of_clipped)
    if output == "average":
        out = copy.deepcopy(model)
        with torch.no_grad():
            params = [p for p in out.parameters() if p.requires_grad]
            for p, a in zip(params, learner.average(), strict=True):
                p.copy_(a)
    else:
        out = model
    return UCBOGDResult(model=out, allocation=log.counts(), log=log, sampler=sampler)
