"""The Python entry: the cost model, workloads, one simulation, and the allocator's search.

>>> from models.epd_serving import CostModel, Workload, simulate, best_allocation
>>> w = Workload.poisson(rate=0.5, n=300, images=2, seed_rng=numpy.random.default_rng(0))
>>> res = simulate("epd", w, CostModel(), gpus=(6, 1, 1), irp=True)
>>> summary(res)                       # TTFT, TPOT, attainment, peak memory by role
>>> best_allocation(images=2)[-1]      # every (E, P, D) ranked by goodput, the best last
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cost import CostModel
from .experiment import allocations, attainment, goodput, ttft_tpot
from .systems import Result, simulate
from .workload import Workload


def summary(res: Result, ttft_slo: float = 1.4, tpot_slo: float = 0.04) -> dict[str, Any]:
    """Mean and P90 TTFT, mean TPOT, attainment and the peak memory (GB) of each role's fullest GPU."""
    t = res.table()
    ttft, tpot = ttft_tpot(t)
    return {
        "requests": len(ttft),
        "ttft_mean": float(np.mean(ttft)),
        "ttft_p90": float(np.quantile(ttft, 0.9)),
        "tpot_mean": float(np.mean(tpot)),
        "attainment": attainment(ttft, tpot, ttft_slo, tpot_slo),
        "peak_gb": {role: float(max(p)) for role, p in res.peaks.items()},
    }


def best_allocation(
    images: int,
    rates: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0),
    gpus: int = 8,
    requests: int = 300,
    seed: int = 0,
    cost: CostModel | None = None,
    ttft_slo: float = 1.4,
    tpot_slo: float = 0.04,
) -> list[dict[str, Any]]:
    """Goodput of EPD + IRP for every (E, P, D) with E + P + D = ``gpus`` (each >= 1) on Poisson workloads at
    ``rates`` (coupled: one stream of seed ``seed``), ranked worst to best (ties: by mean attainment over the
    rates, then fewer encoders)."""
    if gpus < 3:
        raise ValueError(f"gpus must be >= 3 (one per role), got {gpus}")
    if images < 1:
        raise ValueError(f"images must be >= 1, got {images}")
    if not rates or min(rates) <= 0:
        raise ValueError(f"rates must be > 0, got {list(rates)}")
    cost = cost or CostModel()
    rows = []
    for alloc in allocations(gpus):
        att = []
        for rate in rates:
            w = Workload.poisson(rate, requests, images, np.random.default_rng(seed))
            ttft, tpot = ttft_tpot(simulate("epd", w, cost, alloc, True).table())
            att.append(attainment(ttft, tpot, ttft_slo, tpot_slo))
        value, how = goodput(list(rates), att)
        rows.append(
            {"E": alloc[0], "P": alloc[1], "D": alloc[2], "goodput": value, "how": how, "attainment": att}
        )
    return sorted(rows, key=lambda r: (r["goodput"], float(np.mean(r["attainment"])), -r["E"], -r["P"]))
