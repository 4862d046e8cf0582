"""Shared by the hand-run benchmarks: timing, peak memory in a child process, the results file."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def timed(fn: Callable[[], object], repeat: int = 3) -> tuple[float, float]:
    """(median, min) wall seconds of ``fn`` over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def run_timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, repeat: int = 3) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def peak_rss_mb(code: str) -> float:
    """Peak resident memory (MiB) of a fresh interpreter running ``code`` (what it adds beyond imports shows
    when compared with a baseline run)."""
    wrapper = code + "\nimport resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    out = subprocess.run(
        [sys.executable, "-c", wrapper], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip().splitlines()[-1]) / 1024


def stage_times(slug: str, root: Path = ROOT) -> dict[str, float]:
    """Wall seconds of each stage's last run of ``slug`` in ``root`` (written by the runner under .dvc/tmp)."""
    folder = root / ".dvc" / "tmp" / "icml25-timing" / slug
    return {p.stem: json.loads(p.read_text())["wall_s"] for p in sorted(folder.glob("*.json"))}


def stage_times_text(times: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f} s" for k, v in times.items())


def load_text() -> str:
    """The load average when a benchmark starts (a busy machine slows every implementation alike)."""
    try:
        one, five, _ = os.getloadavg()
        return f"load average {one:.2f} (1 min), {five:.2f} (5 min) at the start"
    except OSError:
        return "load average unavailable"


def traced_peak_mib(fn: Callable[[], object]) -> float:
    """tracemalloc's peak (MiB) of the Python allocations while ``fn()`` runs."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def tensor_peak_mib(fn: Callable[[], object]) -> float:
    """Peak MiB of torch tensor memory live during ``fn()`` beyond what was live before it: the torch profiler's
    allocation events, summed in time order (tracemalloc does not see torch's allocator)."""
    from torch.profiler import ProfilerActivity, profile

    saved = os.dup(2)  # kineto prints start/stop lines on stderr
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                fn()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    events = sorted(
        (e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
        key=lambda e: e.start_ns(),
    )
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return peak / 2**20


def machine() -> str:
    return f"{os.cpu_count()} CPU cores, {platform.machine()}, Python {platform.python_version()}"


def write(name: str, columns: list[str], rows: list[dict], note: str = "") -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    doc = {
        "benchmark": name,
        "machine": machine(),
        "date": date.today().isoformat(),
        "columns": columns,
        "rows": rows,
        "note": note,
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))
    return path
