"""The K-step sequential DDPM sampler and autospeculative decoding (ASD), in SL coordinates (see :mod:`.sl`).

A denoiser is a callable ``m(y, t) -> (B, d)`` for states ``y`` (B, d) and SL times ``t`` (B,), float64; one call
on a batch is one *sequential call* (what a parallel device spends one latency on) and B *evaluations*.

**Sequential**: y_{k+1} = y_k + eta_k m(y_k, t_k) + sqrt(eta_k) xi_k for k < K, then the output m(y_K, t_K):
K + 1 calls per chain.

**ASD**, one round from y_k with a frozen mean m-hat (the last denoiser value the chain has seen):

1. Draft L' = min(L, K - k) steps with no model call:
   yhat_{k+i} = yhat_{k+i-1} + eta_{k+i-1} m-hat + sqrt(eta_{k+i-1}) xi_i.
2. Verify all drafts in one batched call: m_i = m(yhat_{k+i-1}, t_{k+i-1}), i = 1..L'.
3. For i = 1..L': with z_i = sqrt(eta) (m-hat - m_i), accept yhat_{k+i} with probability
   min(1, phi(xi_i + z_i) / phi(xi_i)) = min(1, exp(-xi_i.z_i - |z_i|^2 / 2)) (float64, log space). At the first
   rejection, take the reflection yhat_{k+i} = yhat_{k+i-1} + eta m_i + sqrt(eta) (xi_i - 2 (e.xi_i) e),
   e = z_i / |z_i|, and drop the later drafts. (In the target's noise coordinates the proposal is N(z, I) and the
   reflection is that of the reflection-maximal coupling of N(z, I) with N(0, I): accepted or reflected, the
   step is exactly N(yhat + eta m_i, eta I), so the output law is the sequential sampler's.)
4. The next m-hat is the last verified m on the kept path (``frozen_mean="stale"``: no extra call; one call at
   y_0 starts the first round), or a fresh m(y_k, t_k) at the start of every round (``"fresh"``: one more call
   per round; the paper does not say which it uses, and both are exact because the verifier knows m-hat).

Chains run vectorised, each at its own step: one round drafts and verifies every unfinished chain at once.
Per chain the result counts sequential calls (the first call, the rounds, the output call; plus one per
round when fresh), evaluations, rounds, and per step k how often a draft was judged and accepted.

Switches that break the method on purpose (the claims' stubs): ``draft_only`` accepts every draft (no
verification, no calls but the first and the output); ``model_drafts`` computes each draft from a fresh model call
(a drafter that calls the model per draft: sequential again, every draft accepted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .sl import check_grid

Denoiser = Callable[[np.ndarray, np.ndarray], np.ndarray]
FROZEN = ("stale", "fresh")


@dataclass
class Result:
    samples: np.ndarray  # (n, d): m(y_K, t_K) per chain
    calls: np.ndarray  # (n,) sequential calls per chain
    evaluations: np.ndarray  # (n,) denoiser evaluations per chain
    rounds: np.ndarray  # (n,) draft-and-verify rounds per chain (K for the sequential sampler)
    judged: np.ndarray  # (K,) drafts judged at step k, summed over chains
    accepted: np.ndarray  # (K,) of which accepted

    @property
    def acceptance(self) -> np.ndarray:
        """Per step k: accepted / judged (NaN where no draft was judged)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.judged > 0, self.accepted / np.maximum(self.judged, 1), np.nan)


def _call(m: Denoiser, y: np.ndarray, t: np.ndarray) -> np.ndarray:
    out = np.array(
        m(y, t), dtype=np.float64
    )  # a copy: the sampler writes into it, the denoiser may keep its own
    if out.shape != y.shape:
        raise ValueError(f"the denoiser returned shape {out.shape} for input {y.shape}")
    return out


def sequential(m: Denoiser, t: np.ndarray, y0: np.ndarray, rng: np.random.Generator) -> Result:
    """The K-step sampler: K calls, then the output call."""
    t = check_grid(t)
    K, (n, d) = len(t) - 1, y0.shape
    y = np.array(y0, dtype=np.float64)
    for k in range(K):
        eta = t[k + 1] - t[k]
        y += eta * _call(m, y, np.full(n, t[k])) + np.sqrt(eta) * rng.standard_normal((n, d))
    out = _call(m, y, np.full(n, t[K]))
    full = np.full(n, K + 1)
    return Result(out, full, full.copy(), np.full(n, K), np.full(K, n), np.full(K, n))


def log_accept_ratio(xi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """log(phi(xi + z) / phi(xi)) = -xi.z - |z|^2 / 2 over the last axis, in float64 (finite at any d)."""
    xi, z = np.asarray(xi, np.float64), np.asarray(z, np.float64)
    return -(xi * z).sum(-1) - 0.5 * (z * z).sum(-1)


def reflect(xi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """xi - 2 (e.xi) e with e = z / |z| (rows of the last axis; z = 0 leaves xi as is)."""
    norm = np.linalg.norm(z, axis=-1, keepdims=True)
    e = z / np.where(norm > 0, norm, 1.0)
    return xi - 2.0 * (e * xi).sum(-1, keepdims=True) * e


def asd(
    m: Denoiser,
    t: np.ndarray,
    y0: np.ndarray,
    L: int,
    rng: np.random.Generator,
    frozen_mean: str = "stale",
    draft_only: bool = False,
    model_drafts: bool = False,
) -> Result:
    """Autospeculative decoding with window L (1 <= L <= K) from the states ``y0`` (n, d) at t_0."""
    t = check_grid(t)
    K, (n, d) = len(t) - 1, y0.shape
    if not 1 <= L <= K:
        raise ValueError(f"L = {L}: the window must lie in [1, K = {K}]")
    if frozen_mean not in FROZEN:
        raise ValueError(f"frozen_mean = {frozen_mean!r}: must be one of {', '.join(FROZEN)}")
    eta = np.diff(t)
    y = np.array(y0, dtype=np.float64)
    k = np.zeros(n, np.int64)
    calls, evals, rounds = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    judged, accepted = np.zeros(K, np.int64), np.zeros(K, np.int64)
    mhat = np.zeros((n, d))
    if frozen_mean == "stale" or draft_only:
        mhat = _call(m, y, np.full(n, t[0]))
        calls += 1
        evals += 1
    while (k < K).any():
        idx = np.flatnonzero(k < K)
        na, kk = len(idx), k[idx]
        rounds[idx] += 1
        if frozen_mean == "fresh" and not draft_only:
            mhat[idx] = _call(m, y[idx], t[kk])
            calls[idx] += 1
            evals[idx] += 1
        width = np.minimum(L, K - kk)  # L' per chain
        j = np.arange(width.max())
        valid = j[None, :] < width[:, None]  # (na, L')
        steps = np.minimum(kk[:, None] + j[None, :], K - 1)
        e = np.where(valid, eta[steps], 0.0)
        xi = rng.standard_normal((na, len(j), d))
        rows = np.arange(na)
        if model_drafts:  # the stub: every draft from its own model call, one after another
            base = np.zeros((na, len(j), d))
            means = np.zeros((na, len(j), d))
            cur = y[idx].copy()
            for i in j:
                live = valid[:, i]
                base[:, i] = cur
                means[live, i] = _call(m, cur[live], t[steps[live, i]])
                cur = cur + e[:, i, None] * means[:, i] + np.sqrt(e[:, i, None]) * xi[:, i]
            calls[idx] += width
            evals[idx] += width
            y[idx] = cur
            k[idx] += width
            mhat[idx] = means[rows, width - 1]
            np.add.at(judged, steps[valid], 1)
            np.add.at(accepted, steps[valid], 1)
            continue
        incr = e[..., None] * mhat[idx, None, :] + np.sqrt(e)[..., None] * xi
        cum = np.cumsum(incr, axis=1)
        if draft_only:
            y[idx] += cum[rows, width - 1]
            k[idx] += width
            np.add.at(judged, steps[valid], 1)
            np.add.at(accepted, steps[valid], 1)
            continue
        base = np.concatenate([y[idx, None], y[idx, None] + cum[:, :-1]], axis=1)  # yhat_{k+i-1}
        means = np.zeros_like(base)
        means[valid] = _call(m, base[valid], t[steps[valid]])
        calls[idx] += 1
        evals[idx] += width
        z = np.sqrt(e)[..., None] * (mhat[idx, None, :] - means)
        ok = np.log(rng.random((na, len(j)))) < np.minimum(0.0, log_accept_ratio(xi, z))
        reject = valid & ~ok
        first = np.where(reject.any(1), reject.argmax(1), width)  # index of the first rejection, else L'
        rejected = first < width
        r = np.minimum(first, width - 1)
        e_r = e[rows, r][:, None]
        y_reflect = base[rows, r] + e_r * means[rows, r] + np.sqrt(e_r) * reflect(xi[rows, r], z[rows, r])
        y[idx] = np.where(rejected[:, None], y_reflect, y[idx] + cum[rows, width - 1])
        k[idx] += np.where(rejected, first + 1, width)
        mhat[idx] = means[rows, r]
        seen = valid & (j[None, :] <= first[:, None])
        np.add.at(judged, steps[seen], 1)
        np.add.at(accepted, steps[seen & ~reject], 1)
    out = _call(m, y, np.full(n, t[K]))
    calls += 1
    evals += 1
    return Result(out, calls, evals, rounds, judged, accepted)
