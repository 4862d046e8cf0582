"""The experiment's bookkeeping (models/model_independence/experiment.py): the pairs, and the summary the claims
read, on planted p-value tables: valid p-values pass the uniformity and minimum checks, a miscalibrated
statistic fails them, and PERMTEST's rank is read back from its p-value."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from models.model_independence import experiment as ex  # torch-free at import

T = 19


def planted(independent: dict[str, np.ndarray], l2_rank: int = 1) -> pd.DataFrame:
    """A p-value table like evaluate's: the dependent and adversarial pairs, then len(p) independent pairs with
    the given p-values per statistic."""
    rows = []
    n = len(next(iter(independent.values())))
    for a, b, kind in ex.pairs(n):
        for s in ex.STATISTICS:
            if kind == "independent":
                lp = math.log10(independent[s][int(a[-2:]) // 2])
            elif s == "l2":
                lp = math.log10(l2_rank / (T + 1))
            else:
                lp = -150.0 if kind == "dependent" else -1.5
            rows.append({"a": a, "b": b, "kind": kind, "stat": s, "log10p": lp})
    return pd.DataFrame(rows)


ACC = {"base": 0.9, "ft": 0.8, "indep_00": 0.7, "indep_01": 0.9}


def test_pairs_are_disjoint_and_labelled():
    p = ex.pairs(3)
    assert p[:2] == [("base", "ft", "dependent"), ("base", "ft_perm", "adversarial")]
    indep = [x for pair in p[2:] for x in pair[:2]]
    assert indep == [f"indep_{k:02d}" for k in range(6)] and {k for *_, k in p[2:]} == {"independent"}
    assert ex.heatmap_names(["base", "ft", "ft_perm", "indep_00", "indep_01", "indep_02"], 2) == [
        "base",
        "ft",
        "ft_perm",
        "indep_00",
        "indep_01",
    ]


def test_summary_of_valid_p_values():
    rng = np.random.default_rng(0)
    s = ex.summarize(planted({st: rng.uniform(0.01, 1, size=40) for st in ex.STATISTICS}), ACC, T)
    assert s["independent_pairs"] == 40
    assert all(v > 0.001 for v in s["independent_ks_p"].values())
    assert all(v > -4 for v in s["independent_min_log10p"].values())
    assert s["permtest_rank"] == 1.0 and s["permtest_p"] == pytest.approx(1 / (T + 1))
    assert s["fooled_u"] == -1.5 and s["log10p"]["dependent/match"] == -150.0
    assert s["test_accuracy"] == {"base": 0.9, "ft": 0.8, "independent_mean": pytest.approx(0.8)}


def test_summary_flags_a_miscalibrated_statistic_and_a_missed_floor():
    rng = np.random.default_rng(1)
    ps = {st: rng.uniform(size=40) for st in ex.STATISTICS}
    ps["match"] = 10 ** rng.uniform(-6, -1, size=40)  # anti-conservative: many tiny p-values under H_0
    s = ex.summarize(planted(ps, l2_rank=7), ACC, T)
    assert s["independent_ks_p"]["match"] < 0.001 and s["independent_min_log10p"]["match"] < -4
    assert s["independent_ks_p"]["u"] > 0.001
    assert s["permtest_rank"] == 7.0  # the claim permtest_exact_floor (== 1) fails
