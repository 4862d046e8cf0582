"""RaRSQ: rotation-augmented residual skill quantization (STAR, Algorithm 1), and the same quantizer with the
straight-through estimator (STE) as its baseline.

Residual quantization over D codebooks C_1..C_D of K codes each (dimension m)::

    r_0 = z
    k_d = argmin_k ||r_{d-1} - e^{(d,k)}||^2,     q_d = e^{(d, k_d)}
    q~_d = sg[lambda_d R_d] r_{d-1}                (RaRSQ)      q~_d = r_{d-1} + sg[q_d - r_{d-1}]   (STE)
    r_d = r_{d-1} - sg[q_d]
    z^ = sum_d q~_d

with hats for unit vectors, ``lambda = ||q|| / ||r||`` and the Householder-style rotation taking r^ to q^::

    R = I - 2 w w' + 2 q^ r^',      w = (r^ + q^) / ||r^ + q^||

applied in its efficient form ``R r = r - 2 (w'r) w + 2 (r^'r) q^`` (no dense R). The scale and the rotation are
detached (w, q^, r^ and lambda are constants of the backward pass), so the forward value is exactly the codeword
(``lambda R r = lambda ||r|| q^ = q``) and only the gradient changes: ``dL/dr = lambda R' dL/dq~``. Two points of
one Voronoi cell get different gradients (each is rotated by its own angle to the codeword); under STE they get
the same one. Where r^ is (nearly) -q^ the rotation is undefined (``||r^ + q^|| -> 0``), and where r is (nearly)
0 lambda is: such points fall back to STE, and the quantizer counts them.

Loss per depth: ``beta * mean((r_{d-1} - q_d)^2)`` with the gradient to both sides (the encoder is pulled to
the codeword and the codeword to the encoder's output); the codebook gets no gradient through q~ (it is
detached in both estimators, as in the reference library's ``rotate_to``).

Codebook initialisation (the issue): ``kaiming`` is the reference library's default, kaiming-uniform over a
(1, K, m) tensor, i.e. U(-b, b) with ``b = sqrt(2) * sqrt(3 / (K m)) = sqrt(6 / (K m))`` (0.108 at K = 32,
m = 16); ``normal`` draws N(0, init_sd^2). No k-means initialisation, no dead-code reset.
"""

from __future__ import annotations

import math

import torch
from torch import nn

FALLBACK_EPS = 1e-6


def rotation_trick(
    r: torch.Tensor,
    q: torch.Tensor,
    *,
    scale: bool = True,
    normalize_w: bool = True,
    detach: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(q~, fallback)``: q~ = sg[lambda R] r for rows r of ``r`` and codewords ``q`` (same shape (N, m)), and
    the boolean mask of rows that fell back to STE (r^ near -q^, or r near 0).

    The keyword switches are the broken variants the tests and the claims are checked against: ``scale=False``
    drops lambda (the forward value is then q^ ||r||, not q), ``normalize_w=False`` uses w = r^ + q^ unnormalised,
    ``detach=False`` lets the gradient flow into the rotation and the scale. The method is the default."""
    r_norm = r.norm(dim=-1, keepdim=True)
    q_norm = q.norm(dim=-1, keepdim=True)
    r_hat = r / r_norm.clamp_min(FALLBACK_EPS)
    q_hat = q / q_norm.clamp_min(FALLBACK_EPS)
    s = r_hat + q_hat
    s_norm = s.norm(dim=-1, keepdim=True)
    fallback = ((s_norm < FALLBACK_EPS) | (r_norm < FALLBACK_EPS)).squeeze(-1)
    w = s / s_norm.clamp_min(FALLBACK_EPS) if normalize_w else s
    lam = q_norm / r_norm.clamp_min(FALLBACK_EPS) if scale else torch.ones_like(r_norm)
    if detach:
        w, r_hat, q_hat, lam = w.detach(), r_hat.detach(), q_hat.detach(), lam.detach()
    rotated = r - 2 * (r * w).sum(-1, keepdim=True) * w + 2 * (r * r_hat).sum(-1, keepdim=True) * q_hat
    out = lam * rotated
    if fallback.any():
        out = torch.where(fallback[:, None], straight_through(r, q), out)
    return out, fallback


def straight_through(r: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """STE: the forward value q, the gradient to r unchanged (``r + sg[q - r]``)."""
    return r + (q - r).detach()


def dense_rotation(r: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """lambda R for one pair of vectors, as a dense (m, m) matrix (tests and the docstring's algebra only)."""
    r_hat, q_hat = r / r.norm(), q / q.norm()
    w = (r_hat + q_hat) / (r_hat + q_hat).norm()
    eye = torch.eye(len(r), dtype=r.dtype)
    return (q.norm() / r.norm()) * (eye - 2 * torch.outer(w, w) + 2 * torch.outer(q_hat, r_hat))


def perplexity(codes: torch.Tensor | list, K: int) -> tuple[float, int]:
    """``(exp(H(p)), active codes)`` of the empirical code distribution p over K codes (natural log)."""
    counts = torch.bincount(torch.as_tensor(codes).reshape(-1).long(), minlength=K).double()
    p = counts / counts.sum().clamp_min(1)
    nz = p[p > 0]
    return float(torch.exp(-(nz * nz.log()).sum())), int((counts > 0).sum())


class RaRSQ(nn.Module):
    """Residual quantizer over ``depths`` codebooks of ``codebook_size`` codes of dimension ``dim``.

    ``forward(z)`` takes (..., dim) and returns ``(quantized, codes, loss)``: z^ = sum_d q~_d (equal to
    sum_d q_d in value), the code indices (..., depths) and beta * sum_d mean((r_{d-1} - q_d)^2). After a
    forward, ``last_fallbacks`` holds how many (row, depth) pairs fell back to STE. ``rotation=False`` is the STE
    baseline. ``learn_codebook=False`` freezes the codebooks at their initialisation (a broken variant for the
    tests)."""

    def __init__(
        self,
        dim: int,
        codebook_size: int,
        depths: int,
        rotation: bool = True,
        beta: float = 0.25,
        init: str = "kaiming",
        init_sd: float = 0.25,
        learn_codebook: bool = True,
    ):
        super().__init__()
        if depths < 1:
            raise ValueError(f"depths = {depths}: need at least 1")
        if codebook_size < 2:
            raise ValueError(f"codebook_size = {codebook_size}: need at least 2 codes")
        if init not in ("kaiming", "normal"):
            raise ValueError(f"init = {init!r}: expected 'kaiming' or 'normal'")
        self.dim, self.codebook_size, self.depths = dim, codebook_size, depths
        self.rotation, self.beta, self.init, self.init_sd = rotation, beta, init, init_sd
        book = torch.empty(depths, codebook_size, dim)
        if init == "kaiming":
            bound = math.sqrt(6.0 / (codebook_size * dim))
            nn.init.uniform_(book, -bound, bound)
        else:
            nn.init.normal_(book, 0.0, init_sd)
        self.codebooks = nn.Parameter(book, requires_grad=learn_codebook)
        self.last_fallbacks = 0

    def extra_repr(self) -> str:
        est = "rotation" if self.rotation else "ste"
        return f"dim={self.dim}, K={self.codebook_size}, depths={self.depths}, estimator={est}"

    def nearest(self, r: torch.Tensor, depth: int) -> torch.Tensor:
        """Index of the nearest codeword of codebook ``depth`` for each row of r (N, dim)."""
        book = self.codebooks[depth]
        d2 = (r * r).sum(-1, keepdim=True) - 2 * r @ book.t() + (book * book).sum(-1)[None, :]
        return d2.argmin(-1)

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if z.shape[-1] != self.dim:
            raise ValueError(f"input's last dimension is {z.shape[-1]}, the quantizer's is {self.dim}")
        lead = z.shape[:-1]
        r = z.reshape(-1, self.dim)
        out = torch.zeros_like(r)
        codes, loss, fallbacks = [], r.new_zeros(()), 0
        for d in range(self.depths):
            k = self.nearest(r.detach(), d)
            q = self.codebooks[d][k]
            loss = loss + self.beta * ((r - q) ** 2).mean()
            if self.rotation:
                q_t, fb = rotation_trick(r, q.detach())
                fallbacks += int(fb.sum())
            else:
                q_t = straight_through(r, q.detach())
            out = out + q_t
            codes.append(k)
            r = r - q.detach()
        self.last_fallbacks = fallbacks
        return out.reshape(*lead, self.dim), torch.stack(codes, -1).reshape(*lead, self.depths), loss

    @torch.no_grad()
    def encode(self, z: torch.Tensor) -> torch.Tensor:
        """Codes (..., depths) of z, without the estimator."""
        return self.forward(z)[1]

    @torch.no_grad()
    def lookup(self, codes: torch.Tensor) -> torch.Tensor:
        """z^ = sum_d e^{(d, k_d)} for codes (..., depths)."""
        codes = torch.as_tensor(codes).long()
        return sum(self.codebooks[d][codes[..., d]] for d in range(self.depths))
