"""gsm_infinite's analysis (models/gsm_infinite/checks.py): the oracle and op checks catch a tampered problem,
the length deviations, and the fits recover a planted sigmoid and a planted best-of-k scaling."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from models.gsm_infinite.checks import (
    check_problems,
    check_summary,
    length_summary,
    reasoner_fits,
    score_replies,
    sigmoid_curve,
)
from models.gsm_infinite.generate import problem_set
from models.gsm_infinite.scoring import sigmoid


def test_checks_count_a_tampered_answer_and_a_wrong_op():
    problems = list(problem_set("symbolic", [3, 5], 0, 2, seed=2)) + list(
        problem_set("medium", [4], 0, 2, seed=2)
    )
    problems[0]["answer"] = ["V000000"]  # not what the text gives
    problems[3]["op"] = 6  # the graph has 5
    problems[4].update(context=100, context_tokens=110)  # a noisy prompt 10 % over its target
    checks, lengths = check_problems(problems)
    s = check_summary(pd.DataFrame(checks))
    assert (s["problems"], s["disagreements"], s["wrong_op"]) == (6, 1, 1)
    assert s["by_subset"] == {"medium": 2, "symbolic": 4} and s["missing_subsets"] == ["hard"]
    ls = length_summary(pd.DataFrame(lengths))
    assert ls["prompts"] == 1 and ls["contexts"] == [100] and ls["max_rel_dev"] == pytest.approx(0.1)
    assert math.isnan(
        length_summary(pd.DataFrame(columns=["subset", "context", "op", "tokens"]))["max_rel_dev"]
    )


def test_fits_recover_a_planted_sigmoid_and_best_of_k_scaling():
    ops = np.arange(2, 31, 2)
    acc = sigmoid(ops, 0.5, 14.0)
    rows = [
        {
            "reasoner": "depth",
            "set": "symbolic_c0.depth",
            "op": o,
            "accuracy": a,
            "pass@1": a,
            "pass@2": 1 - (1 - a) ** 2,
        }
        for o, a in zip(ops, acc, strict=True)
    ]
    rows += [{"reasoner": "exact", "set": "symbolic_c0.exact", "op": o, "accuracy": 1.0} for o in ops]
    rows += [
        {"reasoner": "retrieval", "set": "symbolic_c0.retrieval", "op": o, "accuracy": float(o < 10)}
        for o in ops
    ]
    fits = reasoner_fits(pd.DataFrame(rows))
    assert fits["sigmoid"]["r2"] == pytest.approx(1.0) and fits["sigmoid"]["op50"] == pytest.approx(14.0)
    assert fits["ks"] == [1, 2] and fits["aucs"][1] > fits["aucs"][0] and fits["line"]["slope"] > 0
    assert (fits["exact_acc_op_ge_10"], fits["retrieval_acc_op_ge_10"]) == (1.0, 0.0)
    curve = sigmoid_curve(fits["sigmoid"], *fits["ops"], points=5)
    assert list(curve["op"]) == [2.0, 9.0, 16.0, 23.0, 30.0]
    assert curve["accuracy"][0] > 0.99 and curve["accuracy"][-1] < 0.01


def test_score_replies_gives_accuracy_and_pass_at_k_per_op():
    results = [
        {
            "id": f"p{i}",
            "sample": s,
            "subset": "symbolic",
            "context": 0,
            "op": 2 + 2 * (i % 2),
            "correct": c,
            "seconds": 0.5,
        }
        for i, outcomes in enumerate([(1, 1), (1, 0), (0, 0), (0, 0)])
        for s, c in enumerate(outcomes)
    ]
    rows = score_replies(results, "symbolic_c0.depth")
    assert [(r["reasoner"], r["op"], r["accuracy"]) for r in rows] == [("depth", 2, 0.5), ("depth", 4, 0.25)]
    assert rows[1]["pass@2"] == pytest.approx(0.375) and rows[0]["seconds"] == 0.5
