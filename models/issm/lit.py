"""Training: the model as a LightningModule, full batch (all trials in one step), Adam(1e-2, betas (0.8, 0.9))
as in the official ``infer``, one reparameterised sample per step from the module's own generator (so a fit
depends only on its seed)."""

from __future__ import annotations

from collections.abc import Callable

import lightning as L
import numpy as np
import torch

from icml25.training import make_trainer
from models.common.training import Progress

from .model import ISSM, Config


class LitISSM(L.LightningModule):
    def __init__(
        self,
        config: dict,
        B: list | None = None,
        lr: float = 1e-2,
        betas: tuple[float, float] = (0.8, 0.9),
        noise_seed: int = 0,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.model = ISSM(Config(**config), None if B is None else torch.tensor(B, dtype=torch.float32))
        self.noise = torch.Generator().manual_seed(noise_seed)
        self.history: list[dict[str, float]] = []

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        y, u = batch
        terms = self.model.terms(y, u, self.noise)
        self.log("train/elbo", terms["elbo"], prog_bar=True)
        self.history.append({k: float(v.detach()) for k, v in terms.items()})
        return terms["loss"]

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, betas=tuple(self.hparams.betas))


def fit_model(
    y: np.ndarray,
    u: np.ndarray,
    cfg: Config,
    iters: int,
    seed: int,
    B: np.ndarray | None = None,
    progress: Callable[[int, dict], None] | None = None,
    every: int = 100,
) -> tuple[ISSM, list[dict[str, float]]]:
    """Fit by ``iters`` full-batch Adam steps; returns the model (eval mode) and the per-step terms."""
    torch.manual_seed(seed)
    lit = LitISSM(cfg.to_dict(), None if B is None else np.asarray(B, float).tolist(), noise_seed=seed)
    from torch.utils.data import DataLoader, TensorDataset

    tensors = TensorDataset(torch.as_tensor(y, dtype=torch.float32), torch.as_tensor(u, dtype=torch.float32))
    data = DataLoader(tensors, batch_size=len(tensors))  # full batch, in order
    callbacks = [Progress(every, progress)] if progress is not None else []
    trainer = make_trainer(iters, seed, callbacks=callbacks)
    trainer.fit(lit, train_dataloaders=data)
    lit.model.eval()
    return lit.model, lit.history
