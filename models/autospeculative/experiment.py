"""The controlled experiment: per model and K, the sequential sampler and ASD arms (each from its own random
stream, so the two-sample tests compare independent draws), their call counts, and the tests of ASD against the
sequential sampler; then the claims' numbers.

Arms (``variant``): ``sequential``; ``asd`` (the method, frozen mean ``stale``); ``fresh`` (``frozen_mean="fresh"``,
one more call per round); ``draft_only`` (accepts every draft: the ablation that must fail); ``model_drafts`` (a
drafter that calls the model per draft: a stub). Speed-up = the sequential sampler's calls (K + 1) / the arm's
mean calls per chain.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from icml25 import random

from .samplers import Denoiser, Result, asd, sequential
from .stats import permutation_test

VARIANTS = ("sequential", "asd", "fresh", "draft_only", "model_drafts")


@dataclass(frozen=True)
class Model:
    name: str
    denoiser: Denoiser
    start: Callable[[int, float, np.random.Generator], np.ndarray]  # (n, t0, rng) -> y0 (n, d)


def run_arm(model: Model, t: np.ndarray, variant: str, L: int, n: int, seed: int) -> Result:
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: must be one of {', '.join(VARIANTS)}")
    K = len(t) - 1
    rng = random.rng(seed, "arm", model.name, K, variant, L)  # each arm its own stream
    y0 = model.start(n, float(t[0]), rng)
    if variant == "sequential":
        return sequential(model.denoiser, t, y0, rng)
    return asd(
        model.denoiser,
        t,
        y0,
        L,
        rng,
        frozen_mean="fresh" if variant == "fresh" else "stale",
        draft_only=variant == "draft_only",
        model_drafts=variant == "model_drafts",
    )


def row(model: str, K: int, L: int, variant: str, res: Result) -> dict:
    return {
        "model": model,
        "K": K,
        "L": L,
        "variant": variant,
        "n": len(res.calls),
        "calls": float(res.calls.mean()),
        "calls_max": int(res.calls.max()),
        "evaluations": float(res.evaluations.mean()),
        "rounds": float(res.rounds.mean()),
        "speedup": (K + 1) / float(res.calls.mean()),
        "acceptance": float(res.accepted.sum() / max(res.judged.sum(), 1)),
    }


def test_row(model: str, K: int, variant: str, x: np.ndarray, ref: np.ndarray, permutations: int, seed: int):
    energy, p = permutation_test(x, ref, permutations, seed=random.seed_for(seed, "perm", model, K, variant))
    return {"model": model, "K": K, "variant": variant, "against": "sequential", "energy": energy, "p": p}


def slope(Ks: list[int], calls: list[float]) -> float:
    """Least-squares slope of log(calls) on log(K)."""
    if len(Ks) < 2:
        return math.nan
    return float(np.polyfit(np.log(Ks), np.log(calls), 1)[0])


def claims(table, tests, K_big: int) -> dict:
    """The four gated numbers from the table of arms and the table of tests (pandas frames), where:

    - ``calls_over_K``: mean calls / K of ASD (L = K) on the mixture at K = ``K_big``;
    - ``rounds_slope``: slope of log mean calls on log K, ASD (L = K) on the mixture over its Ks;
    - ``bonferroni_p``: (number of tests) x the smallest p of ASD against sequential (every model and K);
    - ``draft_only_energy``: energy distance of draft-only (L = K) against sequential, mixture, K = ``K_big``.
    NaN where the arm did not run."""
    gmm = table[(table.model == "gmm") & (table.variant == "asd") & (table.L == table.K)].sort_values("K")
    big = gmm[gmm.K == K_big]
    mine = tests[tests.variant == "asd"]
    draft = tests[(tests.model == "gmm") & (tests.variant == "draft_only") & (tests.K == K_big)]
    return {
        "calls_over_K": float(big.calls.iloc[0] / K_big) if len(big) else math.nan,
        "calls_at_K": float(big.calls.iloc[0]) if len(big) else math.nan,
        "rounds_slope": slope(list(gmm.K), list(gmm.calls)),
        "slope_Ks": [int(k) for k in gmm.K],
        "tests": len(mine),
        "min_p": float(mine.p.min()) if len(mine) else math.nan,
        "min_p_at": f"{mine.loc[mine.p.idxmin(), 'model']}, K = {int(mine.loc[mine.p.idxmin(), 'K'])}"
        if len(mine)
        else "",
        "bonferroni_p": float(len(mine) * mine.p.min()) if len(mine) else math.nan,
        "draft_only_energy": float(draft.energy.iloc[0]) if len(draft) else math.nan,
        "draft_only_p": float(draft.p.iloc[0]) if len(draft) else math.nan,
    }
