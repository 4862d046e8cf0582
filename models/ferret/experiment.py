"""The experiment's numbers: the Monte Carlo check of the unbiased reconstruction, the per-method summary of the
runs' histories, and the claims' values (what evaluate writes and the report reads)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from icml25.random import rng, seed_for
from models.common.threads import one_thread

from .codec import FerretCodec


def reconstruction_bias(
    d: int = 256, k: int = 32, reps: int = 4000, scaling: str = "paper", seed: int = 0, K: int = 64
) -> float:
    """|mean of ``reps`` independent reconstructions - Delta| / |Delta| for one block of ``d`` entries, K_l = k of
    K candidates, a fresh round seed and client seed per repetition; Delta ~ N(0, I) from the seed's stream.
    The paper's scaling is unbiased (the error shrinks as sqrt(d / (k reps))); the code's is about Delta / 3
    (error about 2/3)."""
    codec = FerretCodec([d], K=K, scaling=scaling)
    delta = torch.as_tensor(rng(seed, "bias-delta", d).standard_normal(d), dtype=torch.float32)
    total = torch.zeros(d, dtype=torch.float64)
    with one_thread():
        for r in range(reps):
            rs = seed_for(seed, "bias-round", r)
            msg = codec.encode([delta], rs, seed_for(seed, "bias-client", r), ks=[k])
            total += codec.decode([msg], rs)[0].double()
    return float((total / reps - delta.double()).norm() / delta.double().norm())


def rounds_to(acc: np.ndarray, target: float) -> float:
    """The first round (1-based) at which the accuracy reaches ``target``, NaN if never."""
    hit = np.flatnonzero(np.asarray(acc) >= target)
    return float(hit[0] + 1) if len(hit) else math.nan


def finals(history: pd.DataFrame, target: float = 0.9) -> pd.DataFrame:
    """One row per (method, seed): the last round's accuracy, the mean uplink per client and round, the rounds to
    reach ``target``, the cumulative uplink."""
    rows = []
    for (m, s), g in history.groupby(["method", "seed"], sort=True):
        g = g.sort_values("round")
        rows.append(
            {
                "method": m,
                "seed": int(s),
                "rounds": int(g["round"].max()),
                "accuracy": float(g.accuracy.iloc[-1]),
                "uplink": float(g.uplink.mean()),
                "cumulative_uplink": float(g.uplink.sum()),
                "rounds_to_target": rounds_to(g.accuracy.to_numpy(), target),
                "recon_error": float(g.recon_error.mean()) if g.recon_error.notna().any() else math.nan,
                "seconds_per_round": float(g.seconds.mean()),
            }
        )
    return pd.DataFrame(rows)


def table(history: pd.DataFrame, dim: int, target: float = 0.9) -> pd.DataFrame:
    """Per method: mean and standard deviation of the final accuracy over seeds, uplink (and / d), rounds to
    ``target`` (mean over the seeds that reached it, and how many did)."""
    f = finals(history, target)
    rows = []
    for m, g in f.groupby("method", sort=False):
        reached = g["rounds_to_target"].dropna()
        rows.append(
            {
                "method": m,
                "seeds": len(g),
                "accuracy": float(g.accuracy.mean()),
                "accuracy_sd": float(g.accuracy.std(ddof=1)) if len(g) > 1 else math.nan,
                "uplink": float(g.uplink.mean()),
                "uplink_over_d": float(g.uplink.mean()) / dim,
                "rounds_to_target": float(reached.mean()) if len(reached) else math.nan,
                "reached_target": int(len(reached)),
                "recon_error": float(g.recon_error.mean()),
                "seconds_per_round": float(g.seconds_per_round.mean()),
            }
        )
    return pd.DataFrame(rows)


def paired_gap(history: pd.DataFrame, a: str, b: str) -> tuple[float, float, int]:
    """Mean and minimum over the seeds both methods ran of final acc(a) - acc(b), and the number of seeds."""
    f = finals(history).pivot(index="seed", columns="method", values="accuracy")
    if a not in f or b not in f:
        return math.nan, math.nan, 0
    diff = (f[a] - f[b]).dropna()
    if diff.empty:
        return math.nan, math.nan, 0
    return float(diff.mean()), float(diff.min()), int(len(diff))


def claims(history: pd.DataFrame, dim: int, bias: dict[str, float]) -> dict:
    """The claims' numbers: Ferret against FedAvg and the zeroth-order baseline (mean paired gaps), Ferret's
    uplink / d, and the reconstruction bias under each scaling."""
    near, near_min, n = paired_gap(history, "ferret", "fedavg")
    beats, beats_min, _ = paired_gap(history, "ferret", "zo")
    f = finals(history)
    fer = f[f.method == "ferret"]
    return {
        "dim": int(dim),
        "seeds": n,
        "near_fedavg": near,
        "near_fedavg_min": near_min,
        "beats_zo": beats,
        "beats_zo_min": beats_min,
        "uplink_ferret": float(fer.uplink.mean()) if len(fer) else math.nan,
        "uplink_over_d": float(fer.uplink.mean()) / dim if len(fer) else math.nan,
        "bias_paper": bias.get("paper", math.nan),
        "bias_code": bias.get("code", math.nan),
    }
