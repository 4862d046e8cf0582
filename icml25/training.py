"""The Lightning Trainer every paper uses: CPU, deterministic, quiet.

- ``seed_everything`` seeds Python, NumPy and torch from the stage's seed; ``deterministic=True``.
- No logger files, no checkpoints written by Lightning (artifacts are written by the stages, atomically),
  no model summary; the progress bar shows only on an interactive terminal outside CI.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import Any


def quiet() -> None:
    """Silence Lightning's start-up chatter (GPU/TPU availability lines, tips) and known harmless warnings."""
    for name in (
        "lightning",
        "lightning.pytorch",
        "lightning.fabric",
        "lightning.pytorch.utilities.rank_zero",
        "lightning.pytorch.accelerators.cuda",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*LightningModule.*no.*val.*")
    warnings.filterwarnings("ignore", message=".*number of training batches.*")
    warnings.filterwarnings("ignore", message=".*LeafSpec.*is deprecated.*")


def show_progress() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


def make_trainer(max_steps: int, seed: int, **overrides: Any) -> Any:
    import lightning as L

    quiet()
    L.seed_everything(seed, workers=True, verbose=False)
    kwargs: dict[str, Any] = dict(
        accelerator="cpu",
        devices=1,
        max_steps=max_steps,
        max_epochs=-1,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        enable_progress_bar=show_progress(),
        deterministic=True,
        num_sanity_val_steps=0,
        limit_val_batches=0,
    )
    kwargs.update(overrides)
    return L.Trainer(**kwargs)
