"""The analysis of generated problem sets and scored replies (what the evaluate stage computes).

- Oracle agreement: every problem's prompt is solved from its TEXT alone (:func:`symbolic.solve_symbolic_text`,
  :func:`realistic.solve_realistic_text`) and compared with the generator's answer (symbolic: the sorted set of
  variable names; realistic: the integer).
- Op exactness: the op seen in the structured problem (symbolic: the number of core assignments; realistic:
  :func:`realistic.count_ops`, the total in-degree over the necessary parameters) against the requested op.
- Length control: a noisy prompt's measured length (SmolLM2 tokens) against its token target; the relative
  deviation is |tokens - context| / context.
- Replies: accuracy per op (mean over problems of correct samples / samples) and pass@k for k = powers of 2 up
  to the samples per problem (:func:`harness.summarize`), with the mean seconds per reply.
- Fits (Sec. 5): the depth-limited reasoner's zero-noise accuracy against op by the sigmoid
  1 / (1 + exp(k (op - op50))); its best-of-k AUC = trapz(pass@k, op) x 100 against log2 k by a line (linear
  gains from exponentially more samples); and the accuracy of the exact and retrieval reasoners at op >= 10.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

LENGTH_COLUMNS = ["subset", "context", "op", "tokens"]
#: the zero-noise symbolic replies the fits use, by reasoner
ZERO_NOISE = "symbolic_c0"
HIGH_OP = 10


def check_problem(problem: dict) -> tuple[dict, dict | None]:
    """(the oracle / op row of one problem, its length row or None when it has no noise)."""
    from .realistic import count_ops, solve_realistic_text
    from .symbolic import solve_symbolic_text

    p = problem
    if p["subset"] == "symbolic":
        solved = solve_symbolic_text(p["prompt"])
        agree = solved == sorted(p["answer"])
        op_seen = len(p["graph"]["core"])
    else:
        agree = solve_realistic_text(p["prompt"]) == p["answer"]
        op_seen = count_ops(p["graph"])
    check = {
        "subset": p["subset"],
        "context": p["context"],
        "op": p["op"],
        "agree": agree,
        "op_seen": op_seen,
    }
    length = None
    if p["context"]:
        length = {
            "subset": p["subset"],
            "context": p["context"],
            "op": p["op"],
            "tokens": p["context_tokens"],
        }
    return check, length


def check_problems(problems: Iterable[dict]) -> tuple[list[dict], list[dict]]:
    """The rows of :func:`check_problem` over many problems: (checks, lengths)."""
    checks, lengths = [], []
    for p in problems:
        check, length = check_problem(p)
        checks.append(check)
        if length is not None:
            lengths.append(length)
    return checks, lengths


def reasoner_of(stem: str) -> str:
    """The reasoner of a replies file: ``symbolic_c0.depth`` -> ``depth``; ``real_smollm2`` -> itself."""
    return stem.rsplit(".", 1)[-1] if "." in stem else stem


def score_replies(results: list[dict], stem: str) -> list[dict]:
    """One row per (subset, context, op) of one replies file: reasoner, set (the file's stem), problems,
    accuracy, pass@k for the k of :func:`scoring.ks_for` (samples per problem), and the mean seconds per reply."""
    import pandas as pd

    from .harness import summarize
    from .scoring import ks_for

    samples = 1 + max(r["sample"] for r in results)
    rows, _ = summarize(results, ks_for(samples))
    seconds = pd.DataFrame(results).groupby("op")["seconds"].mean()
    reasoner = reasoner_of(stem)
    return [{"reasoner": reasoner, "set": stem, **r, "seconds": float(seconds[r["op"]])} for r in rows]


def length_summary(lengths: Any) -> dict:
    """The noisy prompts' relative deviations from their targets: count, max, mean, the targets, and one row
    per (subset, context) with the prompts, their mean length and the largest deviation."""
    dev = (lengths.tokens - lengths.context).abs() / lengths.context
    rows = [
        {
            "subset": s,
            "context": int(c),
            "prompts": len(g),
            "mean_tokens": float(g.tokens.mean()),
            "max_rel_dev": float(((g.tokens - c).abs() / c).max()),
        }
        for (s, c), g in lengths.groupby(["subset", "context"])
    ]
    return {
        "prompts": len(dev),
        "contexts": sorted(int(c) for c in lengths.context.unique()),
        "max_rel_dev": float(dev.max()) if len(dev) else math.nan,
        "mean_rel_dev": float(dev.mean()) if len(dev) else math.nan,
        "by_set": rows,
    }


def check_summary(checks: Any) -> dict:
    """Disagreements with the oracle, problems whose op differs from the requested one, and the problems per
    subset and per (subset, context)."""
    subsets = sorted(checks.subset.unique())
    counts = checks.groupby(["subset", "context"]).size().reset_index(name="problems")
    return {
        "problems": len(checks),
        "disagreements": int((~checks.agree).sum()),
        "wrong_op": int((checks.op != checks.op_seen).sum()),
        "by_subset": {s: int((checks.subset == s).sum()) for s in subsets},
        "missing_subsets": sorted({"symbolic", "medium", "hard"} - set(subsets)),
        "by_set": [
            {"subset": r.subset, "context": int(r.context), "problems": int(r.problems)}
            for r in counts.itertuples()
        ],
    }


def reasoner_fits(accuracy: Any) -> dict:
    """The fits on the zero-noise symbolic set: the sigmoid of the depth-limited reasoner's accuracy against op,
    the AUC of its best-of-k (pass@k) for every k scored on all ops, the line of those AUCs against log2 k
    (intercept, slope, R^2; NaN with fewer than two k), and the exact and retrieval reasoners' mean accuracy
    at op >= 10."""
    import numpy as np

    from .scoring import auc, fit_line, fit_sigmoid

    zero = accuracy[accuracy.set == f"{ZERO_NOISE}.depth"].sort_values("op")
    fit = fit_sigmoid(zero.op, zero.accuracy)
    ks = [int(c.split("@")[1]) for c in zero.columns if c.startswith("pass@") and zero[c].notna().all()]
    aucs = [auc(zero.op, zero[f"pass@{k}"]) for k in ks]
    line = fit_line(np.log2(ks), aucs) if len(ks) > 1 else {"r2": math.nan, "slope": math.nan}
    exact = accuracy[accuracy.set == f"{ZERO_NOISE}.exact"]
    retr = accuracy[accuracy.set == f"{ZERO_NOISE}.retrieval"]
    return {
        "sigmoid": fit,
        "ks": ks,
        "aucs": aucs,
        "line": line,
        "exact_acc_op_ge_10": float(exact[exact.op >= HIGH_OP].accuracy.mean()),
        "retrieval_acc_op_ge_10": float(retr[retr.op >= HIGH_OP].accuracy.mean()),
        "ops": [int(zero.op.min()), int(zero.op.max())],
    }


def sigmoid_curve(fit: dict, lo: float, hi: float, points: int = 200) -> dict:
    """The fitted sigmoid at ``points`` evenly spaced ops in [lo, hi] (for the figure): {"op": ..., "accuracy": ...}."""
    import numpy as np

    from .scoring import sigmoid

    xs = np.linspace(lo, hi, points)
    return {"op": xs, "accuracy": sigmoid(xs, fit["k"], fit["op50"])}
