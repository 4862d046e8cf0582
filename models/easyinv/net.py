"""The small pixel-space eps-predictor the rule is tested on (Stable Diffusion cannot run here), and its
training as a LightningModule.

``EpsMLP``: the image (C x H x W, flattened) and a sinusoidal embedding of t (``time_dim`` features,
frequencies 10000^(-k / (time_dim/2))) go through Linear -> SiLU -> Linear -> SiLU -> Linear, ``hidden`` wide:
about 130k parameters for 8x8 digits at hidden 256.

Training (DDPM's epsilon objective): t ~ U{0..T-1}, eps ~ N(0, I),
``z_t = sqrt(alpha_bar_t) x0 + sqrt(1 - alpha_bar_t) eps``, loss = ||eps_theta(z_t, t) - eps||^2; Adam(2e-3) with
cosine decay to 0 over the run; batch 256.
"""

from __future__ import annotations

import math

import lightning as L
import torch
from torch import nn

from models.common.training import Progress


def time_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None, :]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=1)


class EpsMLP(nn.Module):
    def __init__(self, shape: tuple[int, int, int] = (1, 8, 8), hidden: int = 256, time_dim: int = 64):
        super().__init__()
        self.shape, self.time_dim = tuple(shape), time_dim
        d = int(math.prod(shape))
        self.net = nn.Sequential(
            nn.Linear(d + time_dim, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
            nn.Linear(hidden, d),
        )

    def forward(self, z: torch.Tensor, t: torch.Tensor | int) -> torch.Tensor:
        n = z.shape[0]
        tt = torch.full((n,), int(t)) if isinstance(t, int) else t.reshape(-1).expand(n)
        h = torch.cat([z.reshape(n, -1), time_embedding(tt, self.time_dim).to(z.dtype)], dim=1)
        return self.net(h).reshape(n, *self.shape)


class LitEps(L.LightningModule):
    def __init__(self, shape: tuple[int, int, int], hidden: int, lr: float, steps: int):
        super().__init__()
        self.save_hyperparameters()
        self.model = EpsMLP(tuple(shape), hidden)
        from .ddim import alphas_cumprod

        self.register_buffer("ac", alphas_cumprod())
        self.history: list[float] = []

    def training_step(self, batch: tuple[torch.Tensor], batch_idx: int) -> torch.Tensor:
        (x0,) = batch
        t = torch.randint(0, len(self.ac), (x0.shape[0],))
        eps = torch.randn_like(x0)
        a = self.ac[t].view(-1, *([1] * (x0.dim() - 1)))
        zt = a.sqrt() * x0 + (1 - a).sqrt() * eps
        loss = ((self.model(zt, t) - eps) ** 2).mean()
        self.log("train/loss", loss, prog_bar=True)
        self.history.append(float(loss.detach()))
        return loss

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.hparams.steps)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def train_eps(
    x: torch.Tensor,
    steps: int,
    seed: int,
    hidden: int = 256,
    lr: float = 2e-3,
    batch: int = 256,
    progress=None,
):
    """Train an :class:`EpsMLP` on images x (n, C, H, W) for ``steps`` Adam steps; (model, loss per step).
    ``progress(step, loss)`` is called every tenth of the run."""
    from torch.utils.data import DataLoader, RandomSampler, TensorDataset

    from icml25.training import make_trainer

    torch.manual_seed(seed)
    lit = LitEps(tuple(x.shape[1:]), hidden, lr, steps)
    data = TensorDataset(x.float())
    g = torch.Generator().manual_seed(seed)
    loader = DataLoader(
        data,
        batch_size=batch,
        sampler=RandomSampler(data, replacement=True, num_samples=batch * steps, generator=g),
    )
    callbacks = [Progress(max(1, steps // 10), progress)] if progress is not None else []
    make_trainer(steps, seed, callbacks=callbacks).fit(lit, train_dataloaders=loader)
    lit.model.eval()
    return lit.model, lit.history
