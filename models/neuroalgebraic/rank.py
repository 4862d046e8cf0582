"""The Jacobian of w -> (f_w(x_1), ..., f_w(x_N)) and its rank: in float64 (torch.func) and exactly over GF(p).

Float: parameters ~ N(0, 1 / fan_in), points uniform on the unit sphere, N = the number of monomials of degree D
in d_0 variables (so the rows number the ambient dimension); the rank is read at the largest gap of the log
singular values, or is full when the smallest relative singular value exceeds ``FULL`` = 1e-10. The spec's fixed
relative threshold (``threshold=1e-7``) is kept as a switch: the claims' stub.

Exact: the same Jacobian at uniformly random parameters and points of GF(p), p = 2^31 - 1, by forward-mode
differentiation mod p (value and tangent pushed through each layer; products of two residues stay below 2^62, so
int64 never overflows when every product is reduced before it is summed), then Gaussian elimination mod p. The
rank over GF(p) at a random point never exceeds the generic rank over the rationals and equals it with high
probability; ``exact_rank`` takes the larger of ``draws`` draws.
"""

from __future__ import annotations

import math

import numpy as np

from .neuromanifold import Architecture

P = 2**31 - 1
FULL = 1e-10


def points_needed(arch: Architecture) -> int:
    """Generic points enough for evaluation to be injective on degree-D forms: the monomials of degree D in d_0
    variables (d_0 for linear networks, D = 1)."""
    D = arch.poly_degree
    return math.comb(arch.widths[0] + D - 1, D)


# ------------------------------------------------------------------------------------------------ float64
def float_jacobian(arch: Architecture, seed: int = 0):
    """(J, singular values) at Gaussian parameters and points on the sphere, float64 (torch.func.jacfwd)."""
    import torch
    from torch.func import jacfwd

    arch.check_cap()
    g = torch.Generator().manual_seed(seed)
    shapes = arch.layers
    free = shapes[:-1] if arch.fixed_output else shapes
    theta = torch.cat([torch.randn(r * c, generator=g, dtype=torch.float64) / math.sqrt(c) for r, c in free])
    x = torch.randn(points_needed(arch), arch.widths[0], generator=g, dtype=torch.float64)
    x = x / x.norm(dim=1, keepdim=True)

    def f(th):
        z, at = x, 0
        for i, (r, c) in enumerate(shapes):
            last = i == len(shapes) - 1
            if last and arch.fixed_output:
                W = torch.ones(r, c, dtype=torch.float64)
            else:
                W = th[at : at + r * c].reshape(r, c)
                at += r * c
            z = z @ W.T
            if not last:
                z = z**arch.degree
        return z.reshape(-1)

    J = jacfwd(f)(theta)
    return J, torch.linalg.svdvals(J).numpy()


def rank_from_singular_values(s: np.ndarray, threshold: float | None = None) -> int:
    """The numerical rank: at the largest gap of log singular values (full when s_min / s_max > FULL), or with a
    fixed relative ``threshold`` (the spec's 1e-7: the stub)."""
    s = np.sort(np.asarray(s, np.float64))[::-1]
    if len(s) == 0 or s[0] == 0:
        return 0
    rel = s / s[0]
    if threshold is not None:
        return int((rel > threshold).sum())
    if rel[-1] > FULL:
        return len(s)
    logs = np.log10(np.maximum(rel, 1e-300))
    return int(np.argmax(logs[:-1] - logs[1:]) + 1)


def float_rank(arch: Architecture, seed: int = 0, threshold: float | None = None) -> int:
    return rank_from_singular_values(float_jacobian(arch, seed)[1], threshold)


# ------------------------------------------------------------------------------------------------ GF(p)
def matmul_mod(a: np.ndarray, b: np.ndarray, p: int = P) -> np.ndarray:
    """(a @ b) mod p for residues in [0, p): one inner index at a time, each product reduced before it is
    summed (no int64 overflow)."""
    out = np.zeros((a.shape[0], b.shape[1]), np.int64)
    for i in range(a.shape[1]):
        out = (out + (a[:, i, None] * b[None, i, :]) % p) % p
    return out


def jacobian_mod_p(arch: Architecture, rng: np.random.Generator, p: int = P) -> np.ndarray:
    """The Jacobian (N d_L, #params) over GF(p) at uniformly random parameters and points."""
    arch.check_cap()
    N, P_ = points_needed(arch), arch.params
    z = rng.integers(0, p, (N, arch.widths[0]), dtype=np.int64)
    dz = np.zeros((N, P_, arch.widths[0]), np.int64)
    at = 0
    shapes = arch.layers
    for i, (r, c) in enumerate(shapes):
        last = i == len(shapes) - 1
        fixed = last and arch.fixed_output
        W = np.ones((r, c), np.int64) if fixed else rng.integers(0, p, (r, c), dtype=np.int64)
        h = matmul_mod(z, W.T, p)
        dh = matmul_mod(dz.reshape(N * P_, c), W.T, p).reshape(N, P_, r)
        if not fixed:  # d h_j / d W[j, m] = z_m
            for j in range(r):
                dh[:, at + j * c : at + (j + 1) * c, j] = (dh[:, at + j * c : at + (j + 1) * c, j] + z) % p
            at += r * c
        if last:
            z, dz = h, dh
        else:  # z = h^k, dz = k h^(k-1) dh
            k = arch.degree
            power = np.ones_like(h)
            for _ in range(k - 1):
                power = (power * h) % p
            z = (power * h) % p
            dz = ((k * power % p)[:, None, :] * dh) % p
    return dz.transpose(0, 2, 1).reshape(N * arch.widths[-1], P_)


def rank_mod_p(M: np.ndarray, p: int = P) -> int:
    """Rank over GF(p) by Gaussian elimination in int64 (entries reduced mod p first)."""
    M = np.array(M, dtype=np.int64) % p
    rows, cols = M.shape
    r = 0
    for c in range(cols):
        if r == rows:
            break
        nz = np.flatnonzero(M[r:, c])
        if len(nz) == 0:
            continue
        piv = r + nz[0]
        if piv != r:
            M[[r, piv]] = M[[piv, r]]
        M[r] = (M[r] * pow(int(M[r, c]), p - 2, p)) % p
        below = M[r + 1 :, c]
        hit = np.flatnonzero(below)
        if len(hit):
            idx = r + 1 + hit
            M[idx] = (M[idx] - (M[idx, c, None] * M[r][None, :]) % p) % p
        r += 1
    return r


def exact_rank(arch: Architecture, seed: int = 0, draws: int = 2) -> int:
    """The larger rank over GF(p) of ``draws`` random Jacobians."""
    rng = np.random.default_rng(seed)
    return max(rank_mod_p(jacobian_mod_p(arch, rng)) for _ in range(draws))
