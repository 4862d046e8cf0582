"""The Python entry: :func:`simulate` runs federated methods on the digits or a user's table and returns the
per-round history; :class:`~models.ferret.codec.FerretCodec` is the codec for any torch training loop."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from icml25.errors import UserError

from .data import FedData, digits, federate, from_csv
from .federated import Config, method, run

DEFAULT_METHODS = ("ferret", "fedavg", "zo")


def check(
    *,
    methods: Sequence[str],
    clients: int,
    per_round: int,
    rounds: int,
    K: int,
    alpha: float,
    seeds: str,
) -> None:
    """Bad settings -> :class:`UserError` naming the value."""
    if K < 2:
        raise UserError(f"K = {K}: Ferret needs at least 2 candidate seeds per block")
    if clients < 1:
        raise UserError(f"clients = {clients}: must be >= 1")
    if not 1 <= per_round <= clients:
        raise UserError(f"per-round = {per_round}: must be between 1 and the {clients} clients")
    if not (alpha > 0 and math.isfinite(alpha)):
        raise UserError(f"alpha = {alpha}: the Dirichlet concentration must be a finite number > 0")
    if rounds < 1:
        raise UserError(f"rounds = {rounds}: must be >= 1")
    if seeds not in ("fresh", "fixed"):
        raise UserError(f"seeds {seeds!r}: expected fresh or fixed")
    if not methods:
        raise UserError("methods: none given")
    for m in methods:
        try:
            method(m, K, seeds)
        except ValueError as exc:
            raise UserError(str(exc)) from None


def load(
    data: str | Path | None, target: str | None, clients: int, alpha: float, seed: int, test_fraction: float
) -> FedData:
    """The digits (``data`` None) or a CSV with a ``target`` column, split and partitioned."""
    from icml25.random import rng

    if data is None:
        x, y, _ = digits()
        scale = False
    else:
        if not target:
            raise UserError(f"{data}: name the target column (--target)")
        x, y, _ = from_csv(data, target)
        scale = True
    n_test = round(test_fraction * len(y))
    return federate(x, y, n_test=n_test, clients=clients, alpha=alpha, g=rng(seed, "data"), scale=scale)


def simulate(
    data: str | Path | FedData | None = None,
    target: str | None = None,
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    clients: int = 20,
    per_round: int = 5,
    rounds: int = 80,
    K: int = 64,
    alpha: float = 0.5,
    seeds: str = "fresh",
    seed: int = 0,
    test_fraction: float = 0.221,
    config: Config | None = None,
    progress: Callable[[str, int, dict], None] | None = None,
) -> pd.DataFrame:
    """Run each method for ``rounds`` rounds (``per_round`` of ``clients`` clients, a Dirichlet(``alpha``) label
    split; Ferret with ``K`` candidate seeds per block, ``seeds`` fresh or fixed) from the same initial weights,
    selections and minibatches; one row per method and round: accuracy, loss, uplink (mean scalars per client),
    cumulative uplink, Ferret's single-round reconstruction error, seconds."""
    check(methods=methods, clients=clients, per_round=per_round, rounds=rounds, K=K, alpha=alpha, seeds=seeds)
    if target is not None and data is None:
        raise UserError(f"target {target!r}: give the data (a CSV) it names a column of")
    fed = data if isinstance(data, FedData) else load(data, target, clients, alpha, seed, test_fraction)
    if per_round > fed.clients:
        raise UserError(f"per-round = {per_round}: the data has {fed.clients} clients")
    cfg = replace(config or Config(), rounds=rounds, per_round=per_round)
    frames = []
    for name in methods:
        report = None if progress is None else (lambda r, row, name=name: progress(name, r, row))
        rows, _ = run(fed, method(name, K, seeds), cfg, seed, progress=report)
        frame = pd.DataFrame(rows).assign(method=name, seed=seed)
        frame["cumulative_uplink"] = frame.uplink.cumsum()
        frames.append(frame)
    cols = [
        "method",
        "seed",
        "round",
        "accuracy",
        "loss",
        "uplink",
        "cumulative_uplink",
        "recon_error",
        "seconds",
    ]
    return pd.concat(frames, ignore_index=True)[cols]
