"""Encode-Prefill-Decode disaggregation for multimodal serving (EPD): the controlled CPU reproduction.

Singh et al. ICML 2025. Official code: https://github.com/vbdi/epdserve (its simulator package is missing; ours
is a discrete-event simulation, models/epd_serving/). Nothing here runs a GPU: every gated number is
``simulated`` under a stated cost model (models/epd_serving/cost.py)::

    T_E = a_E + b_E tiles,   T_P = a_P + b_P sum L + c_P sum L^2,   T_D = a_D + b_D sum ctx + c_D batch   (ms)

with b_E calibrated on the official repository's committed PD run. SLO: TTFT < 1.4 s and TPOT < 0.04 s;
attainment = the share of requests meeting both; goodput = the rate at 90% attainment.

Stages: prepare (Poisson workloads per seed, coupled across rates; or a lifetime-events trace, which also
refits b_E) -> validate (GX) -> train (aggregated, PD, EPD with and without IRP on every point; the allocator's
search over (E, P, D)) -> evaluate (TTFT, TPOT, attainment, goodput, peak memory, sanity checks) -> report.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from icml25.registry import Paper
from models.epd_serving.cost import CostModel

#: Every constant of the cost model as an optional param (None: the preset's value).
Costs = dataclasses.make_dataclass(
    "Costs",
    [
        (f.name, float | None, field(default=None, metadata={"ge": 0.0}))
        for f in dataclasses.fields(CostModel)
    ],
    frozen=True,
)


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="poisson", metadata={"choices": ("poisson", "trace")})
    trace_file: str = "lifetime_events.json"  # data/epd_serving/input/<trace_file> (source: trace)
    trace_images: int = field(default=2, metadata={"ge": 1})  # images per request of the trace's requests
    rates: tuple[float, ...] = field(
        default=(0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0), metadata={"gt": 0.0}
    )
    images: tuple[int, ...] = field(default=(1, 2, 4), metadata={"ge": 1})
    requests: int = field(default=300, metadata={"ge": 1})
    seeds: int = field(default=3, metadata={"ge": 1})
    text_tokens: int = field(default=20, metadata={"ge": 0})
    output_tokens: int = field(default=10, metadata={"ge": 1})
    switch_rate: float = field(default=1.0, metadata={"gt": 0.0})  # the role-switching workload (report only)
    switch_images: tuple[int, ...] = field(default=(1, 4), metadata={"ge": 1})  # first half, second half
    cost: str = field(default="calibrated", metadata={"choices": ("calibrated", "illustrative")})
    costs: Costs = field(default_factory=Costs)  # type: ignore[valid-type]


@dataclass(frozen=True)
class Train:
    ttft_slo: float = field(default=1.4, metadata={"gt": 0.0})
    tpot_slo: float = field(default=0.04, metadata={"gt": 0.0})
    allocator_images: tuple[int, ...] = field(default=(1, 2, 4), metadata={"ge": 1})
    switch_start: tuple[int, ...] = field(default=(2, 3, 3), metadata={"ge": 1})  # (E, P, D) before switching
    switch_period: float = field(default=5.0, metadata={"gt": 0.0})
    switch_migration: float = field(default=0.3, metadata={"ge": 0.0})
    workers: int = field(default=2, metadata={"ge": 1})


PAPER = Paper(
    slug="epd_serving",
    citation="Singh et al. *Encode-Prefill-Decode disaggregation for LMM serving*. ICML 2025.",
    url="https://github.com/vbdi/epdserve",
    schema={"prepare": Prepare, "train": Train},
)
