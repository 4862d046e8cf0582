"""Checks of the rotation on a trained model's residuals.

- ``forward_gap``: max over chunks and depths of |q~_d - q_d| in the model's float32 (q~ must equal the codeword
  in value: lambda R r = q).
- ``peer_gap``: in float64, on the same residuals and the trained codebooks, the largest absolute difference of
  q~ and of its input gradient (against a seeded upstream gradient g, i.e. lambda R' g) from
  vector-quantize-pytorch's ``rotate_to``, the reference implementation.

The keyword switches of :func:`models.star.quantizer.rotation_trick` (``scale``, ``normalize_w``, ``detach``)
pass through, so the tests can show that each broken rotation fails its check."""

from __future__ import annotations

import numpy as np
import torch

from .quantizer import rotation_trick


@torch.no_grad()
def residuals(
    model, x: np.ndarray, dtype: torch.dtype = torch.float32
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(r_{d-1}, q_d) per depth for standardised chunks x (n, H * A) through a RaRSQ skill model."""
    z = model.encoder(torch.as_tensor(x, dtype=torch.float32))
    codes = model.quantizer.encode(z)  # the model's own codes (float32), whatever dtype the residuals take
    r = z.to(dtype)
    book = model.quantizer.codebooks.detach().to(dtype)
    out = []
    for d in range(model.quantizer.depths):
        q = book[d][codes[:, d]]
        out.append((r.clone(), q))
        r = r - q
    return out


def forward_gap(model, x: np.ndarray, **switches) -> float:
    gap = 0.0
    for r, q in residuals(model, x):
        q_t, _ = rotation_trick(r, q, **switches)
        gap = max(gap, float((q_t - q).abs().max()))
    return gap


def peer_gap(model, x: np.ndarray, seed: int = 0, **switches) -> dict[str, float]:
    """Largest |value| and |gradient| differences from the reference ``rotate_to`` (float64)."""
    from vector_quantize_pytorch.vector_quantize_pytorch import rotate_to

    g = torch.Generator().manual_seed(seed)
    value = grad = 0.0
    for r, q in residuals(model, x, torch.float64):
        upstream = torch.randn(r.shape, generator=g, dtype=torch.float64)
        mine_in = r.clone().requires_grad_(True)
        mine, _ = rotation_trick(mine_in, q, **switches)
        (mine_grad,) = torch.autograd.grad((mine * upstream).sum(), mine_in)
        ref_in = r.clone().requires_grad_(True)
        ref = rotate_to(ref_in, q)
        (ref_grad,) = torch.autograd.grad((ref * upstream).sum(), ref_in)
        value = max(value, float((mine - ref).detach().abs().max()))
        grad = max(grad, float((mine_grad - ref_grad).abs().max()))
    return {"value": value, "gradient": grad, "max": max(value, grad)}


@torch.no_grad()
def fallbacks(model, x: np.ndarray) -> int:
    """How many (chunk, depth) pairs of x fall back to STE (r^ near -q^, or r near 0)."""
    total = 0
    for r, q in residuals(model, x):
        total += int(rotation_trick(r, q)[1].sum())
    return total
