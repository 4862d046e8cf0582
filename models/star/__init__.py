"""STAR (Li et al., ICML 2025): rotation-augmented residual skill quantization and a causal skill transformer.

- :mod:`.quantizer`: :class:`RaRSQ` (the rotation trick at every residual depth; ``rotation=False`` is STE),
  perplexity; :mod:`.skills`: the chunk autoencoder and its Lightning fit (stage 1).
- :mod:`.cst`: :class:`CausalSkillTransformer` (depth-wise autoregressive codes + offset head) and its fit
  (stage 2); :mod:`.policy`: standardisation, stage-2 samples, closed-loop rollout.
- :mod:`.world`: the synthetic point-mass skill world that stands in for LIBERO.
- :mod:`.experiment`, :mod:`.evaluation`: the reproduction's fits, summaries and rotation checks.
- :mod:`.api`: read a LIBERO-style HDF5, fit / save / load skill models (the user entry); :mod:`.cli`:
  ``icml25 star``.

The classes are imported lazily, so ``models.star.world`` does not pull in torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CausalSkillTransformer", "RaRSQ"]


def __getattr__(name: str) -> Any:
    if name == "RaRSQ":
        from .quantizer import RaRSQ

        return RaRSQ
    if name == "CausalSkillTransformer":
        from .cst import CausalSkillTransformer

        return CausalSkillTransformer
    raise AttributeError(f"module 'models.star' has no attribute {name!r}")
