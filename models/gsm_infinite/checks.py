"""The analysis of generated problem sets and scored replies (what the evaluate stage computes).

- Oracle agreement: every problem's prompt is solved from its TEXT alone (:func:`symbolic.solve_symbolic_text`,
  :func:`realistic.solve_realistic_text`) and compared with the generator's answer (symbolic: the sorted set of
  variable names; realistic: the integer).
- Op exactness: op recounted from the prompt TEXT (:func:`symbolic.count_ops_text`: the statements a full
  derivation applies; :func:`realistic.count_ops_text`: the in-degree of the parameters the answer needs,
  read from the sentences and the notes) against the op requested for the set (the ``op`` of the problem's
  id, which the set's loop wrote), and the recorded ``op`` against it too.
- Length control: a noisy prompt's measured length (SmolLM2 tokens) against its token target; the relative
  deviation is |tokens - context| / context.
- Replies: accuracy per op (mean over problems of correct samples / samples) and pass@k for k = powers of 2 up
  to the samples per problem (:func:`harness.summarize`), with the mean seconds per reply.
- The planted reasoner (``depth``, zero noise): the sigmoid 1 / (1 + exp(k (op - op50))) fitted to its
  accuracy against the planted op50 = LOC and k = 1/SCALE; the AUC of its best-of-k, 100 trapz(pass@k, op),
  against the expectation of the same estimator under the planted curve, and the line of AUC against log2 k
  (slope per doubling) against the line through the planted AUCs.
- The h-round reasoner: accuracy per (set, op) against its exact expectation (:func:`reasoners.hround_expected`),
  its sigmoid and line fits, its best-of-k AUCs.
- Retrieval on the noisy sets: per (set, op) with op >= HIGH_OP the retrieval reasoner's accuracy, the exact
  solver's, and how often the queried value is the root's constant (the one assigned statement: a lexical
  anchor); the worst case is the largest retrieval accuracy over those cells.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

LENGTH_COLUMNS = ["subset", "context", "op", "tokens"]
PROBLEM_COLUMNS = ["set", "id", "op", "context", "anchored", "hround_expected"]
#: the zero-noise symbolic replies the fits use, by reasoner
ZERO_NOISE = "symbolic_c0"
#: the retrieval gate covers ops at least this large
HIGH_OP = 10
_REQUESTED = re.compile(r"-op(\d+)-\d+$")


def requested_op(problem: dict) -> int:
    """The op the set asked for: the ``op<N>`` of the id that :func:`generate.problem_set` writes from its loop
    (the recorded ``op`` when the id has none)."""
    m = _REQUESTED.search(str(problem.get("id", "")))
    return int(m.group(1)) if m else int(problem["op"])


def check_problem(problem: dict) -> tuple[dict, dict | None]:
    """(the oracle / op row of one problem, its length row or None when it has no noise)."""
    from . import realistic, symbolic

    p = problem
    if p["subset"] == "symbolic":
        agree = symbolic.solve_symbolic_text(p["prompt"]) == sorted(p["answer"])
        op_text = symbolic.count_ops_text(p["prompt"])
    else:
        agree = realistic.solve_realistic_text(p["prompt"]) == p["answer"]
        op_text = realistic.count_ops_text(p["prompt"])
    check = {
        "subset": p["subset"],
        "context": p["context"],
        "op": p["op"],
        "op_requested": requested_op(p),
        "op_text": op_text,
        "agree": agree,
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


def symbolic_rows(problems: Iterable[dict], stem: str) -> list[dict]:
    """Per symbolic problem of the set ``stem``: its op and context, whether the queried value is the root's
    constant (``anchored``), and the h-round reasoner's exact success probability."""
    from .reasoners import hround_expected

    rows = []
    for p in problems:
        root_value = p["graph"]["core"][0][3]
        rows.append(
            {
                "set": stem,
                "id": p["id"],
                "op": p["op"],
                "context": p["context"],
                "anchored": bool(p["graph"]["query_value"] == root_value),
                "hround_expected": hround_expected(p),
            }
        )
    return rows


def reasoner_of(stem: str) -> str:
    """The reasoner of a replies file: ``symbolic_c0.depth`` -> ``depth``; ``real_smollm2`` -> itself."""
    return stem.rsplit(".", 1)[-1] if "." in stem else stem


def score_replies(results: list[dict], stem: str) -> list[dict]:
    """One row per (subset, context, op) of one replies file: reasoner, set (the file's stem), problems, samples
    per problem, accuracy, pass@k for the k of :func:`scoring.ks_for` (samples per problem), and the mean
    seconds per reply."""
    import pandas as pd

    from .harness import summarize
    from .scoring import ks_for

    samples = 1 + max(r["sample"] for r in results)
    rows, _ = summarize(results, ks_for(samples))
    seconds = pd.DataFrame(results).groupby("op")["seconds"].mean()
    reasoner = reasoner_of(stem)
    return [
        {"reasoner": reasoner, "set": stem, **r, "samples": samples, "seconds": float(seconds[r["op"]])}
        for r in rows
    ]


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
    """Disagreements with the oracle; problems whose op recounted from the text, or whose recorded op, differs
    from the requested op; the problems per subset, per (subset, context) and the requested op range."""
    subsets = sorted(checks.subset.unique())
    counts = checks.groupby(["subset", "context"]).size().reset_index(name="problems")
    wrong = (checks.op_text != checks.op_requested) | (checks.op != checks.op_requested)
    return {
        "problems": len(checks),
        "disagreements": int((~checks.agree).sum()),
        "wrong_op": int(wrong.sum()),
        "wrong_op_text": int((checks.op_text != checks.op_requested).sum()),
        "by_subset": {s: int((checks.subset == s).sum()) for s in subsets},
        "missing_subsets": sorted({"symbolic", "medium", "hard"} - set(subsets)),
        "ops": {
            s: [int(g.op_requested.min()), int(g.op_requested.max())] for s, g in checks.groupby("subset")
        },
        "by_set": [
            {"subset": r.subset, "context": int(r.context), "problems": int(r.problems)}
            for r in counts.itertuples()
        ],
    }


def _ks(frame: Any) -> list[int]:
    return [int(c.split("@")[1]) for c in frame.columns if c.startswith("pass@") and frame[c].notna().all()]


def _safe_sigmoid(ops, acc) -> dict:
    from .scoring import fit_sigmoid

    try:
        return fit_sigmoid(ops, acc)
    except RuntimeError:  # no convergence: a flat curve
        return {"k": math.nan, "op50": math.nan, "r2": math.nan}


def depth_fits(accuracy: Any) -> dict:
    """The planted reasoner on the zero-noise symbolic set: the sigmoid fit against the planted op50 and k (and
    each one's relative error), the best-of-k AUCs and the planted ones (the expectation of the same estimator
    with the same samples per problem), the lines of both against log2 k, and the ideal slope per doubling
    100 SCALE ln 2 (an op range holding the whole curve)."""
    import numpy as np

    from .reasoners import LOC, SCALE, planted_auc
    from .scoring import auc, fit_line, fit_sigmoid

    zero = accuracy[accuracy.set == f"{ZERO_NOISE}.depth"].sort_values("op")
    fit = fit_sigmoid(zero.op, zero.accuracy)
    planted = {"op50": LOC, "k": 1.0 / SCALE}
    err = {p: abs(fit[p] - planted[p]) / planted[p] for p in ("op50", "k")}
    ks = _ks(zero)
    aucs = [auc(zero.op, zero[f"pass@{k}"]) for k in ks]
    samples = int(zero.samples.max())
    planted_aucs = planted_auc(list(zero.op), ks, samples)
    nan_line = {"r2": math.nan, "slope": math.nan, "intercept": math.nan}
    line = fit_line(np.log2(ks), aucs) if len(ks) > 1 else nan_line
    planted_line = fit_line(np.log2(ks), planted_aucs) if len(ks) > 1 else nan_line
    auc_err = [abs(a - b) / b for a, b in zip(aucs, planted_aucs, strict=True)]
    slope_err = abs(line["slope"] - planted_line["slope"]) / abs(planted_line["slope"])
    return {
        "sigmoid": fit,
        "planted": planted,
        "rel_err": err,
        "ks": ks,
        "samples": samples,
        "aucs": aucs,
        "planted_aucs": planted_aucs,
        "auc_rel_err": auc_err,
        "line": line,
        "planted_line": planted_line,
        "slope_rel_err": slope_err if len(ks) > 1 else math.nan,
        "ideal_slope": 100 * SCALE * math.log(2),
        "ops": [int(zero.op.min()), int(zero.op.max())],
    }


def hround_summary(accuracy: Any, problems: Any) -> dict:
    """The h-round reasoner: per (set, op) its accuracy and its exact expectation (the mean of
    :func:`reasoners.hround_expected` over the set's problems) and their largest gap; on the zero-noise set the
    sigmoid fit and the line fit (R^2 of each) of accuracy against op, and the AUC of best-of-k for each k."""
    import numpy as np

    from .scoring import auc, fit_line

    h = accuracy[accuracy.reasoner == "hround"]
    expected = problems.groupby(["set", "op"]).hround_expected.mean()
    rows = []
    for r in h.sort_values(["set", "op"]).itertuples():
        stem = r.set.rsplit(".", 1)[0]
        rows.append(
            {
                "set": stem,
                "op": int(r.op),
                "problems": int(r.problems),
                "accuracy": float(r.accuracy),
                "expected": float(expected[(stem, r.op)]),
            }
        )
    zero = h[h.set == f"{ZERO_NOISE}.hround"].sort_values("op")
    ks = _ks(zero)
    return {
        "by_op": rows,
        "max_gap": max(abs(r["accuracy"] - r["expected"]) for r in rows) if rows else math.nan,
        "sigmoid": _safe_sigmoid(zero.op, zero.accuracy),
        "line": fit_line(zero.op, zero.accuracy),
        "ks": ks,
        "aucs": [auc(zero.op, zero[f"pass@{k}"]) for k in ks],
        "auc_line": fit_line(np.log2(ks), [auc(zero.op, zero[f"pass@{k}"]) for k in ks])
        if len(ks) > 1
        else {"r2": math.nan, "slope": math.nan},
    }


def retrieval_summary(accuracy: Any, problems: Any, retrieval: Any) -> dict:
    """Retrieval per (set, op): accuracy, the exact solver's accuracy, problems, the share whose queried value
    is the root's constant and the retrieval accuracy on those and on the others; ``gated`` holds the noisy
    sets' cells with op >= HIGH_OP and ``worst`` the one with the largest retrieval accuracy."""
    merged = retrieval.merge(problems, on=["set", "id"], how="left")
    exact = accuracy[accuracy.reasoner == "exact"].set_index(["set", "op"]).accuracy
    cells = []
    for (stem, op), g in merged.groupby(["set", "op"]):
        anchored = g[g.anchored]
        other = g[~g.anchored]
        cells.append(
            {
                "set": stem,
                "context": int(g.context.iloc[0]),
                "op": int(op),
                "problems": len(g),
                "accuracy": float(g.correct.mean()),
                "exact": float(exact.get((f"{stem}.exact", op), math.nan)),
                "anchored": float(g.anchored.mean()),
                "acc_anchored": float(anchored.correct.mean()) if len(anchored) else math.nan,
                "acc_other": float(other.correct.mean()) if len(other) else math.nan,
            }
        )
    gated = [c for c in cells if c["context"] > 0 and c["op"] >= HIGH_OP]
    worst = max(gated, key=lambda c: (c["accuracy"], c["op"])) if gated else None
    return {"cells": cells, "gated": gated, "worst": worst, "high_op": HIGH_OP}


def sigmoid_curve(fit: dict, lo: float, hi: float, points: int = 200) -> dict:
    """The fitted sigmoid at ``points`` evenly spaced ops in [lo, hi] (for the figure): {"op": ..., "accuracy": ...}."""
    import numpy as np

    from .scoring import sigmoid

    xs = np.linspace(lo, hi, points)
    return {"op": xs, "accuracy": sigmoid(xs, fit["k"], fit["op50"])}
