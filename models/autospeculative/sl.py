"""Stochastic-localization (SL) coordinates of a DDPM, and time grids.

A DDPM with cumulative signal ``abar_k`` at its sampling steps k = 0..K (noise to data) maps to SL time and state

    t_k = abar_k / (1 - abar_k)                 (the signal-to-noise ratio)
    y_k = sqrt(abar_k) / (1 - abar_k) * x_k = sqrt(t_k (1 + t_k)) * x_k,

and the observation process y_t = t x + W_t (W a standard Brownian motion) has, given x, independent increments
y_{k+1} - y_k ~ N(eta_k x, eta_k I) with eta_k = t_{k+1} - t_k. The DDPM ancestral step with the posterior
variance beta-tilde and an x0-prediction m-hat is then exactly

    y_{k+1} = y_k + eta_k m(y_k, t_k) + sqrt(eta_k) xi,    xi ~ N(0, I),

with m(y, t) = E[x | y_t = y] (the denoiser, an x0-prediction read in SL coordinates). With beta in place of
beta-tilde the identity breaks (the test checks both).

Grids: ``cosine_abar(u)`` is the continuous cosine schedule (Nichol and Dhariwal 2021, offset s = 0.008) at
u in [0, 1] (u = 0 data, u = 1 noise); ``cosine_grid(K)`` evaluates it at K + 1 evenly spaced u from 1 - EDGE to
EDGE, so any K works and t_0 > 0, t_K < inf. ``grid_from_alphas_cumprod`` picks K + 1 evenly spaced entries of a
trained model's discrete schedule (a diffusers scheduler's ``alphas_cumprod``). A grid whose t does not strictly
increase (a clipped schedule repeats values: eta = 0, then z = 0/0) is refused, naming the first repeat.
"""

from __future__ import annotations

import numpy as np

S_OFFSET = 0.008
EDGE = 1e-3  # u stays in [EDGE, 1 - EDGE]: t_0 about 2e-6, t_K about 2e4


def cosine_abar(u: np.ndarray | float) -> np.ndarray:
    """abar(u) = cos^2(pi/2 (u + s)/(1 + s)) / cos^2(pi/2 s/(1 + s)), s = 0.008."""
    u = np.asarray(u, dtype=np.float64)
    f = np.cos(0.5 * np.pi * (u + S_OFFSET) / (1 + S_OFFSET)) ** 2
    return f / np.cos(0.5 * np.pi * S_OFFSET / (1 + S_OFFSET)) ** 2


def snr(abar: np.ndarray) -> np.ndarray:
    """t = abar / (1 - abar)."""
    abar = np.asarray(abar, dtype=np.float64)
    return abar / (1.0 - abar)


def check_grid(t: np.ndarray) -> np.ndarray:
    """The grid as float64 if it is finite, positive and strictly increasing; ValueError naming the first index
    where it is not (a repeated t gives eta = 0)."""
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 1 or len(t) < 2:
        raise ValueError(f"a time grid needs at least 2 points, got shape {t.shape}")
    bad = np.flatnonzero(~np.isfinite(t) | (t <= 0))
    if len(bad):
        raise ValueError(f"t[{bad[0]}] = {t[bad[0]]}: SL times must be finite and > 0")
    rep = np.flatnonzero(np.diff(t) <= 0)
    if len(rep):
        i = int(rep[0]) + 1
        raise ValueError(
            f"t[{i}] = {t[i]:.6g} does not exceed t[{i - 1}] = {t[i - 1]:.6g}: the grid must strictly "
            "increase (a clipped schedule repeats t)"
        )
    return t


def cosine_grid(K: int) -> np.ndarray:
    """The K + 1 SL times t_0 < ... < t_K of the continuous cosine schedule."""
    if K < 1:
        raise ValueError(f"K = {K}: need at least 1 step")
    u = np.linspace(1.0 - EDGE, EDGE, K + 1)
    return check_grid(snr(cosine_abar(u)))


def grid_from_alphas_cumprod(alphas_cumprod: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """(t, timesteps): K + 1 evenly spaced indices of a discrete schedule, from the noisiest to the cleanest, and
    their SL times. The schedule must decrease (abar_0 near 1, the last near 0)."""
    abar = np.asarray(alphas_cumprod, dtype=np.float64)
    if abar.ndim != 1 or len(abar) < 2 or not ((abar > 0) & (abar < 1)).all():
        raise ValueError("alphas_cumprod must be a 1-D schedule with values in (0, 1)")
    if K < 1 or K + 1 > len(abar):
        raise ValueError(f"K = {K}: must lie in [1, {len(abar) - 1}] for a schedule of {len(abar)} steps")
    steps = np.round(np.linspace(len(abar) - 1, 0, K + 1)).astype(np.int64)
    return check_grid(snr(abar[steps])), steps


def to_sl(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """y = sqrt(t (1 + t)) x (t broadcast over the trailing axes of x)."""
    return x * np.sqrt(t * (1 + t))[(...,) + (None,) * (np.ndim(x) - np.ndim(t))]


def from_sl(y: np.ndarray, t: np.ndarray) -> np.ndarray:
    """x = y / sqrt(t (1 + t))."""
    return y / np.sqrt(t * (1 + t))[(...,) + (None,) * (np.ndim(y) - np.ndim(t))]
