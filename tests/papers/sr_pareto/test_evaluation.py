"""sr_pareto's evaluation summary (models/sr_pareto/evaluation.summarize) on hand-made tables: every number the
report shows, and the cases where a front is beaten (what the claims must catch)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from models.sr_pareto.evaluation import summarize

NAN = np.nan


def comparison() -> pd.DataFrame:
    rows = [
        # dataset, length, full, karva3, bfgs_protocol, planted_length
        ("a", 1, 0.10, 0.10, 0.10, 3),
        ("a", 3, 1.00, 1.00, 1.00, 3),
        ("a", 5, 1.00, 0.90, NAN, 3),
        ("b", 1, 0.20, 0.20, 0.25, NAN),
        ("b", 3, 0.995, 0.995, NAN, NAN),
    ]
    return pd.DataFrame(
        [
            {
                "dataset": d,
                "features": 2,
                "length": n,
                "full": f,
                "full_expression": "x0",
                "karva3": k,
                "bfgs_protocol": b,
                "planted_length": p,
            }
            for d, n, f, k, b, p in rows
        ]
    )


def test_summary_numbers():
    peer = pd.DataFrame(
        [
            {"dataset": "a", "program": "X0", "length": 1, "r2": 0.05, "front": 0.10},
            {"dataset": "b", "program": "mul(X0, X1)", "length": 3, "r2": 0.999, "front": 0.995},
        ]
    )
    opts = pd.DataFrame(
        [
            {"dataset": "b", "optimizer": "BFGS", "length": 3, "best_r2": 0.9, "invalid_fraction": 0.0},
            {"dataset": "b", "optimizer": "CG", "length": 3, "best_r2": 0.7, "invalid_fraction": 0.1},
        ]
    )
    s = summarize(comparison(), peer, opts)
    assert s["karva_column"] == "karva3"
    assert s["exact_recovery"] == {"min_r2": 1.0, "planted_sets": 1, "worst": "a"}
    assert math.isclose(s["karva_gap"]["min"], 0.0) and s["karva_gap"]["strict"] == [
        {"dataset": "a", "length": 5}
    ]
    # a program above the front: the gap is positive and named
    assert math.isclose(s["peer_gap"]["max"], 0.004)
    assert s["peer_gap"]["closest"]["program"] == "mul(X0, X1)"
    assert [r["programs"] for r in s["peer_gap"]["by_dataset"]] == [1, 1]
    assert math.isclose(s["optimizers"]["spread"], 0.2)
    assert (s["optimizers"]["best"], s["optimizers"]["worst"]) == ("BFGS", "CG")
    # the fast path below the protocol on b at length 1
    assert math.isclose(s["bfgs_gap"]["min"], -0.05)
    assert s["bfgs_gap"]["closest"]["dataset"] == "b" and s["bfgs_gap"]["pairs"] == 3
    assert s["below_planted"]["rows"] == [{"dataset": "a", "length": 1, "r2": 0.10}]
    assert s["below_planted"]["below"] == 1


def test_empty_peer_and_optimizers_give_nan():
    s = summarize(comparison(), pd.DataFrame(), pd.DataFrame())
    assert math.isnan(s["peer_gap"]["max"]) and s["peer_gap"]["programs"] == 0
    assert math.isnan(s["optimizers"]["spread"]) and s["optimizers"]["mean_best_r2"] == {}
