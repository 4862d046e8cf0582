"""DDIM inversion, EasyInv's latent aggregation, fixed-point inversion and DDIM reconstruction.

Schedule (Stable Diffusion's): scaled-linear betas, ``beta_t = (sqrt(b0) + (sqrt(b1) - sqrt(b0)) t / (T-1))^2``
with b0 = 0.00085, b1 = 0.012, T = 1000; ``alpha_bar_t = prod_{s <= t} (1 - beta_s)``. With N steps the
inversion visits t = offset, offset + T/N, ..., i.e. 1, 21, ..., 981 for N = 50 and SD-1.4's offset 1.

**One inversion step** (the official ``next_step``), from z_i at step i with timestep t::

    t_prev = t - T/N;   a_prev = alpha_bar[t_prev], or alpha_bar[0] when t_prev < 0;   a_next = alpha_bar[t]
    eps = eps_theta(z_i, t)
    x0  = (z_i - sqrt(1 - a_prev) eps) / sqrt(a_prev)
    z_{i+1} = sqrt(a_next) x0 + sqrt(1 - a_next) eps

**EasyInv** (the notebook order): eps is predicted on the *un-mixed* z_i; inside the open window
s N < i < (s + l) N (and i > 0) the latent is mixed with the previous step's (mixed) input,
``z_i <- eta z_i + (1 - eta) z_prev``; then ``z_prev = z_i`` and the step is applied to the mixed z_i. SD-1.4:
eta 0.5, s 0.05, l 0.2 (i = 3..12 at N = 50); SDXL: eta 0.8, s 0.85, l 0.1. ``order="after_step"`` is
``example.py``'s "4-line" form, which mixes the step's output instead.

**Fixed-point inversion** (Pan et al. 2023): per step, z_{i+1} = next_step(eps(z_i, t), t, z_i), then
``iters`` times z_{i+1} <- next_step(eps(z_{i+1}, t), t, z_i): 1 + iters network calls per step.

**Reconstruction**: DDIM sampling from z_T over the same timesteps in reverse, unconditional,
``z_{i-1} = sqrt(a_prev) x0 + sqrt(1 - a_prev) eps`` with x0 from z_i at t (the inverse of ``next_step``).

**Precision**: ``fp32``, or ``bf16`` as the analogue of SD-1.4's half precision: eps under bfloat16 autocast and
the latent rounded to bfloat16 after every step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

T_TRAIN = 1000
WINDOWS = {"sd14": (0.5, 0.05, 0.2), "sdxl": (0.8, 0.85, 0.1)}  # (eta, s, l)
PRECISIONS = ("fp32", "bf16")
ORDERS = ("notebook", "after_step")


def alphas_cumprod(T: int = T_TRAIN, beta_start: float = 0.00085, beta_end: float = 0.012) -> torch.Tensor:
    """Stable Diffusion's scaled-linear schedule, in float32 (as diffusers computes it: equal to the bit)."""
    betas = torch.linspace(beta_start**0.5, beta_end**0.5, T, dtype=torch.float32) ** 2
    return torch.cumprod(1.0 - betas, dim=0)


def timesteps(steps: int, T: int = T_TRAIN, offset: int = 1) -> list[int]:
    """The inversion order: offset, offset + T/steps, ... (ascending)."""
    ratio = T // steps
    return [i * ratio + offset for i in range(steps)]


def in_window(i: int, steps: int, s: float, length: float) -> bool:
    """The open window s N < i < (s + l) N, and i > 0 (l: the window's length)."""
    return s * steps < i < (s + length) * steps and i > 0


def next_step(eps: torch.Tensor, t: int, z: torch.Tensor, ac: torch.Tensor, steps: int) -> torch.Tensor:
    """One DDIM inversion step from z at timestep t (module docstring)."""
    t_prev = t - T_TRAIN // steps
    a_prev = ac[t_prev] if t_prev >= 0 else ac[0]
    a_next = ac[min(t, T_TRAIN - 1)]
    x0 = (z - (1 - a_prev) ** 0.5 * eps) / a_prev**0.5
    return a_next**0.5 * x0 + (1 - a_next) ** 0.5 * eps


def prev_step(eps: torch.Tensor, t: int, z: torch.Tensor, ac: torch.Tensor, steps: int) -> torch.Tensor:
    """One DDIM sampling step from z at timestep t down to t - T/N (the inverse map of :func:`next_step`)."""
    t_prev = t - T_TRAIN // steps
    a_t = ac[t]
    a_prev = ac[t_prev] if t_prev >= 0 else ac[0]
    x0 = (z - (1 - a_t) ** 0.5 * eps) / a_t**0.5
    return a_prev**0.5 * x0 + (1 - a_prev) ** 0.5 * eps


EpsFn = Callable[[torch.Tensor, int], torch.Tensor]


class Counted:
    """Wraps eps(z, t): counts the network calls, runs them under bfloat16 autocast for ``bf16``."""

    def __init__(self, eps: EpsFn, precision: str = "fp32"):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        self.eps, self.precision, self.calls = eps, precision, 0

    def __call__(self, z: torch.Tensor, t: int) -> torch.Tensor:
        self.calls += 1
        with torch.no_grad():
            if self.precision == "bf16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    out = self.eps(z, t)
                return out.float()
            return self.eps(z, t).float()


def _round(z: torch.Tensor, precision: str) -> torch.Tensor:
    return z.to(torch.bfloat16).float() if precision == "bf16" else z


@dataclass
class Inversion:
    """z_T, every step's (mixed) input ``inputs[i]`` and the eps it used, and the network calls."""

    z_T: torch.Tensor
    inputs: list[torch.Tensor] = field(default_factory=list)  # the latent next_step was applied to, per step
    raw: list[torch.Tensor] = field(default_factory=list)  # the un-mixed latent eps was predicted on
    eps: list[torch.Tensor] = field(default_factory=list)
    mixed: list[bool] = field(default_factory=list)
    calls: int = 0


def invert(
    eps_fn: EpsFn,
    x0: torch.Tensor,
    ac: torch.Tensor,
    steps: int = 50,
    eta: float = 1.0,
    window: tuple[float, float] = (0.05, 0.2),
    fixed_point_iters: int = 0,
    precision: str = "fp32",
    order: str = "notebook",
    offset: int = 1,
    *,
    mix_regardless: bool = False,
    eps_on_mixed: bool = False,
    repredict: bool = False,
) -> Inversion:
    """DDIM inversion of x0 (eta = 1 or an empty window), EasyInv (eta < 1), or fixed-point inversion
    (``fixed_point_iters`` > 0). The keyword-only switches are the tests' broken variants: ``mix_regardless``
    mixes even when eta = 1 (as 0.5), ``eps_on_mixed`` predicts eps on the mixed latent, ``repredict`` predicts
    eps again on the mixed latent (an extra call)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    net = Counted(eps_fn, precision)
    s, length = window
    z = _round(x0.float(), precision)
    z_prev = z
    out = Inversion(z)
    for i, t in enumerate(timesteps(steps, offset=offset)):
        inside = in_window(i, steps, s, length)
        w = 0.5 if (mix_regardless and eta == 1.0) else eta
        mix = inside and (w != 1.0 or mix_regardless)
        raw = z
        if order == "notebook" and mix:
            mixed = w * z + (1 - w) * z_prev
            e = net(mixed, t) if eps_on_mixed else net(z, t)
            if repredict:
                e = net(mixed, t)
            z = _round(mixed, precision)  # the official latents are half precision: the mix is rounded too
        else:
            e = net(z, t)
        z_prev = z
        out.inputs.append(z)
        out.raw.append(raw)
        out.eps.append(e)
        out.mixed.append(bool(mix and order == "notebook"))
        z_next = next_step(e, t, z, ac, steps)
        for _ in range(fixed_point_iters):
            z_next = next_step(net(z_next, t), t, z, ac, steps)
        if order == "after_step" and mix:
            z_next = w * z_next + (1 - w) * z
        z = _round(z_next, precision)
    out.z_T, out.calls = z, net.calls
    return out


def reconstruct(
    eps_fn: EpsFn,
    z_T: torch.Tensor,
    ac: torch.Tensor,
    steps: int = 50,
    precision: str = "fp32",
    offset: int = 1,
) -> tuple[torch.Tensor, int]:
    """DDIM sampling from z_T over the inversion's timesteps in reverse; returns (x0, network calls)."""
    net = Counted(eps_fn, precision)
    z = z_T
    for t in reversed(timesteps(steps, offset=offset)):
        z = _round(prev_step(net(z, t), t, z, ac, steps), precision)
    return z, net.calls
