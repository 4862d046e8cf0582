"""Reward-guided token choice (RGTG), shared by the synthetic decoders and the Hugging Face entry.

At each step the language model gives log-probabilities log pi(a | s) over its vocabulary and a reward model a
score r(s, a) for candidate tokens a. The guided value of a candidate is

    g(s, a) = log pi(a | s) + w * r(s, a),

and the next token is argmax_a g (greedy) or a draw from softmax(g) restricted to the candidates (sampled).

Candidates: by default the LM's top-k tokens (``candidates="lm"``: the issue's rule and ARGS's, so every guided
decoder chooses among the same tokens and only the scorer differs). The official FaRMA code instead takes the
top-k of the guided logits over the whole vocabulary (``candidates="guided"``: possible only with a scorer that
scores every token in one pass). Log-probabilities or raw logits give the same choice: they differ by a constant
per step. The LM's logits are truncated to the reward model's vocabulary (the official code's
``LM_logits[:|V_RM|]``).
"""

from __future__ import annotations

import torch

CANDIDATES = ("lm", "guided")


def lm_candidates(lm_logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probabilities, token ids) of the LM's top-``k`` tokens, each (B, k)."""
    logp = torch.log_softmax(lm_logits.float(), dim=-1)
    return logp.topk(k, dim=-1)


def choose(values: torch.Tensor, greedy: bool, generator: torch.Generator | None = None) -> torch.Tensor:
    """The chosen column per row of ``values`` (B, k): the argmax, or a draw from softmax(values)."""
    if greedy:
        return values.argmax(dim=-1)
    probs = torch.softmax(values.float(), dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def guided_next(
    lm_logits: torch.Tensor,
    rm_logits: torch.Tensor,
    *,
    w: float,
    top_k: int,
    greedy: bool,
    generator: torch.Generator | None = None,
    candidates: str = "lm",
) -> torch.Tensor:
    """The next token per row (B,) from the LM's logits (B, V_lm) and a FaRMA reward model's logits (B, V_rm),
    which score every next token at once (r(s, a) = rm_logits[a]); V_rm <= V_lm."""
    v = rm_logits.shape[-1]
    logp = torch.log_softmax(lm_logits.float(), dim=-1)[..., :v]
    if candidates == "lm":
        lp, ids = logp.topk(top_k, dim=-1)
        values = lp + w * rm_logits.float().gather(-1, ids)
    elif candidates == "guided":
        values, ids = (logp + w * rm_logits.float()).topk(top_k, dim=-1)
    else:
        raise ValueError(f"candidates {candidates!r}: expected one of {CANDIDATES}")
    return ids.gather(-1, choose(values, greedy, generator).unsqueeze(-1)).squeeze(-1)
