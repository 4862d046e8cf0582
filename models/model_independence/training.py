"""Training the models of the controlled experiment (the train stage orchestrates; see :mod:`.experiment`).

Every model is a residual GLU classifier (:mod:`.glu`) on the prepared digits, trained with Lightning
(:class:`~.lit.GLULightning`: an ensemble of K models in one pass, each updated as if trained alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def glu_config(d_model: int, d_hidden: int, n_blocks: int) -> Any:
    """The :class:`~.glu.GLUConfig` of every model (64 pixel inputs, 10 classes)."""
    from .glu import GLUConfig

    return GLUConfig(d_model=d_model, d_hidden=d_hidden, n_blocks=n_blocks)


def fit(
    model: Any, prepared: Path, batch_size: int, steps: int, classes: tuple[int, ...] | None, seed: int
) -> None:
    """Train ``model`` (a :class:`~.lit.GLULightning`) for ``steps`` steps on the train split of the prepared
    digits (only ``classes`` when given), batches shuffled by ``seed``; the Trainer is seeded by ``seed`` too."""
    from icml25.training import make_trainer

    from .lit import DigitsData

    data = DigitsData(prepared, batch_size, seed=seed, classes=classes)
    make_trainer(max_steps=steps, seed=seed).fit(model, datamodule=data)
