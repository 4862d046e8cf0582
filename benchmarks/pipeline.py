"""The framework's own costs (run by hand: python benchmarks/pipeline.py), against the issue's goals:

- `icml25 list` start-up (goal: under 1 s, no heavy imports);
- a no-op `dvc repro` in this checkout (goal: under 5 s) and a no-op `make repro`, Prefect server start
  included (goal: under 20 s); both need an up-to-date checkout;
- Prefect's overhead per executed stage (goal: under 1 s): a forced flow run of one paper (smoke profile, in a
  scratch copy) minus the time of its `dvc repro --single-item` subprocesses and its one `dvc status`;
- with ``--quick``: the quick profile of each implemented paper from scratch (fresh cache), by plain
  `dvc repro` (goal: under 3 minutes per paper; about 20 minutes in all).

Writes benchmarks/results/pipeline.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, run_timed, stage_times, stage_times_text, write  # noqa: E402


def prefect_overhead(work: Path, slug: str) -> None:
    """Child mode: PREFECT_API_URL is set; time a forced flow run and its DVC subprocesses."""
    import flows.reproduce as fr

    spent: list[float] = []

    def timing(fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent.append(time.perf_counter() - start)

        return wrapper

    fr.repro, fr.plan = timing(fr.repro), timing(fr.plan)
    start = time.perf_counter()
    fr.reproduce_paper(slug, force=True, root=str(work))
    total = time.perf_counter() - start
    n = len(spent) - 1
    print(
        json.dumps(
            {"total_s": total, "dvc_s": sum(spent), "stages": n, "per_stage_s": (total - sum(spent)) / n}
        )
    )


def main(quick: bool = False) -> None:
    from flows.server import prefect_env, prefect_server
    from icml25.params import implemented, load_params
    from icml25.scratch import dvc_env, make_scratch

    env = dvc_env()
    rows = []
    t = run_timed([sys.executable, "-m", "flows.cli", "list"], ROOT, env, repeat=5)
    rows.append(
        {"what": "`icml25 list` start-up", "goal": "< 1 s", "measured": f"{statistics.median(t):.2f} s"}
    )
    t = run_timed([sys.executable, "-m", "dvc", "repro"], ROOT, env, repeat=3)
    rows.append({"what": "no-op `dvc repro`", "goal": "< 5 s", "measured": f"{statistics.median(t):.2f} s"})
    t = run_timed(["make", "repro"], ROOT, env, repeat=2)
    rows.append(
        {
            "what": "no-op `make repro` (server start included)",
            "goal": "< 20 s",
            "measured": f"{statistics.median(t):.1f} s",
        }
    )

    slugs = implemented(load_params(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        smoke = make_scratch(ROOT, "smoke", dest=Path(tmp) / "smoke", papers=slugs[:1])
        subprocess.run(
            [sys.executable, "-m", "dvc", "repro"], cwd=smoke, env=env, check=True, capture_output=True
        )
        home = Path(tmp) / "prefect"
        with prefect_server(home) as url:
            out = subprocess.run(
                [sys.executable, __file__, "--overhead", str(smoke), slugs[0]],
                cwd=ROOT,
                env=prefect_env(home, url),
                check=True,
                capture_output=True,
                text=True,
            )
        o = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(
            {
                "what": f"Prefect overhead per executed stage ({o['stages']} stages of {slugs[0]}, forced)",
                "goal": "< 1 s",
                "measured": f"{o['per_stage_s']:.2f} s",
            }
        )
        for slug in slugs if quick else []:
            quick_repo = make_scratch(ROOT, "quick", dest=Path(tmp) / f"quick-{slug}", papers=[slug])
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "dvc", "repro"],
                cwd=quick_repo,
                env=env,
                check=True,
                capture_output=True,
            )
            wall = time.perf_counter() - start
            detail = stage_times_text(stage_times(slug, quick_repo))
            rows.append(
                {
                    "what": f"quick profile of {slug} from scratch (`dvc repro`)",
                    "goal": "< 180 s",
                    "measured": f"{wall:.0f} s ({detail})",
                }
            )
    write(
        "pipeline",
        ["what", "goal", "measured"],
        rows,
        note="Two cores, one run each unless noted (medians of 5, 3, 2 runs for the first three rows).",
    )


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--overhead":
        os.chdir(ROOT)
        prefect_overhead(Path(sys.argv[2]), sys.argv[3])
    else:
        main(quick="--quick" in sys.argv)
