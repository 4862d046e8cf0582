"""Batched reward-guided decoding of the synthetic language, with LM and RM call counters.

Every decoder makes T steps; at each one the LM gives logits at the prefix (one LM call per row) and a scorer
scores the candidates (:mod:`models.farma.decoding`: the LM's top-k, guided value log pi + w * score). Scorers:

- one pass for every next token (``all_tokens``): FaRMA's RM (r(s, x) = logits(s)[x]: one RM call per row and
  token) and the exact value functions of the language (beta V_max, beta V_ref: oracles, no RM);
- one pass per candidate: ARGS / PARGS / CD's scalar models scored on prefix + x for each of the k candidates
  (k RM calls per row and token).

One RM call is one sequence scored, as in the paper's counts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .decoding import choose, guided_next, lm_candidates
from .language import Language
from .nets import CausalNet


@dataclass
class Scorer:
    """Base: ``calls`` counts sequences scored per row of the current batch."""

    all_tokens: bool = True
    calls: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def start(self, rows: int) -> None:
        self.calls = np.zeros(rows, np.int64)


@dataclass
class FarmaScorer(Scorer):
    net: CausalNet | None = None

    def scores(self, prompts: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.net(prompts, prefix)[:, -1]


@dataclass
class ExactScorer(Scorer):
    """beta * the language's exact ``kind`` value of prefix + x (an oracle; ``calls`` counts table lookups)."""

    lang: Language | None = None
    kind: str = "max"
    beta: float = 1.0

    def scores(self, prompts: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        v = self.lang.exact_scores(self.kind, prompts.numpy(), prefix.numpy())
        return torch.as_tensor(self.beta * v, dtype=torch.float32)


@dataclass
class ScalarScorer(Scorer):
    """A scalar-headed model scored on prefix + x, one sequence per candidate."""

    all_tokens: bool = False
    net: CausalNet | None = None

    def scores(self, prompts: torch.Tensor, prefix: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        B, k = ids.shape
        self.calls += k
        seqs = torch.cat([prefix.repeat_interleave(k, 0), ids.reshape(-1, 1)], dim=1)
        return self.net(prompts.repeat_interleave(k, 0), seqs)[:, -1, 0].reshape(B, k)


@dataclass
class Decoded:
    tokens: np.ndarray  # (B, T)
    lm_calls: np.ndarray  # (B,)
    rm_calls: np.ndarray  # (B,)
    rm_seconds: float
    seconds: float


def decode(*args, **kwargs) -> Decoded:
    """:func:`_decode` on one torch thread (tiny tensors: more threads only add overhead)."""
    from models.common.threads import one_thread

    with one_thread():
        return _decode(*args, **kwargs)


@torch.no_grad()
def _decode(
    lm: CausalNet,
    scorer: Scorer | None,
    prompts: np.ndarray,
    length: int,
    *,
    w: float = 1.0,
    top_k: int = 5,
    greedy: bool = False,
    seed: int = 0,
    candidates: str = "lm",
) -> Decoded:
    """T = ``length`` tokens for each prompt; ``scorer`` None is pi_ref (top-k sampling or greedy, no RM)."""
    start = time.perf_counter()
    p = torch.as_tensor(np.asarray(prompts), dtype=torch.long)
    B = len(p)
    g = torch.Generator().manual_seed(seed)
    y = torch.zeros((B, 0), dtype=torch.long)
    lm_calls = np.zeros(B, np.int64)
    rm_seconds = 0.0
    if scorer is not None:
        scorer.start(B)
    for _ in range(length):
        logits = lm(p, y)[:, -1]
        lm_calls += 1
        if scorer is None:
            lp, ids = lm_candidates(logits, top_k)
            nxt = ids.gather(-1, choose(lp, greedy, g)[:, None]).squeeze(-1)
        elif scorer.all_tokens:
            t0 = time.perf_counter()
            r = scorer.scores(p, y)
            rm_seconds += time.perf_counter() - t0
            nxt = guided_next(logits, r, w=w, top_k=top_k, greedy=greedy, generator=g, candidates=candidates)
        else:
            lp, ids = lm_candidates(logits, top_k)
            t0 = time.perf_counter()
            s = scorer.scores(p, y, ids)
            rm_seconds += time.perf_counter() - t0
            nxt = ids.gather(-1, choose(lp + w * s, greedy, g)[:, None]).squeeze(-1)
        y = torch.cat([y, nxt[:, None]], dim=1)
    rm_calls = scorer.calls.copy() if scorer is not None else np.zeros(B, np.int64)
    return Decoded(y.numpy(), lm_calls, rm_calls, rm_seconds, time.perf_counter() - start)
