"""The reproduction's measurements: every method, precision and step count on the test images, the eta sweep,
and the three implementation checks the claims gate.

Metrics per image: PSNR = 10 log10(range^2 / MSE) with range 2 (images in [-1, 1]), and SSIM computed globally
over the image (one window: the 8x8 digits are smaller than SSIM's usual 11x11 Gaussian window),
``((2 mu_x mu_y + C1)(2 s_xy + C2)) / ((mu_x^2 + mu_y^2 + C1)(s_x^2 + s_y^2 + C2))``, C1 = (0.01 range)^2,
C2 = (0.03 range)^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from . import ddim

KIND = "easyinv-eps"
RANGE = 2.0


def psnr(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    mse = ((x - y) ** 2).flatten(1).mean(dim=1)
    return 10 * torch.log10(RANGE**2 / mse.clamp_min(1e-20))


def ssim(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    a, b = x.flatten(1), y.flatten(1)
    ma, mb = a.mean(1), b.mean(1)
    va, vb = a.var(1, unbiased=False), b.var(1, unbiased=False)
    cov = ((a - ma[:, None]) * (b - mb[:, None])).mean(1)
    c1, c2 = (0.01 * RANGE) ** 2, (0.03 * RANGE) ** 2
    return ((2 * ma * mb + c1) * (2 * cov + c2)) / ((ma**2 + mb**2 + c1) * (va + vb + c2))


def save_model(model: Any, path: Path) -> None:
    from models.common.weights import save_weights

    save_weights(
        path,
        model.state_dict(),
        {"kind": KIND, "shape": list(model.shape), "hidden": model.net[0].out_features},
    )


def load_model(path: Path) -> Any:
    from icml25.errors import UserError
    from models.common.weights import load_weights

    from .net import EpsMLP

    tensors, meta = load_weights(path, KIND)
    try:
        model = EpsMLP(tuple(meta["shape"]), int(meta["hidden"]))
        model.load_state_dict(tensors)
    except (KeyError, TypeError, RuntimeError, ValueError) as exc:
        raise UserError(
            f"{path}: the weights do not match the eps model ({str(exc).splitlines()[0]})"
        ) from None
    return model.eval()


@dataclass(frozen=True)
class Method:
    name: str
    eta: float = 1.0
    window: tuple[float, float] = (0.05, 0.2)
    fixed_point_iters: int = 0
    order: str = "notebook"


def methods(
    eta: float, window: tuple[float, float], sdxl: tuple[float, float, float], fp_iters: int
) -> list[Method]:
    return [
        Method("ddim"),
        Method("easyinv", eta, window),
        Method("easyinv_sdxl", sdxl[0], (sdxl[1], sdxl[2])),
        Method("easyinv_after_step", eta, window, order="after_step"),
        Method("fixed_point", fixed_point_iters=fp_iters),
    ]


def run_method(
    eps: Any, x: torch.Tensor, m: Method, steps: int, precision: str, **stub: Any
) -> dict[str, Any]:
    """Invert and reconstruct x with method m; per-image PSNR and SSIM, calls, z_T, the inversion."""
    ac = ddim.alphas_cumprod()
    inv = ddim.invert(eps, x, ac, steps, m.eta, m.window, m.fixed_point_iters, precision, m.order, **stub)
    rec, _ = ddim.reconstruct(eps, inv.z_T, ac, steps, precision)
    return {"psnr": psnr(rec, x), "ssim": ssim(rec, x), "calls": inv.calls, "inversion": inv, "rec": rec}


def checks(
    eps: Any, x: torch.Tensor, steps: int, eta: float, window: tuple[float, float], **stub: Any
) -> dict[str, float]:
    """The invariants, in fp32: EasyInv with eta = 1 and with an empty window against DDIM inversion (max abs
    difference of z_T); the ordering residual at the window steps, recomputed from the stored trajectory
    (z_{i+1} against next_step(eps(z_i), t, eta z_i + (1 - eta) z_prev), eps recomputed on the un-mixed z_i);
    EasyInv's network calls minus DDIM's."""
    ac = ddim.alphas_cumprod()
    base = ddim.invert(eps, x, ac, steps, 1.0, window)
    one = ddim.invert(eps, x, ac, steps, 1.0, window, **stub)
    empty = ddim.invert(eps, x, ac, steps, eta, (window[0], 0.0), **stub)
    easy = ddim.invert(eps, x, ac, steps, eta, window, **stub)
    ts = ddim.timesteps(steps)
    residual = 0.0
    for i, t in enumerate(ts):
        if not ddim.in_window(i, steps, *window):
            continue
        z_i, z_prev = easy.raw[i], easy.inputs[i - 1]
        with torch.no_grad():
            e = eps(z_i, t).float()
        expected = ddim.next_step(e, t, eta * z_i + (1 - eta) * z_prev, ac, steps)
        z_next = easy.raw[i + 1] if i + 1 < len(ts) else easy.z_T
        residual = max(residual, float((z_next - expected).abs().max()))
    return {
        "eta_one_diff": float((one.z_T - base.z_T).abs().max()),
        "empty_window_diff": float((empty.z_T - base.z_T).abs().max()),
        "ordering_residual": residual,
        "window_steps": sum(ddim.in_window(i, steps, *window) for i in range(steps)),
        "calls_easyinv": easy.calls,
        "calls_ddim": base.calls,
    }
