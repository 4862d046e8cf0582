"""The x0-predicting MLP for scikit-learn's digits (64-D in [-1, 1]), trained with Lightning on the continuous cosine
schedule, so that one network serves every K.

Training: x ~ data, u ~ U(EDGE, 1 - EDGE), abar = cosine_abar(u), x_u = sqrt(abar) x + sqrt(1 - abar) eps; minimise
||f(x_u, log t) - x||^2 with t = abar / (1 - abar). The time enters as log t (the log-SNR) through a few Fourier
features, so the network reads SL time directly. In SL coordinates it is m(y, t) = f(y / sqrt(t (1 + t)), log t).
"""

from __future__ import annotations

from pathlib import Path

import lightning as L
import numpy as np
import torch
from torch import nn

from .denoisers import NETWORK_KIND as KIND
from .sl import EDGE, cosine_abar, from_sl

FREQS = (0.125, 0.25, 0.5, 1.0, 2.0)


def time_features(log_t: torch.Tensor) -> torch.Tensor:
    """(B,) log-SNR -> (B, 1 + 2 |FREQS|): log t / 10 and sin / cos of log t at a few frequencies."""
    f = torch.tensor(FREQS, dtype=log_t.dtype) * log_t[:, None]
    return torch.cat([log_t[:, None] / 10.0, torch.sin(f), torch.cos(f)], 1)


class X0Net(nn.Module):
    def __init__(self, dim: int = 64, hidden: int = 256, depth: int = 3):
        super().__init__()
        self.dim, self.hidden, self.depth = dim, hidden, depth
        layers: list[nn.Module] = []
        d_in = dim + 1 + 2 * len(FREQS)
        for _ in range(depth):
            layers += [nn.Linear(d_in, hidden), nn.SiLU()]
            d_in = hidden
        layers.append(nn.Linear(d_in, dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor, log_t: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, time_features(log_t)], 1))


class LitX0(L.LightningModule):
    def __init__(self, net: X0Net, lr: float = 2e-3, steps: int = 1000):
        super().__init__()
        self.net, self.lr, self.steps = net, lr, steps
        self.history: list[float] = []

    def training_step(self, batch, batch_idx):
        (x,) = batch
        u = EDGE + (1 - 2 * EDGE) * torch.rand(len(x), dtype=torch.float64)
        abar = torch.as_tensor(cosine_abar(u.numpy()))
        log_t = torch.log(abar / (1 - abar)).float()
        a = abar.float()[:, None]
        xt = a.sqrt() * x + (1 - a).sqrt() * torch.randn_like(x)
        loss = nn.functional.mse_loss(self.net(xt, log_t), x)
        self.history.append(float(loss.detach()))
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.net.parameters(), lr=self.lr, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, self.steps))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class NetDenoiser:
    """m(y, t) of an x0-predicting :class:`X0Net`, float32 inside, in chunks of ``chunk`` rows."""

    def __init__(self, net: X0Net, chunk: int = 65536):
        self.net, self.chunk = net.eval(), chunk

    @torch.no_grad()
    def __call__(self, y: np.ndarray, t: np.ndarray) -> np.ndarray:
        x = from_sl(np.asarray(y, np.float64), np.asarray(t, np.float64))
        log_t = np.log(np.asarray(t, np.float64))
        out = np.empty_like(x)
        for s in range(0, len(x), self.chunk):
            xb = torch.as_tensor(x[s : s + self.chunk], dtype=torch.float32)
            lb = torch.as_tensor(log_t[s : s + self.chunk], dtype=torch.float32)
            out[s : s + self.chunk] = self.net(xb, lb).numpy()
        return out


def fit(
    data: np.ndarray,
    steps: int,
    batch: int = 256,
    hidden: int = 256,
    depth: int = 3,
    lr: float = 2e-3,
    seed: int = 0,
    callbacks: list | None = None,
) -> tuple[X0Net, list[float]]:
    """Train an :class:`X0Net` on ``data`` (n, d) for ``steps`` minibatches."""
    from icml25.training import make_trainer
    from models.common.training import loader

    torch.manual_seed(seed)
    net = X0Net(data.shape[1], hidden, depth)
    module = LitX0(net, lr, steps)
    tensors = (torch.as_tensor(np.asarray(data, np.float32)),)
    trainer = make_trainer(steps, seed, callbacks=callbacks or [])
    trainer.fit(module, loader(tensors, batch, steps, seed))
    return net, module.history


def save(net: X0Net, path: str | Path) -> Path:
    from models.common.weights import save_weights

    meta = {"kind": KIND, "dim": net.dim, "hidden": net.hidden, "depth": net.depth}
    return save_weights(path, net.state_dict(), meta)


def load(path: str | Path) -> X0Net:
    """An :class:`X0Net` from a file :func:`save` wrote; UserError naming the file if it is not one, or if its
    tensors do not have the shapes its metadata promises."""
    from models.common.weights import load_weights

    return build(*load_weights(path, KIND), path)


def build(tensors: dict, meta: dict, path: str | Path) -> X0Net:
    """The network that ``meta`` describes with ``tensors`` loaded (read from ``path``, named in errors)."""
    from icml25.errors import UserError

    try:
        net = X0Net(int(meta["dim"]), int(meta["hidden"]), int(meta["depth"]))
        net.load_state_dict(tensors)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        detail = str(exc).splitlines()[0]
        raise UserError(
            f"{path}: tensors do not fit the x0 network its metadata describes ({detail[:160]})"
        ) from None
    return net.eval()
