"""Shared randomness: the bases that client and server regenerate from a seed instead of sending.

Ferret's basis for candidate ``index`` of block ``block`` in a round with seed ``round_seed`` is

    v ~ N(0, 1) truncated to [-a, a],   a = 1 / sqrt(d_l),

so ``|v| <= 1``. Its second moment per coordinate,

    rho_l = E[v_i^2] = 1 - 2 a phi(a) / (2 Phi(a) - 1)        (about a^2 / 3 = 1 / (3 d_l) for small a),

is the factor that makes the projection unbiased: E[v v^T] = rho_l I, so gamma = <Delta_l, v> / (K_l rho_l) gives
E[sum_k gamma_k v_k] = Delta_l (the paper's Theorem 1; the official code omits rho).

Bit-identical regeneration: each basis comes from its own CPU ``torch.Generator`` (Mersenne Twister) seeded with
:func:`basis_seed` (a SplitMix64 chain over (kind, round seed, index, block): integer arithmetic, the same in every
process and platform, about 1 us where a SHA-256-keyed ``SeedSequence`` costs 34 us), never from the global RNG; the draw is ``u ~ U[0, 1)`` in float64, then the inverse CDF of the truncated normal,

    v = sqrt(2) erfinv((2 u - 1) (2 Phi(a) - 1)),

which lands in [-a, a] exactly (no rejection: at a = 0.02 a rejection sampler would discard 98% of its draws).
The FedKSeed-style zeroth-order baseline uses plain N(0, 1) directions, regenerated the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from icml25.random import _key

MASK = (1 << 64) - 1


def rho(d: int) -> float:
    """E[v_i^2] of N(0, 1) truncated to +-1/sqrt(d): 1 - 2 a phi(a) / (2 Phi(a) - 1), a = 1/sqrt(d)."""
    if d < 1:
        raise ValueError(f"block size {d}: must be >= 1")
    a = 1.0 / math.sqrt(d)
    mass = math.erf(a / math.sqrt(2.0))  # 2 Phi(a) - 1
    phi = math.exp(-a * a / 2.0) / math.sqrt(2.0 * math.pi)
    return 1.0 - 2.0 * a * phi / mass


def splitmix64(x: int) -> int:
    """One SplitMix64 step (Steele, Lea and Flood 2014): a bijective 64-bit mixer."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


_KINDS: dict[str, int] = {}


def basis_seed(round_seed: int, index: int, block: int, kind: str = "ferret-basis") -> int:
    """The seed of one basis: SplitMix64 chained over (kind, round seed, candidate index, block), 63 bits."""
    h = _KINDS.get(kind)
    if h is None:
        h = _KINDS[kind] = _key(kind)
    for part in (round_seed, index, block):
        h = splitmix64(h ^ (int(part) & MASK))
    return h >> 1


def _uniforms(round_seed: int, indices: Sequence[int], block: int, d: int, kind: str) -> torch.Tensor:
    out = torch.empty(len(indices), d, dtype=torch.float64)
    g = torch.Generator(device="cpu")
    for row, index in enumerate(indices):
        g.manual_seed(basis_seed(round_seed, index, block, kind))
        torch.rand(d, generator=g, dtype=torch.float64, out=out[row])
    return out


def truncated_bases(
    round_seed: int, indices: Sequence[int], block: int, d: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The (len(indices), d) matrix whose row k is the basis of candidate ``indices[k]`` of ``block``: N(0, 1)
    truncated to +-1/sqrt(d), by the inverse CDF of one seeded uniform per coordinate."""
    u = _uniforms(round_seed, indices, block, d, "ferret-basis")
    mass = math.erf(1.0 / math.sqrt(2.0 * d))
    return (math.sqrt(2.0) * torch.erfinv((2.0 * u - 1.0) * mass)).to(dtype)


def gaussian_directions(
    pool_seed: int, indices: Sequence[int], d: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """(len(indices), d) N(0, 1) directions of the zeroth-order baselines (Box-Muller of seeded uniforms, so the
    same seed gives the same direction in every process)."""
    u = _uniforms(pool_seed, indices, 0, 2 * d, "zo-direction")
    u1, u2 = u[:, :d], u[:, d:]
    z = torch.sqrt(-2.0 * torch.log1p(-u1)) * torch.cos(2.0 * math.pi * u2)
    return z.to(dtype)
