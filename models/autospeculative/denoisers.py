"""Denoisers m(y, t) = E[x | y_t = y] in SL coordinates (y_t = t x + W_t).

**Gaussian mixture, exact.** x ~ sum_c pi_c N(mu_c, sigma^2 I). Given the component c, y_t ~ N(t mu_c, (t^2
sigma^2 + t) I) and x | y, c ~ N((mu_c / sigma^2 + y) / (1 / sigma^2 + t), I / (1 / sigma^2 + t)), so

    m(y, t) = sum_c w_c(y) (mu_c / sigma^2 + y) / (1 / sigma^2 + t),
    w_c(y) propto pi_c N(y; t mu_c, (t^2 sigma^2 + t) I)       (softmax of log-weights, float64).

The issue's mixture: 8 equal components with means on a circle of radius 4, sigma = 0.25, in 2-D.

**x0-predicting network.** A network f(x_t, log t) trained to predict x from x_t = sqrt(abar) x + sqrt(1 - abar) eps
(abar = t / (1 + t)) reads in SL coordinates as m(y, t) = f(y / sqrt(t (1 + t)), log t); an eps-predicting one as
m = (x_t - sqrt(1 - abar) eps_hat) / sqrt(abar) (:func:`from_prediction`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sl import from_sl

NETWORK_KIND = "autospeculative-x0net"  # the metadata kind of the digits network's safetensors files


@dataclass(frozen=True)
class Mixture:
    means: np.ndarray  # (C, d)
    sigma: float
    weights: np.ndarray  # (C,)

    @classmethod
    def circle(cls, components: int = 8, radius: float = 4.0, sigma: float = 0.25) -> Mixture:
        a = 2 * np.pi * np.arange(components) / components
        means = radius * np.stack([np.cos(a), np.sin(a)], 1)
        return cls(means, sigma, np.full(components, 1.0 / components))

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        c = rng.choice(len(self.weights), size=n, p=self.weights)
        return self.means[c] + self.sigma * rng.standard_normal((n, self.dim))

    def start(self, n: int, t0: float, rng: np.random.Generator) -> np.ndarray:
        """Exact draws of y_{t0} = t0 x + W_{t0}."""
        return t0 * self.sample(n, rng) + np.sqrt(t0) * rng.standard_normal((n, self.dim))

    def log_weights(self, y: np.ndarray, t: np.ndarray) -> np.ndarray:
        """(B, C) normalised log posterior weights of the components given y_t = y."""
        t = np.asarray(t, np.float64)[:, None]
        var = t * t * self.sigma**2 + t
        sq = ((y[:, None, :] - t[..., None] * self.means[None]) ** 2).sum(-1)
        logw = np.log(self.weights)[None] - 0.5 * sq / var
        return logw - np.logaddexp.reduce(logw, axis=1, keepdims=True)

    def __call__(self, y: np.ndarray, t: np.ndarray) -> np.ndarray:
        y = np.asarray(y, np.float64)
        t = np.asarray(t, np.float64)
        w = np.exp(self.log_weights(y, t))  # (B, C)
        s2 = self.sigma**2
        post = (self.means[None] / s2 + y[:, None, :]) / (1.0 / s2 + t)[:, None, None]
        return (w[..., None] * post).sum(1)

    def modes_distance(self, x: np.ndarray) -> np.ndarray:
        """Distance of each sample to its nearest mean."""
        return np.linalg.norm(x[:, None, :] - self.means[None], axis=-1).min(1)

    def mode_histogram(self, x: np.ndarray) -> np.ndarray:
        """How many samples lie nearest each mean."""
        c = np.linalg.norm(x[:, None, :] - self.means[None], axis=-1).argmin(1)
        return np.bincount(c, minlength=len(self.weights))


def from_prediction(pred: np.ndarray, y: np.ndarray, t: np.ndarray, prediction: str) -> np.ndarray:
    """A network's prediction at x_t = y / sqrt(t (1 + t)) turned into m(y, t): x0 as is, eps through
    x0 = (x_t - sqrt(1 - abar) eps) / sqrt(abar), abar = t / (1 + t)."""
    if prediction == "x0":
        return pred
    if prediction != "eps":
        raise ValueError(f"prediction = {prediction!r}: must be 'x0' or 'eps'")
    t = np.asarray(t, np.float64)
    shape = (...,) + (None,) * (np.ndim(y) - 1)
    abar = (t / (1 + t))[shape]
    return (from_sl(y, t) - np.sqrt(1 - abar) * pred) / np.sqrt(abar)
