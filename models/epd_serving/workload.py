"""Workloads: requests with an arrival time, a number of images, text and output tokens.

Poisson arrivals are *coupled across rates*: one stream of unit exponentials E_1, E_2, ... per seed, and the
arrivals at rate lambda are the partial sums of E_i / lambda. So the same seed at two rates gives the same
requests in the same order, only compressed in time: attainment can then only fall with the rate up to the
simulation's own dynamics, and a comparison across rates is not blurred by different draws.

A trace in the official repository's lifetime-events layout (a JSON list with one list of
``{"timestamp", "event_type"}`` per request; event types ``issued``, ..., ``context_begin``, ``context_end``,
..., ``finished``) replays its ``issued`` times (relative to the first) and gives the durations of its context
stages (``context_end - context_begin``), from which :func:`models.epd_serving.cost.calibrate_b_E` refits b_E.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Workload:
    """Requests as arrays: ``arrivals`` (s, non-decreasing), ``images`` (>= 1), ``text`` and ``output`` tokens."""

    arrivals: np.ndarray
    images: np.ndarray
    text: np.ndarray
    output: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.arrivals)
        if n and not np.all(np.isfinite(self.arrivals)):
            i = int(np.flatnonzero(~np.isfinite(self.arrivals))[0])
            raise ValueError(f"workload: arrival {i} is {self.arrivals[i]}, not a finite time")
        for name in ("images", "text", "output"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"workload: {name} has {len(getattr(self, name))} entries, arrivals {n}")
        if n and np.any(np.diff(self.arrivals) < 0):
            i = int(np.flatnonzero(np.diff(self.arrivals) < 0)[0]) + 1
            raise ValueError(f"workload: arrival {i} ({self.arrivals[i]}) is before arrival {i - 1}")
        if n and (self.images.min() < 1 or self.output.min() < 1 or self.text.min() < 0):
            raise ValueError(
                "workload: every request needs >= 1 image, >= 1 output token and >= 0 text tokens"
            )

    def __len__(self) -> int:
        return len(self.arrivals)

    @classmethod
    def poisson(
        cls,
        rate: float,
        n: int,
        images: int,
        seed_rng: np.random.Generator,
        text: int = 20,
        output: int = 10,
    ) -> Workload:
        """``n`` requests at ``rate`` req/s from the unit exponentials of ``seed_rng`` (coupled across rates:
        pass a fresh generator on the same stream for every rate)."""
        if not rate > 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        if images < 1:
            raise ValueError(f"images must be >= 1, got {images}")
        gaps = seed_rng.standard_exponential(n)
        return cls(
            np.cumsum(gaps) / rate,
            np.full(n, images, dtype=int),
            np.full(n, text, dtype=int),
            np.full(n, output, dtype=int),
        )

    @classmethod
    def replay(cls, arrivals: np.ndarray, images: int, text: int = 20, output: int = 10) -> Workload:
        a = np.asarray(arrivals, dtype=float)
        n = len(a)
        return cls(
            a, np.full(n, images, dtype=int), np.full(n, text, dtype=int), np.full(n, output, dtype=int)
        )


@dataclass(frozen=True)
class Trace:
    """What a lifetime-events trace gives: arrival times (s, from 0) and context-stage durations (s)."""

    arrivals: np.ndarray
    context: np.ndarray


def read_trace(path: str | Path) -> Trace:
    """Parse a lifetime-events JSON file; ValueError naming the file and the problem."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON trace ({str(exc).splitlines()[0]})") from None
    if not isinstance(doc, list) or not doc:
        raise ValueError(f"{path}: expected a non-empty JSON list of requests")
    issued, context = [], []
    for i, events in enumerate(doc):
        if not isinstance(events, list):
            raise ValueError(f"{path}: request {i} is not a list of events")
        times: dict[str, float] = {}
        for e in events:
            if not isinstance(e, dict) or "timestamp" not in e or "event_type" not in e:
                raise ValueError(f"{path}: request {i} has an event without timestamp and event_type")
            try:
                times.setdefault(str(e["event_type"]), float(e["timestamp"]))
            except (TypeError, ValueError):
                raise ValueError(
                    f"{path}: request {i}: timestamp {e['timestamp']!r} is not a number"
                ) from None
        if "issued" not in times:
            raise ValueError(f"{path}: request {i} has no 'issued' event")
        issued.append(times["issued"])
        if "context_begin" in times and "context_end" in times:
            context.append(times["context_end"] - times["context_begin"])
    a = np.asarray(issued)
    bad = np.flatnonzero(np.diff(a) < 0)
    if len(bad):
        i = int(bad[0]) + 1
        raise ValueError(f"{path}: timestamps decrease at request {i} ({a[i]} after {a[i - 1]})")
    return Trace(a - a[0], np.asarray(context))
