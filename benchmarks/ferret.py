"""Benchmark of ferret (run by hand: `python benchmarks/ferret.py`); writes benchmarks/results/ferret.json,
which the report renders. TODO: the method's speed and memory beside the issue's reference.

Until then it records the wall time of each stage of the last quick-profile run in this checkout."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import stage_times, write  # noqa: E402

if __name__ == "__main__":
    times = stage_times("ferret")
    write("ferret", ["stage", "seconds"], [{"stage": k, "seconds": v} for k, v in times.items()])
