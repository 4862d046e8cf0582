"""Residual GLU classifiers: the CPU-scale stand-in for a Llama MLP stack.

The model maps x in R^{d_in} (an 8x8 digit) to logits in R^C:

    r_0 = E x + e                                   (embedding, d_in -> d)
    r_{l+1} = r_l + D_l ( silu(G_l r_l) * (U_l r_l) )   for l = 0..L-1  (G_l, U_l: h x d, D_l: d x h)
    logits = W r_L + b

It has exactly the symmetries the paper's tests rely on (Table 3 restricted to this architecture):
a residual permutation pi_emb (rows of E and e, columns of G_l, U_l, W, rows of D_l) and one hidden permutation
per block (rows of G_l and U_l, columns of D_l) leave the function unchanged, and so does scaling row i of U_l
by c_i != 0 with column i of D_l by 1/c_i.

Weights are kept as a flat ``dict[str, Tensor]`` whose names follow the Hugging Face Llama layout
(``model.layers.{l}.mlp.{gate,up,down}_proj.weight``) so that one reader and one set of statistics serve this
project's checkpoints and real Llama checkpoints alike.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

ARCHITECTURE = "icml25-glu"


@dataclass(frozen=True)
class GLUConfig:
    d_in: int = 64
    d_model: int = 32
    d_hidden: int = 64
    n_blocks: int = 2
    n_classes: int = 10

    def to_json(self) -> dict:
        return {"architecture": ARCHITECTURE, **asdict(self)}


def gate_key(layer: int) -> str:
    return f"model.layers.{layer}.mlp.gate_proj.weight"


def up_key(layer: int) -> str:
    return f"model.layers.{layer}.mlp.up_proj.weight"


def down_key(layer: int) -> str:
    return f"model.layers.{layer}.mlp.down_proj.weight"


def init_weights(cfg: GLUConfig, generator: torch.Generator) -> dict[str, Tensor]:
    """PyTorch's default Linear initialisation, U(-1/sqrt(fan_in), 1/sqrt(fan_in)): a Pi-invariant law."""

    def uniform(shape: tuple[int, ...], fan_in: int) -> Tensor:
        bound = fan_in**-0.5
        return (torch.rand(shape, generator=generator) * 2 - 1) * bound

    w = {
        "model.embed_in.weight": uniform((cfg.d_model, cfg.d_in), cfg.d_in),
        "model.embed_in.bias": uniform((cfg.d_model,), cfg.d_in),
    }
    for layer in range(cfg.n_blocks):
        w[gate_key(layer)] = uniform((cfg.d_hidden, cfg.d_model), cfg.d_model)
        w[up_key(layer)] = uniform((cfg.d_hidden, cfg.d_model), cfg.d_model)
        w[down_key(layer)] = uniform((cfg.d_model, cfg.d_hidden), cfg.d_hidden)
    w["lm_head.weight"] = uniform((cfg.n_classes, cfg.d_model), cfg.d_model)
    w["lm_head.bias"] = uniform((cfg.n_classes,), cfg.d_model)
    return w


def forward(
    weights: dict[str, Tensor], x: Tensor, n_blocks: int, collect: bool = False
) -> tuple[Tensor, list[dict[str, Tensor]]]:
    """Logits for a batch ``x`` (N x d_in) and, if ``collect``, each block's pre-activations.

    The collected ``gate`` and ``up`` matrices are G_l r_l and U_l r_l (N x h), the hidden activations that
    phi_H (``up``) and phi_MATCH (``gate`` and ``up``) match; a leading ensemble dimension is supported
    (weights K x ... and x N x d_in or K x N x d_in).
    """
    r = _linear(x, weights["model.embed_in.weight"], weights["model.embed_in.bias"])
    acts: list[dict[str, Tensor]] = []
    for layer in range(n_blocks):
        g = _linear(r, weights[gate_key(layer)])
        u = _linear(r, weights[up_key(layer)])
        if collect:
            acts.append({"gate": g, "up": u})
        r = r + _linear(F.silu(g) * u, weights[down_key(layer)])
    return _linear(r, weights["lm_head.weight"], weights["lm_head.bias"]), acts


def _linear(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """x @ w^T (+ b), batched over a leading ensemble dimension of ``w`` when it has one."""
    if w.dim() == 2:
        y = x @ w.T
    else:
        y = (x if x.dim() == 3 else x.unsqueeze(0).expand(w.shape[0], -1, -1)) @ w.transpose(1, 2)
    if b is not None:
        y = y + (b if b.dim() == 1 else b.unsqueeze(1))
    return y


class GLUEnsemble(nn.Module):
    """K independent GLU classifiers stored as stacked tensors and trained in one pass.

    The loss is the sum of the K models' losses, so the gradient with respect to model k's parameters is the
    gradient of model k's own loss: Adam or SGD (element-wise, per-parameter) then update every model exactly as
    if it were trained alone on the same batches. Model k starts from ``init_weights`` with its own seed, so
    models with different seeds are independent (H_0 of the paper: same data, independent initialisations).
    """

    def __init__(self, cfg: GLUConfig, seeds: list[int]) -> None:
        super().__init__()
        self.cfg = cfg
        self.seeds = list(seeds)
        inits = [init_weights(cfg, torch.Generator().manual_seed(int(s))) for s in seeds]
        self.names = list(inits[0])
        self.params = nn.ParameterList(
            [nn.Parameter(torch.stack([w[name] for w in inits])) for name in self.names]
        )

    def weights(self) -> dict[str, Tensor]:
        return dict(zip(self.names, self.params, strict=True))

    def load_member_weights(self, members: list[dict[str, Tensor]]) -> None:
        with torch.no_grad():
            for name, p in zip(self.names, self.params, strict=True):
                p.copy_(torch.stack([m[name] for m in members]))

    def member(self, k: int) -> dict[str, Tensor]:
        """Model k's weights as a plain dict of contiguous float32 tensors."""
        return {
            name: p[k].detach().clone().contiguous() for name, p in zip(self.names, self.params, strict=True)
        }

    def forward(self, x: Tensor) -> Tensor:
        logits, _ = forward(self.weights(), x, self.cfg.n_blocks)
        return logits  # K x N x C
