"""The learners OGD moves (the :class:`~models.ucb_ogd.ogd.Learner` protocol), each with its gradient bound G.

- :class:`SoftmaxLearner` (NumPy; the experiments on digits and CSV sources): multinomial logistic regression,
  theta = W of shape (d + 1, C) acting on x~ = (x, 1) (the last row is the bias), and

      l(W; x, y) = CE(W; x, y) / ln C,   CE = log sum_j exp(s_j) - s_y,   s = x~ W,
      grad_W l = x~ (p - e_y)^T / ln C,  p = softmax(s).

  l(0; x, y) = 1 (uniform prediction). G: ||grad||_F = ||x~|| ||p - e_y|| / ln C and
  ||p - e_y||^2 = (1 - p_y)^2 + sum_{j != y} p_j^2 <= 2 (1 - p_y)^2 <= 2, so ||grad||_F <= sqrt(2) ||x~|| / ln C
  (:meth:`SoftmaxLearner.grad_bound`); for pixels in [0, 1]^64, ||x~|| <= sqrt(65) and G = sqrt(130) / ln 10
  ~ 4.95. The bound holds for the unclipped loss; the clipped loss has the same gradient below 1 and 0 above.
- :class:`QuadraticLearner` (NumPy; the planted sources): l(theta; z) = ||theta - z||^2 / C,
  grad = 2 (theta - z) / C, so ||grad|| = 2 ||theta - z|| / C <= 2 (R + max_k ||mu_k|| + sigma) / C for
  ||theta|| <= R and ||z|| <= ||mu_k|| + sigma; with C = (R + max ||mu_k|| + sigma)^2, G = 2 / sqrt(C) and
  l <= 1 everywhere on the ball (clipping is a no-op). It can record the iterate played at every round (the
  regret is computed from them).
- :class:`TorchLearner`: any ``torch.nn.Module`` and loss through autograd (the public :func:`ucb_ogd` entry);
  theta = all parameters, projected together. Its gradient bound is the caller's (``grad_bound``) or
  :class:`~models.ucb_ogd.ogd.RunningMaxStep`'s running maximum.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .ogd import project_ball


def augment(X: np.ndarray) -> np.ndarray:
    """x~ = (x, 1): the bias column appended (rows are samples)."""
    X = np.asarray(X, dtype=float)
    return np.concatenate([X, np.ones((*X.shape[:-1], 1))], axis=-1)


class SoftmaxLearner:
    """Multinomial logistic regression on augmented features, loss CE / ln C (module docstring); theta_1 = 0."""

    def __init__(self, n_features: int, n_classes: int) -> None:
        self.W = np.zeros((n_features + 1, n_classes))
        self.n_classes = n_classes
        self.log_c = math.log(n_classes)
        self.scale = 1.0 / self.log_c
        self.total = np.zeros_like(self.W)
        self.count = 0

    # --- the Learner protocol
    def loss_and_grad(self, z: tuple[np.ndarray, int]) -> tuple[float, np.ndarray]:
        x, y = z
        s = x @ self.W
        s -= s.max()
        e = np.exp(s)
        Z = e.sum()
        loss = (math.log(Z) - s[y]) / self.log_c  # exactly 1 at W = 0 (a division, not * 1 / ln C)
        p = e / Z
        p[y] -= 1.0
        return loss, np.outer(x, p * self.scale)

    @staticmethod
    def grad_norm(grad: np.ndarray) -> float:
        return float(np.linalg.norm(grad))

    def step(self, grad: np.ndarray, lr: float) -> None:
        self.W -= lr * grad

    def project(self, radius: float) -> None:
        project_ball(self.W, radius)

    def accumulate(self) -> None:
        self.total += self.W
        self.count += 1

    # --- outputs
    def average(self) -> np.ndarray:
        """theta_bar = the mean of the iterates played (theta_1 = 0 before any round)."""
        return self.total / self.count if self.count else self.W.copy()

    def last(self) -> np.ndarray:
        return self.W.copy()

    def output(self, which: str) -> np.ndarray:
        if which not in ("average", "last"):
            raise ValueError(f"output must be 'average' or 'last', got {which!r}")
        return self.average() if which == "average" else self.last()

    @staticmethod
    def grad_bound(x_norm: float, n_classes: int) -> float:
        """G = sqrt(2) ||x~||_max / ln C."""
        return math.sqrt(2.0) * x_norm / math.log(n_classes)

    # --- evaluation of any W (rows of augmented features)
    @staticmethod
    def log_probs(W: np.ndarray, X: np.ndarray) -> np.ndarray:
        s = X @ W
        s -= s.max(axis=1, keepdims=True)
        return s - np.log(np.exp(s).sum(axis=1, keepdims=True))

    @classmethod
    def losses(cls, W: np.ndarray, X: np.ndarray, y: np.ndarray, clip: bool = True) -> np.ndarray:
        """l(W; x_i, y_i) per row, clipped to [0, 1] unless ``clip=False``."""
        ce = -cls.log_probs(W, X)[np.arange(len(y)), y] / math.log(W.shape[1])
        return np.minimum(ce, 1.0) if clip else ce

    @classmethod
    def entropy(cls, W: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Predictive entropy -sum_j p_j log p_j per row."""
        lp = cls.log_probs(W, X)
        return -(np.exp(lp) * lp).sum(axis=1)

    @staticmethod
    def predict(W: np.ndarray, X: np.ndarray) -> np.ndarray:
        """argmax over the C classes."""
        return np.argmax(X @ W, axis=1)


class QuadraticLearner:
    """l(theta; z) = ||theta - z||^2 / C on the ball of radius R (module docstring); theta_1 = 0.

    ``record``: the horizon, to keep theta_t for t = 1..T (``self.played``), the iterates the regret sums over."""

    def __init__(self, dim: int, scale: float, record: int = 0) -> None:
        self.theta = np.zeros(dim)
        self.inv_c = 1.0 / scale
        self.total = np.zeros(dim)
        self.count = 0
        self.played = np.empty((record, dim)) if record else None

    def loss_and_grad(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        d = self.theta - z
        return float(d @ d) * self.inv_c, d * (2.0 * self.inv_c)

    @staticmethod
    def grad_norm(grad: np.ndarray) -> float:
        return float(np.linalg.norm(grad))

    def step(self, grad: np.ndarray, lr: float) -> None:
        self.theta -= lr * grad

    def project(self, radius: float) -> None:
        project_ball(self.theta, radius)

    def accumulate(self) -> None:
        if self.played is not None:
            self.played[self.count] = self.theta
        self.total += self.theta
        self.count += 1

    def average(self) -> np.ndarray:
        return self.total / self.count if self.count else self.theta.copy()

    def last(self) -> np.ndarray:
        return self.theta.copy()

    @staticmethod
    def grad_bound(radius: float, max_mean_norm: float, noise: float, scale: float) -> float:
        """G = 2 (R + max ||mu_k|| + sigma) / C."""
        return 2.0 * (radius + max_mean_norm + noise) / scale


class TorchLearner:
    """Any torch module under OGD through autograd: ``loss_fn(model(x), y)`` is the loss of one collected sample
    (or batch); theta = every parameter of the module, projected onto the ball as one vector."""

    def __init__(self, model: Any, loss_fn: Any) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.loss_fn = loss_fn
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.total = [torch.zeros_like(p) for p in self.params]
        self.count = 0

    def loss_and_grad(self, z: tuple[Any, Any]) -> tuple[float, list[Any]]:
        x, y = z
        loss = self.loss_fn(self.model(x), y)
        grads = self.torch.autograd.grad(loss, self.params)
        return float(loss.detach()), [g.detach() for g in grads]

    def grad_norm(self, grad: list[Any]) -> float:
        return float(self.torch.sqrt(sum((g * g).sum() for g in grad)))

    def step(self, grad: list[Any], lr: float) -> None:
        with self.torch.no_grad():
            for p, g in zip(self.params, grad, strict=True):
                p.sub_(lr * g)

    def project(self, radius: float) -> None:
        torch = self.torch
        with torch.no_grad():
            norm = float(torch.sqrt(sum((p * p).sum() for p in self.params)))
            if norm > radius:
                for p in self.params:
                    p.mul_(radius / norm)

    def accumulate(self) -> None:
        with self.torch.no_grad():
            for s, p in zip(self.total, self.params, strict=True):
                s.add_(p)
        self.count += 1

    def average(self) -> list[Any]:
        return [s / max(self.count, 1) for s in self.total]
