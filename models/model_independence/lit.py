"""Lightning wrappers: the digits DataModule and the ensemble classifier.

:class:`GLULightning` trains a :class:`~.glu.GLUEnsemble` of K models with one shared step: the loss is the sum
over models of the mean cross-entropy, L = sum_k CE(f_k(x), y), so each model receives its own gradient and
the element-wise optimisers (Adam, SGD) update each exactly as if it were trained alone on the same batches.
"""

from __future__ import annotations

from pathlib import Path

import lightning as L
import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from .data import PIXEL_MAX, PIXELS
from .glu import GLUConfig, GLUEnsemble


def load_split(
    prepared: Path, split: str, classes: tuple[int, ...] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Features scaled to [0, 1] and labels of one split of the prepared digits (optionally some classes)."""
    frame = pd.read_csv(prepared / f"{split}.csv")
    if classes is not None:
        frame = frame[frame["label"].isin(list(classes))]
    x = torch.tensor(frame[PIXELS].to_numpy(np.float32) / PIXEL_MAX)
    y = torch.tensor(frame["label"].to_numpy(np.int64))
    return x, y


class DigitsData(L.LightningDataModule):
    """Reads only data/model_independence/prepared: the train split, shuffled by a seeded generator."""

    def __init__(self, prepared: Path, batch_size: int, seed: int, classes: tuple[int, ...] | None = None):
        super().__init__()
        self.prepared, self.batch_size, self.seed, self.classes = Path(prepared), batch_size, seed, classes

    def setup(self, stage: str | None = None) -> None:
        self.train_set = TensorDataset(*load_split(self.prepared, "train", self.classes))

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            self.train_set,
            batch_size=self.batch_size,
            shuffle=True,
            drop_last=True,
            generator=torch.Generator().manual_seed(self.seed),
        )


class GLULightning(L.LightningModule):
    def __init__(self, cfg: GLUConfig, seeds: list[int], optimizer: str = "adam", lr: float = 1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.net = GLUEnsemble(cfg, seeds)

    def step(self, batch: tuple[torch.Tensor, torch.Tensor], split: str) -> torch.Tensor:
        x, y = batch
        logits = self.net(x)  # K x N x C
        losses = torch.stack([F.cross_entropy(lk, y) for lk in logits])
        acc = (logits.argmax(-1) == y).float().mean()
        self.log(f"{split}/loss", losses.mean(), prog_bar=True)
        self.log(f"{split}/acc", acc, prog_bar=True)
        return losses.sum()

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self.step(batch, "train")

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if self.hparams.optimizer == "adam":
            return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


@torch.no_grad()
def accuracy(model: GLUEnsemble, x: torch.Tensor, y: torch.Tensor) -> list[float]:
    """Test accuracy of each ensemble member."""
    return [float(a) for a in (model(x).argmax(-1) == y).float().mean(dim=1)]
