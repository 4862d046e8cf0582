"""The Python entry: ``invert`` and ``reconstruct`` for any eps-predictor.

    >>> from models.easyinv import invert, reconstruct
    >>> out = invert(eps, x0, alphas_cumprod, steps=50, eta=0.5, window=(0.05, 0.2))   # EasyInv
    >>> out.z_T, out.inputs, out.calls
    >>> x_rec, calls = reconstruct(eps, out.z_T, alphas_cumprod, steps=50)

``eps`` is a callable eps(z, t), or a diffusers ``UNet2DModel`` (called as ``unet(z, t).sample``); with
``alphas_cumprod=None`` the schedule is Stable Diffusion's scaled-linear one, or the ``alphas_cumprod`` of a
diffusers scheduler passed instead. Bad arguments raise :class:`~icml25.errors.UserError` naming the value.
"""

from __future__ import annotations

from typing import Any

import torch

from icml25.errors import UserError

from . import ddim


def as_eps(model: Any) -> ddim.EpsFn:
    """A callable eps(z, t) from a callable or a diffusers UNet (whose output has ``.sample``)."""
    if hasattr(model, "config") and hasattr(model, "forward") and "UNet" in type(model).__name__:

        def eps(z: torch.Tensor, t: int) -> torch.Tensor:
            return model(z, torch.full((z.shape[0],), int(t))).sample

        return eps
    if not callable(model):
        raise UserError(f"eps must be a callable eps(z, t) or a diffusers UNet, got {type(model).__name__}")
    return model


def schedule(alphas_cumprod: Any) -> torch.Tensor:
    if alphas_cumprod is None:
        return ddim.alphas_cumprod()
    ac = getattr(alphas_cumprod, "alphas_cumprod", alphas_cumprod)  # a diffusers scheduler
    ac = torch.as_tensor(ac, dtype=torch.float32)
    if ac.ndim != 1 or len(ac) != ddim.T_TRAIN:
        raise UserError(f"alphas_cumprod must hold {ddim.T_TRAIN} values, got shape {tuple(ac.shape)}")
    return ac


def check(
    steps: int, eta: float, window: tuple[float, float], fixed_point_iters: int, precision: str
) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2 or ddim.T_TRAIN % steps:
        raise UserError(f"steps must be an integer >= 2 that divides {ddim.T_TRAIN}, got {steps!r}")
    if not 0.0 <= eta <= 1.0:
        raise UserError(f"eta must be in [0, 1], got {eta!r}")
    if len(window) != 2 or not all(0.0 <= v <= 1.0 for v in window) or window[0] + window[1] > 1.0:
        raise UserError(f"window (s, l) must lie in [0, 1] with s + l <= 1, got {tuple(window)}")
    if fixed_point_iters < 0:
        raise UserError(f"fixed_point_iters must be >= 0, got {fixed_point_iters}")
    if precision not in ddim.PRECISIONS:
        raise UserError(f"precision must be one of {', '.join(ddim.PRECISIONS)}, got {precision!r}")


def invert(
    eps: Any,
    x0: Any,
    alphas_cumprod: Any = None,
    steps: int = 50,
    eta: float = 0.5,
    window: tuple[float, float] = (0.05, 0.2),
    fixed_point_iters: int = 0,
    precision: str = "fp32",
) -> ddim.Inversion:
    """EasyInv inversion of x0 (eta = 1: DDIM inversion; ``fixed_point_iters``: fixed-point inversion)."""
    check(steps, eta, tuple(window), fixed_point_iters, precision)
    x = torch.as_tensor(x0, dtype=torch.float32)
    return ddim.invert(
        as_eps(eps), x, schedule(alphas_cumprod), steps, eta, tuple(window), fixed_point_iters, precision
    )


def reconstruct(
    eps: Any, z_T: Any, alphas_cumprod: Any = None, steps: int = 50, precision: str = "fp32"
) -> tuple[torch.Tensor, int]:
    """DDIM sampling from z_T; (x0, network calls)."""
    check(steps, 1.0, (0.0, 0.0), 0, precision)
    return ddim.reconstruct(
        as_eps(eps), torch.as_tensor(z_T, dtype=torch.float32), schedule(alphas_cumprod), steps, precision
    )
