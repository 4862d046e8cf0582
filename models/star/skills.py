"""Stage 1: skill learning. An autoencoder over standardised action chunks with a residual quantizer in the
middle, trained with Lightning.

``x`` (H * A, the flattened chunk) -> encoder MLP (H A - hidden - latent, ReLU) -> z -> quantizer -> z^ ->
decoder MLP (latent - hidden - H A) -> x^, loss ``mean((x^ - x)^2) + quantizer loss`` (beta * mean((r - q)^2)
per depth, models/star/quantizer.py); Adam(1e-3), minibatches of 256, a fixed number of steps. The ReLU and the
hidden width 128 are ours (the paper gives no architecture).

The quantizer is RaRSQ (``rotation``), the same quantizer with STE (``ste``), or the reference library
vector-quantize-pytorch's ``ResidualVQ`` with its rotation trick and EMA codebook updates (``library_ema``, an
ablation of the issue's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import lightning as L
import numpy as np
import torch
from torch import nn

from models.common.training import Progress, loader

from .quantizer import RaRSQ, perplexity

ESTIMATORS = ("rotation", "ste", "library_ema")


@dataclass(frozen=True)
class SkillConfig:
    horizon: int = 8
    action_dim: int = 3
    latent: int = 16
    hidden: int = 128
    depths: int = 2
    codes: int = 32
    estimator: str = "rotation"
    beta: float = 0.25
    init: str = "kaiming"
    init_sd: float = 0.25
    learn_codebook: bool = True  # False: the frozen-codebook stub of the tests

    def to_dict(self) -> dict:
        return asdict(self)


class LibraryRVQ(nn.Module):
    """vector-quantize-pytorch's ResidualVQ (rotation trick, EMA codebook updates, commitment weight beta), with
    RaRSQ's interface: ``(quantized, codes, loss)``."""

    def __init__(self, cfg: SkillConfig):
        super().__init__()
        from vector_quantize_pytorch import ResidualVQ

        self.depths, self.codebook_size = cfg.depths, cfg.codes
        self.rvq = ResidualVQ(
            dim=cfg.latent,
            num_quantizers=cfg.depths,
            codebook_size=cfg.codes,
            rotation_trick=True,
            commitment_weight=cfg.beta,
            kmeans_init=False,
            threshold_ema_dead_code=0,
        )
        self.last_fallbacks = 0

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        out, codes, loss = self.rvq(z[:, None, :])
        return out[:, 0], codes[:, 0], loss.sum()

    @torch.no_grad()
    def encode(self, z: torch.Tensor) -> torch.Tensor:
        was = self.training
        self.eval()
        codes = self.forward(z)[1]
        self.train(was)
        return codes

    @torch.no_grad()
    def lookup(self, codes: torch.Tensor) -> torch.Tensor:
        return self.rvq.get_output_from_indices(torch.as_tensor(codes).long()[:, None, :])[:, 0]


class SkillAE(nn.Module):
    def __init__(self, cfg: SkillConfig):
        super().__init__()
        if cfg.estimator not in ESTIMATORS:
            raise ValueError(f"estimator = {cfg.estimator!r}: expected one of {', '.join(ESTIMATORS)}")
        self.cfg = cfg
        d = cfg.horizon * cfg.action_dim
        self.encoder = nn.Sequential(nn.Linear(d, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, cfg.latent))
        self.decoder = nn.Sequential(nn.Linear(cfg.latent, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, d))
        if cfg.estimator == "library_ema":
            self.quantizer: nn.Module = LibraryRVQ(cfg)
        else:
            self.quantizer = RaRSQ(
                cfg.latent,
                cfg.codes,
                cfg.depths,
                rotation=cfg.estimator == "rotation",
                beta=cfg.beta,
                init=cfg.init,
                init_sd=cfg.init_sd,
                learn_codebook=cfg.learn_codebook,
            )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (n, H * A) standardised -> (x^, codes (n, depths), quantizer loss)."""
        zq, codes, qloss = self.quantizer(self.encoder(x))
        return self.decoder(zq), codes, qloss

    @torch.no_grad()
    def codes(self, x: torch.Tensor) -> torch.Tensor:
        return self.quantizer.encode(self.encoder(x))

    @torch.no_grad()
    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.quantizer.lookup(codes))


class LitSkills(L.LightningModule):
    def __init__(self, config: dict, lr: float = 1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.model = SkillAE(SkillConfig(**config))
        self.history: list[dict[str, float]] = []

    def training_step(self, batch: tuple[torch.Tensor], batch_idx: int) -> torch.Tensor:
        (x,) = batch
        xhat, codes, qloss = self.model(x)
        mse = ((xhat - x) ** 2).mean()
        loss = mse + qloss
        # no self.log: per-step history is kept here (Lightning's logging doubles the step time on CPU)
        ppl, _ = perplexity(codes[:, 0], self.model.cfg.codes)
        self.history.append(
            {
                "loss": float(loss.detach()),
                "mse": float(mse.detach()),
                "perplexity_1": ppl,
                "fallbacks": float(self.model.quantizer.last_fallbacks),
            }
        )
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        params = [p for p in self.parameters() if p.requires_grad]
        return torch.optim.Adam(params, lr=self.hparams.lr)


def fit_skills(
    x: np.ndarray,
    cfg: SkillConfig,
    steps: int,
    seed: int,
    batch: int = 256,
    lr: float = 1e-3,
    progress: Callable[[int, dict], None] | None = None,
    every: int = 250,
) -> tuple[SkillAE, list[dict[str, float]]]:
    """Train on standardised, flattened chunks x (n, H * A). The initialisation and the minibatch order depend
    on ``seed`` only, so two estimators fitted with one seed start from the same weights and codebook and see
    the same minibatches."""
    from icml25.training import make_trainer

    torch.manual_seed(seed)
    lit = LitSkills(cfg.to_dict(), lr)
    data = loader((torch.as_tensor(x, dtype=torch.float32),), batch, steps, seed)
    callbacks = [Progress(every, progress)] if progress is not None else []
    make_trainer(steps, seed, callbacks=callbacks).fit(lit, train_dataloaders=data)
    lit.model.eval()
    return lit.model, lit.history


@torch.no_grad()
def usage(model: SkillAE, x: np.ndarray) -> dict:
    """Per depth: perplexity exp(H(p_k)), active codes, the code counts; the reconstruction MSE (standardised
    units) of x through the quantizer."""
    xt = torch.as_tensor(x, dtype=torch.float32)
    z = model.encoder(xt)
    codes = model.quantizer.encode(z)
    xhat = model.decoder(model.quantizer.lookup(codes))
    out: dict = {"mse": float(((xhat - xt) ** 2).mean())}
    K = model.cfg.codes
    for d in range(model.cfg.depths):
        ppl, active = perplexity(codes[:, d], K)
        out[f"perplexity_{d + 1}"] = ppl
        out[f"active_{d + 1}"] = active
        out[f"counts_{d + 1}"] = torch.bincount(codes[:, d], minlength=K).tolist()
    return out
