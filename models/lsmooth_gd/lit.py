"""The training experiment: full-batch gradient descent on a small tanh MLP (scikit-learn's digits, squared
loss on one-hot targets), with the output layer's initial weights scaled up by ``init_scale``: the early
gradients are large and the curvature grows with them, the regime where (L0, L1)-smoothness,
ell = L0 + L1 s, is the working assumption for neural networks (Zhang et al. 2020).

Optimisers at the same budget of full-batch steps:
- ``lsmooth``: :class:`LSmoothGD` with ell = L0 + L1 s (gamma = log1p(L1 s / (L0 + L1 s)) / (L1 s));
- ``sgd``: plain GD with step 1/L0;
- ``clipped``: GD with step 1/L0 and the gradient clipped to norm L0/L1 (step min(1/L0, 1/(L1 s)) x s).
"""

from __future__ import annotations

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .ell import Ell
from .optim import LSmoothGD

OPTIMIZERS = ("lsmooth", "sgd", "clipped")


def mlp(n_in: int, hidden: int, n_out: int, init_scale: float, seed: int) -> nn.Sequential:
    gen = torch.Generator().manual_seed(seed)
    net = nn.Sequential(nn.Linear(n_in, hidden), nn.Tanh(), nn.Linear(hidden, n_out))
    with torch.no_grad():
        for layer in (net[0], net[2]):
            bound = 1.0 / np.sqrt(layer.in_features)
            layer.weight.uniform_(-bound, bound, generator=gen)
            layer.bias.zero_()
        net[2].weight.mul_(init_scale)
    return net


class FullBatchGD(L.LightningModule):
    def __init__(
        self,
        n_in: int,
        n_out: int,
        hidden: int,
        init_scale: float,
        optimizer: str,
        L0: float,
        L1: float,
        seed: int,
    ):
        super().__init__()
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {optimizer!r}; one of {', '.join(OPTIMIZERS)}")
        self.save_hyperparameters()
        self.net = mlp(n_in, hidden, n_out, init_scale, seed)
        self.history: list[dict] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        target = nn.functional.one_hot(y, self.hparams.n_out).float()
        loss = ((self.net(x) - target) ** 2).sum(1).mean() / 2
        self.log("train/loss", loss)
        return loss

    def on_before_optimizer_step(self, optimizer):
        grads = [p.grad for p in self.parameters() if p.grad is not None]
        s = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
        hp = self.hparams
        if hp.optimizer == "clipped" and s > hp.L0 / hp.L1:
            for g in grads:
                g.mul_(hp.L0 / hp.L1 / s)
        self._grad_norm = s

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.history.append(
            {"step": len(self.history), "loss": float(outputs["loss"]), "grad_norm": self._grad_norm}
        )

    def configure_optimizers(self):
        hp = self.hparams
        if hp.optimizer == "lsmooth":
            return LSmoothGD(self.parameters(), Ell.affine(hp.L0, hp.L1))
        return torch.optim.SGD(self.parameters(), lr=1.0 / hp.L0)


def full_batch(x: np.ndarray, y: np.ndarray) -> DataLoader:
    data = TensorDataset(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long))
    return DataLoader(data, batch_size=len(data), shuffle=False)


def accuracy(net: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    with torch.no_grad():
        pred = net(torch.as_tensor(x, dtype=torch.float32)).argmax(1).numpy()
    return float(np.mean(pred == y))
