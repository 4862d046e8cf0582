"""Scoring of GSM-Infinity replies: answer extraction, accuracy per op, pass@k, the AUC score, the sigmoid fit.

- Realistic subsets: the reply is lower-cased and searched with the official keyword cascade, in order:
  "answer: ", "solution: ", "oxed{" (last occurrence), "**answer:** ", "**answer: ", "final answer: answer: ",
  "\\nanswer: ", "\\text{answer: } " (then the digits), "is " (last occurrence), "answer: " (up to the line end);
  each keyword has its end delimiter, and the text between must parse as an integer, or the next keyword is
  tried. Correct iff it equals the reference integer. (The official loop reads ``generatedtext[0]`` inside the
  ``\\text{answer: }`` branch, a bug that only matters for lists of replies; we read the reply itself.)
- Symbolic subset: the paper extracts the listed variables with an LLM parser (Qwen2.5-7B-Instruct). Offline we
  use a deterministic substitute, documented as such: the text after the last "answer" (case-insensitive) in
  the reply (after any ``</think>``), or its last non-empty line when there is none, and every ``V\\d+`` in it.
  Correct iff the extracted SET equals the answer set.
- Accuracy per op = mean over problems of (correct samples / samples). pass@k = 1 - (1 - c/n)^k (the official
  formula, with c correct out of n samples, for k = powers of 2 up to n).
- Leaderboard score: AUC = trapz(accuracy sorted by op, op) x 100 over the evaluated op range.
- Sigmoid decline: accuracy(op) ~ 1 / (1 + exp(k (op - op50))), fit by least squares; R^2 of the fit.
"""

from __future__ import annotations

import math
import re

import numpy as np

KEYWORDS = (
    ("answer: ", ".", False),
    ("solution: ", ".", False),
    ("oxed{", "}", True),
    ("**answer:** ", ".", False),
    ("**answer: ", "**", False),
    ("final answer: answer: ", ".", False),
    ("\nanswer: ", ".", False),
    ("\\text{answer: } ", None, False),
    ("is ", ".", True),
    ("answer: ", "\n", False),
)
_VAR = re.compile(r"\bV\d+\b")


def _as_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def extract_realistic(reply: str) -> int | None:
    """The integer answer of a reply by the keyword cascade, or None."""
    text = re.sub(".\x08", "b", reply).lower()
    for key, end, last in KEYWORDS:
        begin = text.rfind(key) if last else text.find(key)
        if begin < 0:
            continue
        start = begin + len(key)
        if end is None:
            stop = start
            while stop < len(text) and text[stop].isdigit():
                stop += 1
        else:
            stop = text.find(end, start)
            stop = len(text) if stop < 0 else stop
        value = _as_int(text[start:stop])
        if value is not None:
            return value
    return None


def extract_symbolic(reply: str) -> list[str]:
    """The variable names of a reply's final answer (deterministic substitute for the paper's LLM parser)."""
    text = reply.split("</think>")[-1]
    low = text.lower()
    at = low.rfind("answer")
    if at >= 0:
        tail = text[at:]
    else:
        lines = [line for line in text.splitlines() if line.strip()]
        tail = lines[-1] if lines else ""
    return list(dict.fromkeys(_VAR.findall(tail)))


def is_correct(problem: dict, reply: str) -> bool:
    if problem["subset"] == "symbolic":
        return set(extract_symbolic(reply)) == set(problem["answer"])
    return extract_realistic(reply) == int(problem["answer"])


PASS_KS = (1, 2, 4, 8, 16, 32, 64)


def ks_for(samples: int) -> tuple[int, ...]:
    """The k of pass@k reported for ``samples`` samples per problem: powers of 2 up to it (at most 64)."""
    return tuple(k for k in PASS_KS if k <= samples)


def pass_at_k(correct: int, samples: int, k: int) -> float:
    """The official pass@k: 1 - (1 - c/n)^k."""
    if samples < 1 or not 0 <= correct <= samples:
        raise ValueError(f"need 0 <= correct <= samples and samples >= 1, got {correct}/{samples}")
    return 1.0 - (1.0 - correct / samples) ** k


def auc(ops, accuracy) -> float:
    """trapz(accuracy sorted by op, op) x 100."""
    ops = np.asarray(ops, float)
    acc = np.asarray(accuracy, float)
    order = np.argsort(ops)
    return float(np.trapezoid(acc[order], ops[order]) * 100)


def sigmoid(op, k: float, op50: float):
    return 1.0 / (1.0 + np.exp(np.clip(k * (np.asarray(op, float) - op50), -500, 500)))


def fit_sigmoid(ops, accuracy) -> dict:
    """Least-squares fit of accuracy = 1/(1 + exp(k (op - op50))): k, op50 and R^2."""
    from scipy.optimize import curve_fit

    x, y = np.asarray(ops, float), np.asarray(accuracy, float)
    mid = x[np.argmin(np.abs(y - 0.5))]
    (k, op50), _ = curve_fit(sigmoid, x, y, p0=(1.0, mid), maxfev=20_000)
    resid = y - sigmoid(x, k, op50)
    total = np.sum((y - y.mean()) ** 2)
    r2 = 1.0 - np.sum(resid**2) / total if total > 0 else float("nan")
    return {"k": float(k), "op50": float(op50), "r2": float(r2)}


def fit_line(x, y) -> dict:
    """Least-squares line y = a + b x and its R^2."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    b, a = np.polyfit(x, y, 1)
    resid = y - (a + b * x)
    total = np.sum((y - y.mean()) ** 2)
    return {
        "intercept": float(a),
        "slope": float(b),
        "r2": float(1 - np.sum(resid**2) / total) if total else math.nan,
    }
