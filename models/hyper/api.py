"""The user entry: a sweep over agents, betas and seeds on one environment, as a DataFrame.

    from models.hyper import sweep
    df = sweep("grid", ["hyper", "decouple", "curiosity"], [0.01, 0.1, 1, 10, 100], seeds=10, episodes=2000, p=0.1)

Bad input raises :class:`~icml25.errors.UserError` with one line naming the value."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from icml25.errors import UserError

from .agents import AGENTS, parse, runs_of
from .agents import sweep as run_sweep
from .mdp import make


def check(
    env: str, agents: Sequence[str], betas: Sequence[float], seeds: int, episodes: int, p: float
) -> None:
    if not env:
        raise UserError("no environment (grid, grid-trap or a gymnasium toy-text id)")
    if not agents:
        raise UserError("no agents")
    for a in agents:
        if a not in AGENTS:
            raise UserError(f"unknown agent {a!r} (choose from {', '.join(AGENTS)})")
    if not betas:
        raise UserError("no betas")
    for b in betas:
        if not b > 0:
            raise UserError(f"beta = {b}: must be > 0")
    if seeds < 1:
        raise UserError(f"seeds = {seeds}: need at least 1")
    if episodes < 1:
        raise UserError(f"episodes = {episodes}: need at least 1")
    if not 0 < p <= 1:
        raise UserError(f"p = {p}: must lie in (0, 1]")


def sweep(
    env: str,
    agents: Sequence[str] = ("hyper", "decouple", "curiosity"),
    betas: Sequence[float] = (0.01, 0.1, 1.0, 10.0, 100.0),
    seeds: int = 10,
    episodes: int = 2000,
    p: float = 0.1,
    p_rep: float = 1.0,
    every: int | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Train every (agent, beta, seed) on ``env`` (``grid``, ``grid-trap`` or a gymnasium toy-text id) in one
    batch; one row per run and evaluation: episode, agent, beta, seed, success, return."""
    check(env, agents, betas, seeds, episodes, p)
    for a in agents:
        parse(a)
    try:
        mdp = make(env)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    rows = run_sweep(
        mdp,
        runs_of(list(agents), [float(b) for b in betas], seeds),
        episodes,
        p=p,
        p_rep=p_rep,
        every=every or episodes,
        master=seed,
    )
    return pd.DataFrame(rows)
