"""The min player and the one round loop every learner and every sampler share.

Online gradient descent on the ball Theta = {||theta|| <= R} (the norm of all parameters together):

    theta_{t+1} = Proj_Theta(theta_t - eta grad l(theta_t; z_t)),   Proj_Theta(v) = v min(1, R / ||v||),
    eta = 2 R / (G sqrt(T))

with D = 2R the diameter of Theta and G a bound on ||grad l|| (each learner derives its own, see
``models.ucb_ogd.learners``); this eta is the one that minimises the OGD bound D^2 / (2 eta) + eta G^2 T / 2
= D G sqrt(T) for a horizon T known in advance. The output is the average iterate

    theta_bar_T = (1/T) sum_{t=1}^T theta_t

of the iterates *played* (theta_1 = the initial model; theta_t is the model under which round t's loss is
observed), or the last iterate theta_{T+1} (``output="last"``).

One round t (:func:`run_rounds`):
  1. k_t = sampler.select();  z_t = draw(k_t)  (the next unused draw of source k_t's stream);
  2. theta_t joins the running average;
  3. l_t = l(theta_t; z_t), observed once, at collection time, clipped to [0, 1]: sampler.update(k_t, l_t)
     (the bandit feedback; a sample's loss is never re-evaluated later);
  4. the OGD step with grad l(theta_t; z_t), then the projection.

Clipping the loss at 1 makes the clipped loss flat, with gradient 0, wherever the raw loss exceeds 1. The
issue states neither which gradient OGD takes nor the consequence; ours: by default OGD steps along the gradient
of the *unclipped* (convex) loss, so the OGD guarantee holds for a convex loss and a sample whose loss exceeds 1
still teaches the model, while the clip only bounds the bandit feedback; ``grad_of_clipped=True`` takes the
gradient of the clipped loss instead (no step on a sample whose raw loss exceeds 1 + 1e-12; at exactly 1, the
zero model's loss, the gradient from below is taken).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .sampler import Sampler

OUTPUTS = ("average", "last")
#: With ``grad_of_clipped``, the clipped loss is flat where the raw loss exceeds 1 + FLAT_TOL (the rounding slack
#: matters at the start: CE / ln C of the zero model is exactly 1, up to one ulp either way).
FLAT_TOL = 1e-12


class Learner(Protocol):
    """A model under OGD: its loss and gradient at one sample, the step, the projection and the average."""

    def loss_and_grad(self, z: Any) -> tuple[float, Any]:
        """(l(theta; z) unclipped, grad_theta l(theta; z)) at the current theta."""
        ...

    def grad_norm(self, grad: Any) -> float: ...

    def step(self, grad: Any, lr: float) -> None:
        """theta <- theta - lr grad."""
        ...

    def project(self, radius: float) -> None:
        """theta <- Proj_{||theta|| <= radius}(theta)."""
        ...

    def accumulate(self) -> None:
        """Add the current theta (the one played this round) to the running sum of the average."""
        ...


def step_size(radius: float, grad_bound: float, horizon: int) -> float:
    """eta = 2 R / (G sqrt(T)): the diameter over the gradient bound times sqrt of the horizon."""
    if radius <= 0 or grad_bound <= 0 or horizon < 1:
        raise ValueError(
            f"need radius > 0, grad_bound > 0, horizon >= 1 (got {radius}, {grad_bound}, {horizon})"
        )
    return 2.0 * radius / (grad_bound * math.sqrt(horizon))


class RunningMaxStep:
    """eta_t = 2 R / (G_t sqrt(T)) with G_t the largest gradient norm seen up to round t: for a model whose
    gradient bound is unknown (the torch entry without ``grad_bound``). Ours."""

    def __init__(self, radius: float, horizon: int) -> None:
        self.radius, self.horizon, self.g = float(radius), int(horizon), 0.0

    def __call__(self, grad_norm: float) -> float:
        self.g = max(self.g, float(grad_norm))
        return step_size(self.radius, self.g, self.horizon) if self.g > 0 else 0.0


def project_ball(theta: np.ndarray, radius: float) -> np.ndarray:
    """Proj onto {||theta|| <= radius} (Frobenius norm), in place; returns theta."""
    norm = math.sqrt(float(np.vdot(theta, theta)))
    if norm > radius:
        theta *= radius / norm
    return theta


@dataclass
class RoundLog:
    """What one run of :func:`run_rounds` played: ``source[t-1]`` = k_t, ``loss[t-1]`` = the clipped loss
    observed at collection time."""

    source: np.ndarray
    loss: np.ndarray
    n_sources: int

    def counts(self) -> np.ndarray:
        """n_k at the end of the run."""
        return np.bincount(self.source, minlength=self.n_sources)

    def shares(self, at: np.ndarray) -> np.ndarray:
        """n_k(t) / t at each t of ``at`` (1-based round counts): (len(at), K)."""
        onehot = np.zeros((len(self.source), self.n_sources))
        onehot[np.arange(len(self.source)), self.source] = 1.0
        cum = np.cumsum(onehot, axis=0)
        at = np.asarray(at, dtype=int)
        return cum[at - 1] / at[:, None]

    def frame(self) -> Any:
        """One row per round: t (from 1), source, loss."""
        import pandas as pd

        return pd.DataFrame(
            {"t": np.arange(1, len(self.source) + 1), "source": self.source, "loss": self.loss}
        )


def run_rounds(
    sampler: Sampler,
    learner: Learner,
    draw: Callable[[int], Any],
    horizon: int,
    lr: float | Callable[[float], float],
    radius: float,
    *,
    grad_of_clipped: bool = False,
) -> RoundLog:
    """Play ``horizon`` rounds of the sampler against OGD (module docstring); ``lr`` is eta, or a rule mapping
    the round's gradient norm to eta (:class:`RunningMaxStep`)."""
    source = np.empty(horizon, dtype=np.int64)
    observed = np.empty(horizon)
    adaptive = callable(lr)
    for i in range(horizon):
        k = sampler.select()
        z = draw(k)
        learner.accumulate()
        raw, grad = learner.loss_and_grad(z)
        loss = min(max(raw, 0.0), 1.0)
        sampler.update(k, loss)
        if not (grad_of_clipped and raw > 1.0 + FLAT_TOL):
            learner.step(grad, lr(learner.grad_norm(grad)) if adaptive else lr)
            learner.project(radius)
        source[i] = k
        observed[i] = loss
    return RoundLog(source, observed, sampler.n_sources)
