"""gsm_infinite's analysis (models/gsm_infinite/checks.py): the oracle and op checks catch a tampered problem
(op recounted from its text), the length deviations, the planted fits recover their planted values exactly from
exact inputs, and the retrieval summary takes the worst noisy cell."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from models.gsm_infinite.checks import (
    check_problems,
    check_summary,
    depth_fits,
    length_summary,
    retrieval_summary,
    score_replies,
    sigmoid_curve,
)
from models.gsm_infinite.generate import problem_set


def test_checks_count_a_tampered_answer_and_a_wrong_op():
    problems = list(problem_set("symbolic", [3, 5], 0, 2, seed=2)) + list(
        problem_set("medium", [4], 0, 2, seed=2)
    )
    problems[0]["answer"] = ["V000000"]  # not what the text gives
    problems[3]["op"] = 6  # the recorded op; the set asked for 5
    problems[1]["id"] = problems[1]["id"].replace("-op3-", "-op4-")  # asked for 4: its text derives 3
    problems[4].update(context=100, context_tokens=110)  # a noisy prompt 10 % over its target
    checks, lengths = check_problems(problems)
    s = check_summary(pd.DataFrame(checks))
    assert (s["problems"], s["disagreements"], s["wrong_op"], s["wrong_op_text"]) == (6, 1, 2, 1)
    assert s["by_subset"] == {"medium": 2, "symbolic": 4} and s["missing_subsets"] == ["hard"]
    ls = length_summary(pd.DataFrame(lengths))
    assert ls["prompts"] == 1 and ls["contexts"] == [100] and ls["max_rel_dev"] == pytest.approx(0.1)
    assert math.isnan(
        length_summary(pd.DataFrame(columns=["subset", "context", "op", "tokens"]))["max_rel_dev"]
    )


def test_depth_fits_recover_the_planted_curve_and_its_best_of_k_aucs():
    from models.gsm_infinite.reasoners import LOC, SCALE, expected_pass_at_k, planted_accuracy

    ops = np.arange(2, 41, 2)
    p = planted_accuracy(ops)
    rows = [
        {
            "reasoner": "depth",
            "set": "symbolic_c0.depth",
            "op": o,
            "samples": 4,
            "accuracy": a,
            "pass@1": expected_pass_at_k(a, 4, 1),
            "pass@2": expected_pass_at_k(a, 4, 2),
            "pass@4": expected_pass_at_k(a, 4, 4),
        }
        for o, a in zip(ops, p, strict=True)
    ]
    fits = depth_fits(pd.DataFrame(rows))
    assert fits["sigmoid"]["op50"] == pytest.approx(LOC) and fits["sigmoid"]["k"] == pytest.approx(1 / SCALE)
    assert max(fits["rel_err"].values()) < 1e-6 and max(fits["auc_rel_err"]) < 1e-9
    assert fits["ks"] == [1, 2, 4] and fits["slope_rel_err"] < 1e-9 and fits["line"]["slope"] > 0
    curve = sigmoid_curve(fits["sigmoid"], *fits["ops"], points=5)
    assert list(curve["op"]) == [2.0, 11.5, 21.0, 30.5, 40.0]
    assert curve["accuracy"][0] > 0.98 and curve["accuracy"][-1] < 0.01


def test_retrieval_summary_takes_the_worst_noisy_cell_and_the_anchor_share():
    problems = pd.DataFrame(
        [
            {
                "set": s,
                "id": f"{s}-{op}-{i}",
                "op": op,
                "context": c,
                "anchored": i == 0,
                "hround_expected": 1.0,
            }
            for s, c in (("symbolic_c0", 0), ("symbolic_c8000", 8000))
            for op in (6, 10, 14)
            for i in range(4)
        ]
    )
    retrieval = problems[["set", "id"]].assign(
        correct=[True] * 12 + [i == 0 for i in range(4)] * 2 + [True, True, False, False]
    )
    acc = pd.DataFrame(
        [
            {"reasoner": "exact", "set": f"{s}.exact", "op": op, "accuracy": 1.0}
            for s in ("symbolic_c0", "symbolic_c8000")
            for op in (6, 10, 14)
        ]
    )
    r = retrieval_summary(acc, problems, retrieval)
    assert [(c["op"], c["accuracy"]) for c in r["gated"]] == [(10, 0.25), (14, 0.5)]
    assert (
        r["worst"]["op"] == 14
        and r["worst"]["anchored"] == 0.25
        and r["worst"]["acc_other"] == pytest.approx(1 / 3)
    )
    assert len(r["cells"]) == 6 and r["gated"][0]["acc_anchored"] == 1.0


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
