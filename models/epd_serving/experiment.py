"""The reproduction's grid: every system on every (seed, rate, images) workload, and the allocator's search.

``SYSTEMS``: ``aggregated`` (8 GPUs), ``pd`` (7 + 1), ``epd`` (6, 1, 1) with IRP and ``epd_noirp`` without.
Per run, :func:`run_system` returns the per-request records and the per-GPU peak memory; the allocator runs
EPD + IRP for every (E, P, D) with E + P + D = 8 and each >= 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .cost import CostModel
from .systems import simulate
from .workload import Workload

#: name -> (system, gpus, irp)
SYSTEMS: dict[str, tuple[str, tuple[int, ...], bool]] = {
    "aggregated": ("aggregated", (8,), False),
    "pd": ("pd", (7, 1), False),
    "epd": ("epd", (6, 1, 1), True),
    "epd_noirp": ("epd", (6, 1, 1), False),
}


def allocations(gpus: int = 8) -> list[tuple[int, int, int]]:
    """Every (E, P, D) with E + P + D = gpus and each >= 1, in lexicographic order."""
    return [(e, p, gpus - e - p) for e in range(1, gpus - 1) for p in range(1, gpus - e)]


@dataclass(frozen=True)
class Point:
    seed: int
    rate: float
    images: int


def run_system(
    name: str, workload: Workload, cost: CostModel, gpus: tuple[int, ...] | None = None, **options: Any
) -> tuple[dict[str, np.ndarray], list[dict[str, Any]], int]:
    """One system on one workload: (per-request columns, per-GPU peaks as rows, events)."""
    system, default_gpus, irp = SYSTEMS[name]
    res = simulate(system, workload, cost, gpus or default_gpus, irp, **options)
    peaks = [
        {"role": role, "gpu": i, "peak_gb": p} for role, ps in res.peaks.items() for i, p in enumerate(ps)
    ]
    return res.table(), peaks, res.events


def attainment(ttft: np.ndarray, tpot: np.ndarray, ttft_slo: float, tpot_slo: float) -> float:
    """The share of requests that meet both SLOs (TTFT < ttft_slo and TPOT < tpot_slo)."""
    return float(np.mean((ttft < ttft_slo) & (tpot < tpot_slo))) if len(ttft) else float("nan")


def ttft_tpot(t: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ttft = t["first_token"] - t["arrival"]
    tpot = np.where(t["output"] > 1, (t["finish"] - t["first_token"]) / np.maximum(t["output"] - 1, 1), 0.0)
    return ttft, tpot


def goodput(rates: list[float], att: list[float], level: float = 0.9) -> tuple[float, str]:
    """The rate at which attainment falls to ``level``, by linear interpolation between the grid's rates;
    ``(0, "below")`` when the lowest rate already misses it, ``(max rate, "at least")`` when no rate does."""
    r, a = np.asarray(rates, float), np.asarray(att, float)
    order = np.argsort(r)
    r, a = r[order], a[order]
    below = np.flatnonzero(a < level)
    if len(below) == 0:
        return float(r[-1]), "at least"
    k = int(below[0])
    if k == 0:
        return 0.0, "below"
    r0, r1, a0, a1 = r[k - 1], r[k], a[k - 1], a[k]
    return float(r0 + (a0 - level) * (r1 - r0) / (a0 - a1)), "interpolated"


def allocator_run(args: tuple) -> list[dict[str, Any]]:
    """Attainment of EPD + IRP for every allocation on one workload (a task of the train stage)."""
    point, workload, cost, ttft_slo, tpot_slo = args
    rows = []
    for alloc in allocations():
        res = simulate("epd", workload, cost, alloc, True)
        ttft, tpot = ttft_tpot(res.table())
        rows.append(
            {
                "seed": point.seed,
                "rate": point.rate,
                "images": point.images,
                "E": alloc[0],
                "P": alloc[1],
                "D": alloc[2],
                "attainment": attainment(ttft, tpot, ttft_slo, tpot_slo),
                "ttft_mean": float(ttft.mean()),
            }
        )
    return rows


def run_point(args: tuple) -> dict[str, list[dict[str, Any]]]:
    """Every system on one workload (a task of the train stage): per-request rows, per-GPU peaks, and with
    ``allocate`` the allocator's rows. ``epd_options`` reach both EPD systems (the tests' broken variants)."""
    point, workload, cost, ttft_slo, tpot_slo, allocate, epd_options = args
    requests, memory = [], []
    key = {"seed": point.seed, "rate": point.rate, "images": point.images}
    for name in SYSTEMS:
        options = epd_options if name.startswith("epd") else {}
        t, peaks, _ = run_system(name, workload, cost, **options)
        n = len(t["arrival"])
        cols = {k: v.tolist() for k, v in t.items()}
        requests += [{"system": name, **key, "request": i, **{k: cols[k][i] for k in cols}} for i in range(n)]
        memory += [{"system": name, **key, **p} for p in peaks]
    rows = allocator_run((point, workload, cost, ttft_slo, tpot_slo)) if allocate else []
    return {"requests": requests, "memory": memory, "allocator": rows}


def switching_run(args: tuple) -> dict[str, list[dict[str, Any]]]:
    """EPD + IRP on a workload whose image count changes mid-run, from allocation ``start``, static and with
    runtime role switching (:class:`~.systems.Switching`): attainment and mean TTFT per phase (the requests
    before and after the change), and the role counts over time of the switching run."""
    from .systems import Switching

    seed, workload, cost, start, period, migration, ttft_slo, tpot_slo = args
    change = np.flatnonzero(workload.images != workload.images[0])
    cut = int(change[0]) if len(change) else len(workload)
    phase = np.where(np.arange(len(workload)) < cut, 1, 2)
    rows, roles = [], []
    for mode, policy in (("static", None), ("switching", Switching(period, migration))):
        res = simulate("epd", workload, cost, start, True, switching=policy)
        ttft, tpot = ttft_tpot(res.table())
        for k in (1, 2):
            sel = phase == k
            rows.append(
                {
                    "seed": seed,
                    "mode": mode,
                    "phase": k,
                    "images": int(workload.images[sel][0]) if sel.any() else 0,
                    "attainment": attainment(ttft[sel], tpot[sel], ttft_slo, tpot_slo),
                    "ttft_mean": float(ttft[sel].mean()) if sel.any() else float("nan"),
                    "switches": len(res.roles) - 1,
                }
            )
        if policy is not None:
            roles = [{"seed": seed, "time": t, "E": e, "P": p, "D": d} for t, e, p, d in res.roles]
    return {"rows": rows, "roles": roles}
