"""Stage 2: the causal skill transformer (CST), trained with Lightning on primitive-aligned chunks.

Tokens: ``[task, state, c_{1,1} .. c_{1,D}, ..., c_{j,1} .. c_{j,D}, k_1, ..., k_D]``: a task embedding, a
linear map of the state (x, y, g), then the code tokens of the j chunks executed so far (one embedding per
(depth, code) pair), then the codes of the next chunk; learned position embeddings; a causal transformer
(``layers`` pre-norm layers of width d, 4 heads, feed-forward 2d, no dropout: ours).

- **Autoregressive** (CST): depth by depth, coarse to fine, ``p(k_1 | ctx) p(k_2 | k_1, ctx) ...``: the logits of
  k_1 are read at the last context token, those of k_d at the token of k_{d-1} (teacher forcing in training,
  greedy decoding at test time).
- **Independent heads** (the ablation): every k_d is read at the last context token, in parallel.
- **Offset head** (L1): a regression of the residual ``chunk - decode(k_1..k_D)`` (standardised units), read at
  the token of k_D (autoregressive) or the last context token (independent); added to the decoded chunk.

Loss: ``sum_d CE(k_d) + L1(offset)`` (the offset term only with the head). Adam(lr), minibatches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import lightning as L
import numpy as np
import torch
from torch import nn

from models.common.training import Progress, loader


@dataclass(frozen=True)
class CSTConfig:
    tasks: int
    depths: int = 2
    codes: int = 32
    chunk_dim: int = 24
    max_chunks: int = 6
    d_model: int = 64
    layers: int = 2
    heads: int = 4
    autoregressive: bool = True
    offset: bool = True

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def length(self) -> int:
        return 2 + self.depths * self.max_chunks


class CausalSkillTransformer(nn.Module):
    """``forward(task, state, seq, ctx_len)``: task (n,), state (n, 3), seq (n, depths * max_chunks) the code
    tokens (``d * codes + k``) of the history followed by the next chunk's codes (padding anywhere after them),
    ctx_len (n,) the number of history tokens. Returns the logits (n, depths, codes) and the offset (n, chunk_dim)
    (zeros without the head)."""

    def __init__(self, cfg: CSTConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.task = nn.Embedding(cfg.tasks, d)
        self.state = nn.Linear(3, d)
        self.code = nn.Embedding(cfg.depths * cfg.codes, d)
        self.pos = nn.Parameter(torch.zeros(cfg.length, d))
        nn.init.normal_(self.pos, 0.0, 0.02)
        layer = nn.TransformerEncoderLayer(
            d, cfg.heads, 2 * d, dropout=0.0, batch_first=True, norm_first=True, activation="gelu"
        )
        self.body = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.heads = nn.ModuleList(nn.Linear(d, cfg.codes) for _ in range(cfg.depths))
        self.offset = (
            nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, cfg.chunk_dim))
            if cfg.offset
            else None
        )
        mask = torch.triu(torch.full((cfg.length, cfg.length), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def hidden(self, task: torch.Tensor, state: torch.Tensor, seq: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.task(task)[:, None], self.state(state)[:, None], self.code(seq)], 1)
        x = x + self.pos[None, : x.shape[1]]
        n = x.shape[1]
        return self.norm(self.body(x, mask=self.mask[:n, :n], is_causal=True))

    def forward(
        self, task: torch.Tensor, state: torch.Tensor, seq: torch.Tensor, ctx_len: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.hidden(task, state, seq)
        rows = torch.arange(len(h))
        last = 1 + ctx_len  # the last context token (the state when there is no history)
        logits = []
        for d, head in enumerate(self.heads):
            at = last + d if self.cfg.autoregressive else last
            logits.append(head(h[rows, at]))
        if self.offset is None:
            off = h.new_zeros(len(h), self.cfg.chunk_dim)
        else:
            at = last + self.cfg.depths if self.cfg.autoregressive else last
            off = self.offset(h[rows, at])
        return torch.stack(logits, 1), off

    @torch.no_grad()
    def act(
        self, task: torch.Tensor, state: torch.Tensor, history: torch.Tensor, ctx_len: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy codes (n, depths) and offsets for the next chunk; history (n, depths * max_chunks) holds the
        code tokens so far (anything after ctx_len is ignored)."""
        D, K = self.cfg.depths, self.cfg.codes
        seq = history.clone()
        rows = torch.arange(len(seq))
        codes = torch.zeros(len(seq), D, dtype=torch.long)
        steps = D if self.cfg.autoregressive else 1
        for d in range(steps):
            logits, off = self.forward(task, state, seq, ctx_len)
            if self.cfg.autoregressive:
                codes[:, d] = logits[:, d].argmax(-1)
                seq[rows, ctx_len + d] = d * K + codes[:, d]
            else:
                codes = logits.argmax(-1)
        if self.cfg.autoregressive and self.offset is not None:
            _, off = self.forward(task, state, seq, ctx_len)
        return codes, off


def sequences(
    codes: np.ndarray, index: np.ndarray, demo: np.ndarray, depths: int, codes_k: int, max_chunks: int
):
    """The token sequences of stage-2 samples: for sample i (chunk ``index[i]`` of demo ``demo[i]``, with its
    codes ``codes[i]``) the codes of the same demo's earlier chunks, then its own. Returns (seq, ctx_len)."""
    n = len(codes)
    seq = np.zeros((n, depths * max_chunks), np.int64)
    ctx = np.zeros(n, np.int64)
    tokens = codes + np.arange(depths)[None, :] * codes_k
    by_demo: dict[int, dict[int, np.ndarray]] = {}
    for i in range(n):
        by_demo.setdefault(int(demo[i]), {})[int(index[i])] = tokens[i]
    for i in range(n):
        j = int(index[i])
        hist = [by_demo[int(demo[i])][m] for m in range(j)]
        flat = np.concatenate([*hist, tokens[i]]) if hist else tokens[i]
        seq[i, : len(flat)] = flat
        ctx[i] = depths * j
    return seq, ctx


class LitCST(L.LightningModule):
    def __init__(self, config: dict, lr: float = 1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.model = CausalSkillTransformer(CSTConfig(**config))
        self.history: list[dict[str, float]] = []

    def training_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int) -> torch.Tensor:
        task, state, seq, ctx, target, offset = batch
        logits, off = self.model(task, state, seq, ctx)
        ce = (
            nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
            * target.shape[1]
        )
        l1 = (off - offset).abs().mean() if self.model.offset is not None else ce.new_zeros(())
        loss = ce + l1
        self.log("train/ce", ce, prog_bar=True)
        acc = float((logits.argmax(-1) == target).all(-1).float().mean())
        self.history.append(
            {"loss": float(loss.detach()), "ce": float(ce.detach()), "l1": float(l1.detach()), "acc": acc}
        )
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def fit_cst(
    samples: dict[str, np.ndarray],
    cfg: CSTConfig,
    steps: int,
    seed: int,
    batch: int = 256,
    lr: float = 1e-3,
    progress: Callable[[int, dict], None] | None = None,
    every: int = 250,
) -> tuple[CausalSkillTransformer, list[dict[str, float]]]:
    """Train on ``samples`` (task, state, seq, ctx_len, codes, offset arrays, one row per primitive chunk)."""
    from icml25.training import make_trainer

    torch.manual_seed(seed)
    lit = LitCST(cfg.to_dict(), lr)
    tensors = (
        torch.as_tensor(samples["task"]).long(),
        torch.as_tensor(samples["state"]).float(),
        torch.as_tensor(samples["seq"]).long(),
        torch.as_tensor(samples["ctx_len"]).long(),
        torch.as_tensor(samples["codes"]).long(),
        torch.as_tensor(samples["offset"]).float(),
    )
    callbacks = [Progress(every, progress)] if progress is not None else []
    make_trainer(steps, seed, callbacks=callbacks).fit(
        lit, train_dataloaders=loader(tensors, batch, steps, seed)
    )
    lit.model.eval()
    return lit.model, lit.history
