"""The claims' numbers from an evaluation table (one row per agent: seed, variant, return, cost, success,
critic_error_cost, leak; stages/pigdreamer/evaluate.py), shared by the report and the tests that run stubs
through them. Worst cases and medians are over seeds; nothing here knows a threshold but the issue's d + 0.1 and
0.8 of ``safe_and_useful``'s definition."""

from __future__ import annotations

import numpy as np
import pandas as pd


def critic_ratios(
    frame: pd.DataFrame, privileged: tuple[str, ...] = ("B", "C"), base: str = "A"
) -> pd.Series:
    """Per seed: max over the ``privileged`` variants of the normalised cost-critic error, over ``base``'s."""
    err = frame.pivot(index="seed", columns="variant", values="critic_error_cost")
    missing = [v for v in (*privileged, base) if v not in err]
    if missing:
        raise KeyError(f"no {', '.join(missing)} in the evaluation")
    return err[list(privileged)].max(axis=1) / err[base]


def asymmetric_critic(frame: pd.DataFrame, privileged: tuple[str, ...] = ("B", "C")) -> float:
    """The median over seeds of :func:`critic_ratios` (the claim: <= 0.7)."""
    return float(np.median(critic_ratios(frame, privileged)))


def safe_and_useful(frame: pd.DataFrame, cost_limit: float, variant: str = "C") -> tuple[int, pd.DataFrame]:
    """The number of seeds where ``variant``'s evaluation cost <= d + 0.1 and its success >= 0.8, and its rows."""
    rows = frame[frame.variant == variant].sort_values("seed")
    ok = (rows.cost <= cost_limit + 0.1) & (rows.success >= 0.8)
    return int(ok.sum()), rows.assign(ok=ok)


def no_leakage(frame: pd.DataFrame) -> float:
    """The largest change of any agent's action logits under a random map."""
    return float(frame.leak.max())


def matched_cost(frame: pd.DataFrame, a: str = "A", c: str = "C", tolerance: float = 0.1) -> pd.DataFrame:
    """Per seed: C's and A's return and cost, the return difference, and whether their costs are within
    ``tolerance`` of each other (only then is the difference a return at matched cost)."""
    p = frame.pivot(index="seed", columns="variant", values=["return", "cost"])
    out = pd.DataFrame({
        f"return_{c}": p["return"][c], f"return_{a}": p["return"][a],
        f"cost_{c}": p["cost"][c], f"cost_{a}": p["cost"][a],
    })  # fmt: skip
    out["return_gap"] = out[f"return_{c}"] - out[f"return_{a}"]
    out["matched"] = (out[f"cost_{c}"] - out[f"cost_{a}"]).abs() <= tolerance
    return out.reset_index()
