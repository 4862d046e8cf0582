"""Summaries of a sweep's evaluations: success rate and mean return per agent and beta, and the claims'
numbers (worst case over the betas each claim names)."""

from __future__ import annotations

import math

import pandas as pd

LARGE = (1.0, 10.0, 100.0)


def table(history: pd.DataFrame, episode: int | None = None, clock: str = "episode") -> pd.DataFrame:
    """Per (agent, beta): success rate and mean and sd of the return over seeds at ``episode`` (default: the
    last evaluation) of the column ``clock`` (``step`` for the deep variant)."""
    ep = int(history[clock].max()) if episode is None else episode
    last = history[history[clock] == ep]
    g = last.groupby(["agent", "beta"], sort=True)
    out = g.agg(
        success=("success", "mean"),
        ret=("return", "mean"),
        ret_sd=("return", "std"),
        seeds=("seed", "nunique"),
    )
    return out.reset_index().rename(columns={"ret": "return", "ret_sd": "return_sd"})


def _values(t: pd.DataFrame, agent: str, col: str, betas: tuple[float, ...] | None) -> pd.Series:
    rows = t[t.agent == agent]
    if betas is not None:
        rows = rows[rows.beta.isin(betas)]
    return rows.set_index("beta")[col]


def claims(t: pd.DataFrame, large: tuple[float, ...] = LARGE) -> dict:
    """The four gated numbers, each with the beta where it is attained (NaN when an agent did not run)."""
    out: dict = {}

    def pick(agent: str, col: str, how: str, betas) -> tuple[float, float]:
        v = _values(t, agent, col, betas)
        if v.empty:
            return math.nan, math.nan
        b = v.idxmax() if how == "max" else v.idxmin()
        return float(v[b]), float(b)

    out["curiosity_max_success_large"], out["curiosity_at"] = pick("curiosity", "success", "max", large)
    out["hyper_min_success_large"], out["hyper_success_at"] = pick("hyper", "success", "min", large)
    out["hyper_min_return_large"], out["hyper_return_at"] = pick("hyper", "return", "min", large)
    h, d = _values(t, "hyper", "success", None), _values(t, "decouple", "success", None)
    common = sorted(set(h.index) & set(d.index))
    if common:
        diff = (h[common] - d[common]).astype(float)
        out["hyper_minus_decouple_min"], out["hyper_minus_decouple_at"] = (
            float(diff.min()),
            float(diff.idxmin()),
        )
    else:
        out["hyper_minus_decouple_min"], out["hyper_minus_decouple_at"] = math.nan, math.nan
    return out
