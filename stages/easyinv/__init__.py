"""EasyInv: DDIM inversion by latent aggregation: the controlled CPU reproduction.

Zhang et al. ICML 2025. Official code: https://github.com/potato-kitty/EasyInv. Stable Diffusion and COCO cannot
run here: the rule is tested on a small pixel-space eps-model trained on scikit-learn's digits, and the report
says so. EasyInv's step (models/easyinv/ddim.py)::

    eps = eps_theta(z_i, t)                                   # on the un-mixed latent
    if s N < i < (s + l) N and i > 0:  z_i <- eta z_i + (1 - eta) z_prev
    z_prev = z_i;   z_{i+1} = next_step(eps, t, z_i)         # DDIM inversion on the mixed latent

Stages: prepare (digits in [-1, 1], 1,500 train / 297 test, or a folder of square images) -> validate (GX: shape,
range, finite) -> train (the eps-MLP, Lightning) -> evaluate (DDIM, EasyInv, the SDXL window, the mix-after-step
order and fixed-point inversion in fp32 and bf16 at N = 10, 20, 50; the eta sweep; the invariants) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="digits", metadata={"choices": ("digits", "folder")})
    folder: str = (
        "images"  # data/easyinv/input/<folder>/: square images (source: folder), used as the test set
    )
    size: int = field(default=8, metadata={"ge": 4})  # folder images are resized to size x size, grayscale
    train: int = field(default=1500, metadata={"ge": 1})
    test: int = field(default=297, metadata={"ge": 1})


@dataclass(frozen=True)
class Train:
    steps: int = field(default=8000, metadata={"ge": 1})
    hidden: int = field(default=256, metadata={"ge": 8})
    lr: float = field(default=2e-3, metadata={"gt": 0.0})
    batch: int = field(default=256, metadata={"ge": 1})


@dataclass(frozen=True)
class Evaluate:
    steps: tuple[int, ...] = field(default=(10, 20, 50), metadata={"ge": 2})
    eta: float = field(default=0.5, metadata={"ge": 0.0, "le": 1.0})
    window: tuple[float, ...] = field(default=(0.05, 0.2), metadata={"ge": 0.0, "le": 1.0})  # (s, l), SD-1.4
    sdxl: tuple[float, ...] = field(default=(0.8, 0.85, 0.1), metadata={"ge": 0.0, "le": 1.0})  # (eta, s, l)
    fixed_point_iters: int = field(default=6, metadata={"ge": 1})
    precisions: tuple[str, ...] = field(default=("fp32", "bf16"), metadata={"choices": ("fp32", "bf16")})
    eta_sweep: tuple[float, ...] = field(default=(0.0, 0.25, 0.5, 0.75, 1.0), metadata={"ge": 0.0, "le": 1.0})
    images: int = field(default=297, metadata={"ge": 1})


PAPER = Paper(
    slug="easyinv",
    citation="Zhang et al. *EasyInv: DDIM inversion*. ICML 2025.",
    url="https://github.com/potato-kitty/EasyInv",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
