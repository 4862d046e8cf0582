"""The small causal networks of the synthetic experiment and the reward models' losses.

:class:`CausalNet` reads (prompt, y_1..y_n) as one sequence (the prompt is a token of its own) and gives, at each
position i = 0..n (after i response tokens), ``out`` numbers: the base LM's next-token logits (out = V) or a
reward model's scores. Every reward model starts as a copy of the LM (the paper initialises its RMs from the SFT
model); a scalar-headed one keeps the LM's embedding and GRU and gets a fresh head.

FaRMA (``out = V``): r(s, x) = logits(s)[x] scores every next token x of a prefix s in one pass; a full
response's reward is r(y) = logits(y_<T)[y_T], the last token's logit at the position before it (gathered at the
true last index, never at a padded one). Its two losses:

- Bradley-Terry on full responses: L_BT = -mean log sigmoid(r(y_w) - r(y_l));
- the max constraint on chosen responses, every prefix at once:
  L_max = mean_t (logits(y_<t)[y_t] - max_x logits(y_<=t)[x])^2, t = 1..T-1,
  with the target detached by default (``target_grad=True``: the official code's gradient through it).

Scalar scorers (``out = 1``, v(s) read at the last position): ARGS's BT on full responses; PARGS's BT on
equal-length prefixes of the same pairs, every length t at once (-mean_t log sigmoid(v(y_w,<=t) - v(y_l,<=t)));
controlled decoding's regression of beta R*(y) on every prefix of base-LM samples (its optimum is beta V_ref).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn


class CausalNet(nn.Module):
    """Embedding (V tokens + P prompts) -> GRU -> a linear head of ``out`` outputs at every position."""

    def __init__(self, tokens: int, prompts: int, out: int, emb: int = 32, hidden: int = 64):
        super().__init__()
        self.tokens, self.prompts, self.out_dim, self.emb_dim, self.hidden = tokens, prompts, out, emb, hidden
        self.emb = nn.Embedding(tokens + prompts, emb)
        self.gru = nn.GRU(emb, hidden, batch_first=True)
        self.head = nn.Linear(hidden, out)

    def forward(self, prompts: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(B, n + 1, out) for prompts (B,) and responses or prefixes y (B, n), n >= 0."""
        seq = torch.cat([prompts[:, None] + self.tokens, y], dim=1)
        h, _ = self.gru(self.emb(seq))
        return self.head(h)

    def config(self) -> dict:
        return {"tokens": self.tokens, "prompts": self.prompts, "out": self.out_dim, "emb": self.emb_dim,
                "hidden": self.hidden}  # fmt: skip


def reward_model(lm: CausalNet, out: int) -> CausalNet:
    """An RM initialised from the LM: a full copy (out = V, FaRMA) or its body with a fresh zero head (out = 1)."""
    if out == lm.out_dim:
        return copy.deepcopy(lm)
    net = CausalNet(lm.tokens, lm.prompts, out, lm.emb_dim, lm.hidden)
    net.emb.load_state_dict(lm.emb.state_dict())
    net.gru.load_state_dict(lm.gru.state_dict())
    nn.init.zeros_(net.head.weight)
    nn.init.zeros_(net.head.bias)
    return net


def sequence_reward(
    logits: torch.Tensor, y: torch.Tensor, lengths: torch.Tensor | None = None
) -> torch.Tensor:
    """r(y) = logits(y_<T)[y_T] per row, from a FaRMA RM's logits (B, n + 1, V) over responses y (B, n); with
    ``lengths`` (B,) the true lengths of right-padded rows, gathered at each row's own last token."""
    B, n = y.shape
    last = torch.full((B,), n, dtype=torch.long) if lengths is None else lengths.long()
    rows = torch.arange(B)
    return logits[rows, last - 1, y[rows, last - 1]]


def bt_loss(r_w: torch.Tensor, r_l: torch.Tensor) -> torch.Tensor:
    """-mean log sigmoid(r_w - r_l)."""
    return -F.logsigmoid(r_w - r_l).mean()


def max_residuals(logits: torch.Tensor, y: torch.Tensor, target_grad: bool = False) -> torch.Tensor:
    """(B, T - 1): logits(y_<t)[y_t] - max_x logits(y_<=t)[x] for t = 1..T-1 (the max constraint's residual)."""
    q = logits[:, :-2].gather(-1, y[:, :-1, None]).squeeze(-1)  # positions 0..T-2 score y_1..y_{T-1}
    target = logits[:, 1:-1].max(-1).values  # positions 1..T-1: the best next token after y_<=t
    return q - (target if target_grad else target.detach())


def max_loss(logits: torch.Tensor, y: torch.Tensor, target_grad: bool = False) -> torch.Tensor:
    return max_residuals(logits, y, target_grad).pow(2).mean()


def prefix_bt_loss(v_w: torch.Tensor, v_l: torch.Tensor) -> torch.Tensor:
    """PARGS: BT on equal-length prefixes, v (B, T + 1, 1) at positions 1..T (every prefix length)."""
    return bt_loss(v_w[:, 1:, 0], v_l[:, 1:, 0])


def value_regression_loss(v: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """CD: mean over prefixes (positions 1..T) of (v - target)^2, target (B,) the sample's beta R*."""
    return (v[:, 1:, 0] - target[:, None]).pow(2).mean()
