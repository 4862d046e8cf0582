"""The experiment's data: per seed, base-LM samples and BT-labelled preference pairs of the synthetic language,
or a user's preference pairs (JSONL lines {"prompt", "chosen", "rejected"}) mapped onto a word vocabulary.

Pairs: both responses drawn from pi* for the same prompt (pi* is the distribution the base LM is fitted to), the
label 1 when y1 is preferred, drawn with P(y1 > y2) = sigmoid(beta (R*(y1) - R*(y2))).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np

from icml25.errors import UserError

from .language import Language

UNK = "<unk>"
PAD = "<pad>"


def corpus(lang: Language, n: int, g: np.random.Generator) -> dict[str, np.ndarray]:
    """``n`` samples of pi*: prompts uniform over the language's prompts."""
    p = g.integers(0, lang.prompts, n)
    return {"prompt": p, "y": lang.sample(p, g)}


def pairs(lang: Language, n: int, beta: float, g: np.random.Generator) -> dict[str, np.ndarray]:
    """``n`` BT-labelled pairs (prompt, y1, y2, r1, r2, label)."""
    p = g.integers(0, lang.prompts, n)
    y1, y2 = lang.sample(p, g), lang.sample(p, g)
    r1, r2 = lang.reward(p, y1), lang.reward(p, y2)
    label = (g.random(n) < 1.0 / (1.0 + np.exp(-beta * (r1 - r2)))).astype(np.int64)
    return {"prompt": p, "y1": y1, "y2": y2, "r1": r1, "r2": r2, "label": label}


def _words(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text.lower())


def read_pairs(path: str | Path, tokens: int, length: int, max_prompts: int) -> tuple[dict, dict]:
    """A user's pairs: each line {"prompt", "chosen", "rejected"} (strings). Responses become the ids of their
    first ``length`` words in a vocabulary of the ``tokens - 2`` most frequent words plus <unk> and <pad> (short
    responses are padded with <pad>); prompts are numbered in order of first appearance (at most
    ``max_prompts``). Returns the pairs (label 1: y1 = chosen; r1, r2 NaN: no known reward) and a description
    with the vocabulary. UserError naming the line for a malformed one."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    rows = []
    with open(path, encoding="utf-8", errors="strict") as f:
        try:
            lines = f.read().splitlines()
        except UnicodeDecodeError as exc:
            raise UserError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{i}: not JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or not all(
            isinstance(rec.get(k), str) for k in ("prompt", "chosen", "rejected")
        ):
            raise UserError(f'{path}:{i}: expected an object with string "prompt", "chosen" and "rejected"')
        rows.append(rec)
    if len(rows) < 2:
        raise UserError(f"{path}: {len(rows)} pair(s); need at least 2")
    prompt_ids: dict[str, int] = {}
    for r in rows:
        prompt_ids.setdefault(r["prompt"], len(prompt_ids))
    if len(prompt_ids) > max_prompts:
        raise UserError(f"{path}: {len(prompt_ids)} distinct prompts; prepare.prompts allows {max_prompts}")
    counts = Counter(w for r in rows for k in ("chosen", "rejected") for w in _words(r[k]))
    vocab = [w for w, _ in counts.most_common(tokens - 2)]
    vocab += [UNK, PAD][: tokens - len(vocab)]
    vocab += [f"<unused{i}>" for i in range(tokens - len(vocab))]
    index = {w: i for i, w in enumerate(vocab)}

    def ids(text: str) -> list[int]:
        out = [index.get(w, index[UNK]) for w in _words(text)[:length]]
        return out + [index[PAD]] * (length - len(out))

    data = {
        "prompt": np.array([prompt_ids[r["prompt"]] for r in rows], np.int64),
        "y1": np.array([ids(r["chosen"]) for r in rows], np.int64),
        "y2": np.array([ids(r["rejected"]) for r in rows], np.int64),
        "r1": np.full(len(rows), np.nan),
        "r2": np.full(len(rows), np.nan),
        "label": np.ones(len(rows), np.int64),
    }
    return data, {"vocab": vocab, "prompts": list(prompt_ids), "pairs": len(rows)}
