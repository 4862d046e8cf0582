"""sr_pareto's evaluation summary (models/sr_pareto/evaluation.summarize) on hand-made tables: every number the
report shows, and the cases where a front is beaten (what the claims must catch)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from models.sr_pareto.evaluation import summarize

NAN = np.nan


def comparison() -> pd.DataFrame:
    rows = [
        # dataset, length, full, karva3, karva3_fast, bfgs_protocol, planted_length, planted_reachable
        ("a", 1, 0.10, 0.10, 0.10, 0.10, 3, 1),
        ("a", 3, 1.00, 1.00, 1.00, 1.00, 3, 1),
        ("a", 5, 1.00, 0.90, 0.90, NAN, 3, 1),
        ("b", 1, 0.20, NAN, NAN, 0.25, NAN, NAN),
        ("b", 3, 0.995, NAN, NAN, NAN, NAN, NAN),
        ("c", 1, 0.00, 0.00, 0.00, 0.00, 5, 0),
        ("c", 3, 0.50, 0.50, 0.50, 0.50, 5, 0),
        ("c", 5, 1.00, 0.97, 0.96, NAN, 5, 0),
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
                "karva3_expression": "x1" if not math.isnan(k) else "",
                "karva3_fast": kf,
                "bfgs_protocol": b,
                "planted_length": p,
                "planted_reachable": r,
            }
            for d, n, f, k, kf, b, p, r in rows
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
            {
                "dataset": "b",
                "optimizer": "BFGS",
                "length": 7,
                "candidates": 10,
                "best_r2": 0.9,
                "invalid": 0,
            },
            {"dataset": "b", "optimizer": "CG", "length": 7, "candidates": 10, "best_r2": 0.7, "invalid": 3},
        ]
    )
    s = summarize(comparison(), peer, opts)
    assert s["karva_column"] == "karva3"
    assert s["exact_recovery"] == {"min_r2": 1.0, "planted_sets": 2, "worst": "a"}
    # the Karva gap at the planted length: c is out of reach (gated), a within reach (the control)
    k = s["karva_gap"]
    assert math.isclose(k["min"], 0.03) and k["worst"] == "c"
    assert [(r["dataset"], r["length"]) for r in k["unreachable"]] == [("c", 5)]
    assert [(r["dataset"], r["gap"]) for r in k["reachable"]] == [("a", 0.0)]
    assert k["strict"] == [{"dataset": "a", "length": 5}, {"dataset": "c", "length": 5}]
    assert k["datasets"] == ["a", "c"]
    # a program above the front: the gap is positive and named
    assert math.isclose(s["peer_gap"]["max"], 0.004)
    assert s["peer_gap"]["closest"]["program"] == "mul(X0, X1)"
    assert [r["programs"] for r in s["peer_gap"]["by_dataset"]] == [1, 1]
    o = s["optimizers"]
    assert math.isclose(o["spread"], 0.2) and (o["best"], o["worst"]) == ("BFGS", "CG")
    assert o["worst_dataset"] == "b" and set(o["spread_by_dataset"]) == {"b"}
    assert o["invalid"] == {"BFGS": 0, "CG": 3} and o["candidates"] == {"BFGS": 10, "CG": 10}
    assert o["length"] == 7
    # the fast path below the protocol: b at length 1 (all trees) and c at length 5 (the Karva space)
    g = s["bfgs_gap"]
    assert math.isclose(g["min"], -0.05) and g["closest"]["dataset"] == "b"
    assert g["trees"] == {"pairs": 5, "max_length": 3}
    assert (
        g["karva"]["pairs"] == 2 and g["karva"]["lengths"] == [5] and math.isclose(g["karva"]["min"], -0.01)
    )
    assert s["below_planted"]["rows"] == [
        {"dataset": "a", "length": 1, "r2": 0.10},
        {"dataset": "c", "length": 3, "r2": 0.50},
    ]
    assert s["below_planted"]["below"] == 2


def test_no_karva_fit_and_empty_peer_and_optimizers_give_nan():
    comp = comparison().assign(karva3=NAN, karva3_fast=NAN)
    s = summarize(comp, pd.DataFrame(), pd.DataFrame())
    assert math.isnan(s["karva_gap"]["min"]) and s["karva_gap"]["unreachable"] == []
    assert math.isnan(s["peer_gap"]["max"]) and s["peer_gap"]["programs"] == 0
    assert math.isnan(s["optimizers"]["spread"]) and s["optimizers"]["mean_best_r2"] == {}


def test_optimizer_spread_is_the_worst_data_set_not_the_mean():
    """Two optimisers that trade places on two data sets tie on the mean; the gated spread still sees 0.3."""
    rows = [
        ("a", "BFGS", 0.9),
        ("a", "CG", 0.6),
        ("b", "BFGS", 0.6),
        ("b", "CG", 0.9),
    ]
    opts = pd.DataFrame(
        [
            {"dataset": d, "optimizer": o, "length": 7, "candidates": 10, "best_r2": r, "invalid": 0}
            for d, o, r in rows
        ]
    )
    o = summarize(comparison(), pd.DataFrame(columns=["dataset", "program", "length", "r2", "front"]), opts)[
        "optimizers"
    ]
    assert math.isclose(o["mean_best_r2"]["BFGS"], o["mean_best_r2"]["CG"])
    assert math.isclose(o["spread"], 0.3) and o["spread_by_dataset"] == pytest.approx({"a": 0.3, "b": 0.3})
