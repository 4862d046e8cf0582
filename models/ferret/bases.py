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
from collections.abc import Iterator, Sequence

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


CHUNK = (
    1 << 20
)  # float64 uniforms generated and transformed at a time (8 MiB): a 10^6-entry block goes row by row


def _rows(
    round_seed: int, indices: Sequence[int], block: int, width: int, kind: str
) -> Iterator[tuple[int, torch.Tensor]]:
    """Seeded float64 uniforms, ``width`` per index, in chunks of rows of at most :data:`CHUNK` entries:
    (first row, (rows, width) tensor). The buffer is reused: consume a chunk before asking for the next."""
    indices = list(indices)
    rows = max(1, min(len(indices), CHUNK // max(width, 1)))
    buf = torch.empty(rows, width, dtype=torch.float64)
    g = torch.Generator(device="cpu")
    for start in range(0, len(indices), rows):
        part = indices[start : start + rows]
        for i, index in enumerate(part):
            g.manual_seed(basis_seed(round_seed, index, block, kind))
            torch.rand(width, generator=g, dtype=torch.float64, out=buf[i])
        yield start, buf[: len(part)]


def truncated_chunks(
    round_seed: int, indices: Sequence[int], block: int, d: int, dtype: torch.dtype = torch.float32
) -> Iterator[tuple[int, torch.Tensor]]:
    """The bases of ``indices`` of ``block`` in chunks of rows, (first row, (rows, d) in ``dtype``): N(0, 1)
    truncated to +-1/sqrt(d) by the inverse CDF of one seeded uniform per coordinate. Memory stays at a chunk
    whatever K_l d_l is (the codec projects and reconstructs chunk by chunk)."""
    mass = math.erf(1.0 / math.sqrt(2.0 * d))
    for start, u in _rows(round_seed, indices, block, d, "ferret-basis"):
        yield start, (math.sqrt(2.0) * torch.erfinv(u.mul_(2.0).sub_(1.0).mul_(mass))).to(dtype)


def truncated_bases(
    round_seed: int, indices: Sequence[int], block: int, d: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The (len(indices), d) matrix whose row k is the basis of candidate ``indices[k]`` of ``block``."""
    out = torch.empty(len(indices), d, dtype=dtype)
    for start, chunk in truncated_chunks(round_seed, indices, block, d, dtype):
        out[start : start + len(chunk)] = chunk
    return out


def gaussian_directions(
    pool_seed: int, indices: Sequence[int], d: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """(len(indices), d) N(0, 1) directions of the zeroth-order baselines (Box-Muller of 2d seeded uniforms, so
    the same seed gives the same direction in every process)."""
    out = torch.empty(len(indices), d, dtype=dtype)
    for start, u in _rows(pool_seed, indices, 0, 2 * d, "zo-direction"):
        u1, u2 = u[:, :d], u[:, d:]
        out[start : start + len(u)] = (
            torch.sqrt(-2.0 * torch.log1p(-u1)) * torch.cos(2.0 * math.pi * u2)
        ).to(dtype)
    return out
