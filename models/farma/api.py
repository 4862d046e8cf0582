"""FaRMA's Python entry: reward-guided generation and sequence rewards with any two Hugging Face causal LMs.

The reward model (RM) is a causal LM whose LM-head logits are read as rewards. For a prefix s (a token
sequence),

    r(s, a) = logits_RM(s)[a]          for every next token a,

so ONE RM forward pass scores all candidate next tokens. A whole sequence y_1..y_T has the reward of its last
token after its prefix,

    r(y) = r(y_<T, y_T) = logits_RM(y_1..y_{T-1})[y_T],

read at each sequence's TRUE last position (not the last column of a padded batch, which under right padding
is a pad position: the official code's reading).

Decoding (:func:`generate`): at each step the LM gives log pi(a | s) and the RM r(s, a) for every a, and a
candidate's guided value is

    g(s, a) = log pi(a | s) + w * r(s, a),

the next token being argmax g (``greedy``) or a draw from softmax(g) over the candidates. The candidates are
the LM's top-k tokens (``candidates="lm"``) or the top-k of g over the whole vocabulary (``"guided"``, the
official code's rule); see :mod:`models.farma.decoding`, whose :func:`guided_next` makes the choice. w = 0 is
the LM's own decoding (greedy, or sampling from its top-k).

Tokenisation rule: prompts and texts are tokenised with the tokenizer's defaults (``tokenizer(text)``: the
special tokens that tokenizer adds by itself, e.g. a BOS, and nothing else).
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from icml25.errors import UserError

from .decoding import CANDIDATES, guided_next


def vocab_size(model: Any) -> int:
    """The number of logits a causal LM gives per position: its output embedding's rows (``config.vocab_size``
    when it has none)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    if weight is not None:
        return int(weight.shape[0])
    return int(model.config.vocab_size)


def check(
    *,
    w: float = 1.0,
    top_k: int = 10,
    max_new_tokens: int = 64,
    candidates: str = "lm",
    prompt: str | None = None,
    lm: Any = None,
    rm: Any = None,
    tokenizer: Any = None,
) -> None:
    """Bad settings -> :class:`UserError`, one line naming the value. The numbers, ``candidates`` and the
    prompt are checked without any model; given ``rm`` and ``tokenizer`` (and optionally ``lm``), also that
    each model scores every token of the tokenizer and that ``top_k`` fits the vocabulary decoding uses."""
    try:
        ok = math.isfinite(float(w)) and float(w) >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise UserError(f"w = {w}: the reward weight must be a finite number >= 0")
    if top_k < 1:
        raise UserError(f"top-k = {top_k}: must be >= 1")
    if max_new_tokens < 1:
        raise UserError(f"max-new-tokens = {max_new_tokens}: must be >= 1")
    if candidates not in CANDIDATES:
        raise UserError(f"candidates {candidates!r}: expected one of {', '.join(CANDIDATES)}")
    if prompt is not None and not prompt.strip():
        raise UserError(f"prompt {prompt!r}: empty, give some text to continue")
    if rm is None or tokenizer is None:
        return
    n_tok = len(tokenizer)
    v = vocab_size(rm)
    if v < n_tok:
        raise UserError(f"reward model vocabulary of {v} tokens: smaller than the tokenizer's {n_tok}")
    if lm is not None:
        v_lm = vocab_size(lm)
        if v_lm < n_tok:
            raise UserError(
                f"language model vocabulary of {v_lm} tokens: smaller than the tokenizer's {n_tok}"
            )
        v = min(v, v_lm)
    if top_k > v:
        raise UserError(f"top-k = {top_k}: above the vocabulary of {v} tokens")


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    return path


def _not_loadable(path: Path, exc: Exception) -> UserError:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return UserError(f"{path}: not a causal LM that transformers can load ({first})")


@contextlib.contextmanager
def _pretrained(path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(where, kwargs) for ``from_pretrained`` as :func:`models.common.smollm2.load_causal_lm` passes them (a
    GGUF file's folder and ``gguf_file``, or the folder), with transformers' logging and progress bars quiet."""
    import io

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    kw = {"gguf_file": path.name} if path.suffix == ".gguf" else {}
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF de-quantisation progress bar (tqdm)
        yield str(path.parent if kw else path), kw


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer of the causal LM at ``path`` alone: seconds, where the model's weights can take a minute
    (a GGUF file's de-quantisation), so that input that only the tokenizer can judge (a text's tokens) is
    refused before the model loads; then ``load(path, tokenizer)`` loads the model only."""
    path = _existing(path)
    from transformers import AutoTokenizer

    try:
        with _pretrained(path) as (where, kw):
            return AutoTokenizer.from_pretrained(where, **kw)
    except (OSError, ValueError, KeyError) as exc:
        raise _not_loadable(path, exc) from None


def load(path: str | Path, tokenizer: Any = None) -> tuple[Any, Any]:
    """(tokenizer, model) of a causal LM: a local transformers folder or a .gguf file
    (:func:`models.common.smollm2.load_causal_lm`); given the ``tokenizer`` that :func:`load_tokenizer` read from
    the same path, the model only. A missing path, or one that holds no causal LM, is a :class:`UserError` naming
    it (a missing one before anything is loaded)."""
    path = _existing(path)
    if tokenizer is None:
        from models.common.smollm2 import load_causal_lm

        try:
            return load_causal_lm(path)
        except (OSError, ValueError, KeyError) as exc:
            raise _not_loadable(path, exc) from None
    from transformers import AutoModelForCausalLM

    try:
        with _pretrained(path) as (where, kw):
            return tokenizer, AutoModelForCausalLM.from_pretrained(where, **kw)
    except (OSError, ValueError, KeyError) as exc:
        raise _not_loadable(path, exc) from None


def check_texts(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """The token ids of each text (the tokenizer's defaults); a text of fewer than two tokens has no prefix to
    score its last token after: a :class:`UserError` naming it."""
    encoded = [_encode(tokenizer, t) for t in texts]
    for text, ids in zip(texts, encoded, strict=True):
        if len(ids) < 2:
            raise UserError(
                f"text {text!r}: {len(ids)} token(s); a sequence reward needs at least 2 "
                "(a prefix and a last token)"
            )
    return encoded


@contextlib.contextmanager
def _eval(*models: Any) -> Iterator[None]:
    """The models in eval mode (no dropout) and without gradients, their training flags restored after."""
    import torch

    flags = [m.training for m in models]
    try:
        for m in models:
            m.eval()
        with torch.no_grad():
            yield
    finally:
        for m, flag in zip(models, flags, strict=True):
            m.train(flag)


def _device(model: Any) -> Any:
    return next(model.parameters()).device


class _Stepper:
    """One causal LM's next-token logits (1, V) on the CPU for a growing token sequence, one forward pass per
    call: the new tokens only, with the model's KV cache (the ``cache`` argument in transformers 5.24, or
    ``past_key_values``), or the whole sequence again for a model that takes neither."""

    def __init__(self, model: Any):
        params = inspect.signature(model.forward).parameters
        names = [n for n in ("cache", "past_key_values") if n in params]
        self.model, self.name, self.seen, self.cache = model, names[0] if names else None, 0, None
        self.extra = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        self.device = _device(model)

    def __call__(self, ids: list[int]) -> Any:
        import torch

        if self.name is None:
            out = self.model(input_ids=torch.tensor([ids], device=self.device), **self.extra)
        else:
            x = torch.tensor([ids[self.seen :]], device=self.device)
            out = self.model(input_ids=x, use_cache=True, **{self.name: self.cache}, **self.extra)
            self.cache, self.seen = getattr(out, self.name), len(ids)
        return out.logits[:, -1].float().cpu()


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text)["input_ids"])


def generate(
    lm: Any,
    rm: Any,
    tokenizer: Any,
    prompt: str,
    w: float = 1.0,
    top_k: int = 10,
    max_new_tokens: int = 64,
    greedy: bool = False,
    seed: int = 0,
    candidates: str = "lm",
) -> tuple[str, dict[str, int]]:
    """Continue ``prompt`` with reward-guided decoding; returns (the continuation's text, call counts).

    Each step makes one LM forward pass and one RM forward pass (the first over the prompt, the next ones over
    the last token with the KV cache), reads both at the last position and picks the next token with
    :func:`~models.farma.decoding.guided_next` (the LM's logits truncated to the RM's vocabulary). Generation
    stops after the tokenizer's eos token (chosen, counted as a step, left out of the text) or after
    ``max_new_tokens`` tokens; so ``lm_calls == rm_calls ==`` the number of tokens chosen, eos included. The
    text is the continuation only, decoded with ``skip_special_tokens``. Sampling draws from a CPU
    ``torch.Generator`` seeded with ``seed``, so a seed gives the same text on any device.
    """
    import torch

    check(
        w=w,
        top_k=top_k,
        max_new_tokens=max_new_tokens,
        candidates=candidates,
        prompt=prompt,
        lm=lm,
        rm=rm,
        tokenizer=tokenizer,
    )
    ids = _encode(tokenizer, prompt)
    if not ids:
        raise UserError(f"prompt {prompt!r}: gives no tokens")
    eos = tokenizer.eos_token_id
    v = min(vocab_size(lm), vocab_size(rm))
    generator = torch.Generator().manual_seed(seed)
    calls = {"lm_calls": 0, "rm_calls": 0}
    new: list[int] = []
    lm_step, rm_step = _Stepper(lm), _Stepper(rm)
    with _eval(lm, rm):
        for _ in range(max_new_tokens):
            lm_logits = lm_step(ids + new)  # guided_next truncates it to the RM's vocabulary
            calls["lm_calls"] += 1
            rm_logits = rm_step(ids + new)[:, :v]
            calls["rm_calls"] += 1
            token = guided_next(
                lm_logits,
                rm_logits,
                w=w,
                top_k=top_k,
                greedy=greedy,
                generator=generator,
                candidates=candidates,
            )
            t = int(token.item())
            if eos is not None and t == eos:
                break
            new.append(t)
    return tokenizer.decode(new, skip_special_tokens=True), calls


def sequence_reward(rm: Any, tokenizer: Any, texts: Sequence[str], batch_size: int = 16) -> list[float]:
    """r(y) = logits_RM(y_<T)[y_T] for each text y (tokenised with the tokenizer's defaults), in order.

    Texts are scored in batches, padded on the tokenizer's ``padding_side``, with the attention mask and
    explicit position ids (cumsum of the mask - 1, clamped at 0), so left padding shifts no positions; each
    row's reward is gathered at its true last real token. Left, right or no padding give the same rewards (to
    float tolerance). A text of fewer than two tokens has no prefix to score it after: a :class:`UserError`
    naming it.
    """
    import torch

    if batch_size < 1:
        raise UserError(f"batch-size = {batch_size}: must be >= 1")
    check(rm=rm, tokenizer=tokenizer)
    encoded = check_texts(tokenizer, texts)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    left = getattr(tokenizer, "padding_side", "right") == "left"
    dev = _device(rm)
    rewards: list[float] = []
    with _eval(rm):
        for start in range(0, len(encoded), batch_size):
            batch = encoded[start : start + batch_size]
            width = max(len(ids) for ids in batch)
            rows, masks = [], []
            for ids in batch:
                fill = [pad] * (width - len(ids))
                ones, zeros = [1] * len(ids), [0] * len(fill)
                rows.append(fill + ids if left else ids + fill)
                masks.append(zeros + ones if left else ones + zeros)
            input_ids = torch.tensor(rows, device=dev)
            mask = torch.tensor(masks, device=dev)
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            logits = rm(input_ids=input_ids, attention_mask=mask, position_ids=positions).logits
            # the true last real index per row: the last 1 of the mask (real tokens are contiguous)
            last = width - 1 - mask.flip(-1).argmax(-1)
            arange = torch.arange(len(batch), device=dev)
            r = logits[arange, last - 1].float().gather(-1, input_ids[arange, last].unsqueeze(-1)).squeeze(-1)
            rewards.extend(float(x) for x in r.cpu())
    return rewards
