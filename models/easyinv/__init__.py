"""EasyInv (ICML 2025): DDIM inversion with latent aggregation.

- :mod:`.ddim`: the schedule, ``next_step``, DDIM / EasyInv / fixed-point inversion, DDIM reconstruction.
- :mod:`.net`: the small pixel-space eps-model and its Lightning training.
- :mod:`.data`: digits and a folder of images in [-1, 1].
- :mod:`.experiment`: PSNR, SSIM, the methods, the invariants; :mod:`.api`: ``invert``, ``reconstruct``;
  :mod:`.cli`: ``icml25 easyinv invert``.
"""

from .api import invert, reconstruct

__all__ = ["invert", "reconstruct"]
