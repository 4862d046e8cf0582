"""EPD disaggregation for multimodal serving (Singh et al., ICML 2025): a discrete-event simulation.

- :mod:`.cost`: the cost and memory model (calibrated and illustrative constants).
- :mod:`.workload`: Poisson workloads coupled across rates; the lifetime-events trace reader.
- :mod:`.engine`: the heapq event loop, FIFO servers, memory accounting.
- :mod:`.systems`: aggregated, PD and EPD (with and without intra-request parallelism).
- :mod:`.experiment`, :mod:`.evaluation`: the reproduction's grid, goodput, the allocator, the sanity checks.
- :mod:`.api`: ``simulate``, ``summary``, ``best_allocation`` (the user entry); :mod:`.cli`: ``icml25 epd_serving``.
"""

from .api import best_allocation, summary
from .cost import CostModel, cost_model
from .systems import simulate
from .workload import Workload

__all__ = ["CostModel", "Workload", "best_allocation", "cost_model", "simulate", "summary"]
