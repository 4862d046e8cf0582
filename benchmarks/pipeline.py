"""The framework's own costs (run by hand: python benchmarks/pipeline.py), against the issue's goals:

- `icml25 list` start-up (goal: under 1 s, no heavy imports);
- a no-op `dvc repro` in this checkout (goal: under 5 s) and a no-op `make repro`, Prefect server start
  included (goal: under 20 s); both need an up-to-date checkout;
- Prefect's overhead per executed stage (goal: under 1 s): a forced flow run of one paper (smoke profile, in a
  scratch copy) minus the time of its `dvc repro --single-item` subprocesses and its one `dvc status`;
- with ``--quick``: the quick profile of each implemented paper from scratch (fresh cache), by plain
  `dvc repro` (goal: under 3 minutes per paper; about 20 minutes in all).
- with ``--workers`` (only this part runs; the other rows of the file are kept): the quick profile of every
  implemented paper from scratch (a fresh scratch copy, empty DVC cache, every stage computed) by ``icml25 run
  all --workers N`` for N = 1 and 2, its wall time and the speed-up, and the overhead each worker adds: setting
  up its worktree (``git worktree``, the sync, the shared-cache config), linking what a paper needs from the
  shared cache (``setup_s``), its flow run's own start-up and outcome beyond the paper's stages (``flow_s -
  seconds``: the process worker's subprocess, the pull step, the state digest, writing the outcome), applying
  the outcome in the asking checkout (``apply_s``: lock entries, uncached outputs, ``dvc checkout``), and the
  share of the run each worker was busy. About an hour on 2 cores; the per-paper times go to the file's
  ``workers`` key.

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


WORKER_ROWS = "quick profile, every paper, "  # the rows the --workers part owns (their "what" starts so)


def _worker_run(n: int, tmp: Path) -> dict:
    """One `icml25 run all --workers n` of the quick profile from scratch; its wall time and summary."""
    import re

    from icml25.scratch import dvc_env, make_scratch

    work = make_scratch(ROOT, "quick", dest=tmp / f"workers-{n}")
    assert not (work / ".dvc" / "cache").exists()
    env = {k: v for k, v in dvc_env().items() if not k.startswith("PREFECT_")}
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "flows.cli", "run", "all", "--workers", str(n)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    text = out.stdout + out.stderr
    (tmp / f"workers-{n}.log").write_text(text)
    if out.returncode != 0:
        raise SystemExit(f"icml25 run all --workers {n} failed ({out.returncode}):\n{text[-3000:]}")
    status = subprocess.run(
        [sys.executable, "-m", "dvc", "status", "--json"], cwd=work, env=env, capture_output=True, text=True
    )
    summary = json.loads((work / "runs" / "last-parallel-run.json").read_text())
    trees = [float(x) for x in re.findall(r"worker checkout \S+ ready \(([\d.]+) s\)", text)]
    return {
        "workers": n,
        "wall_s": round(wall, 1),
        "clean": json.loads(status.stdout or "{}") == {},
        "worktree_s": trees,
        "summary": summary,
    }


def _worker_rows(runs: list[dict]) -> list[dict]:
    rows = []
    for r in runs:
        papers = r["summary"]["papers"]
        busy: dict[str, float] = {}
        for p in papers.values():
            busy[p["worker"]] = busy.get(p["worker"], 0.0) + (p["flow_s"] or 0.0)
        flow_extra = [p["flow_s"] - p["seconds"] for p in papers.values() if p["flow_s"] is not None]
        setup = [p["setup_s"] for p in papers.values()]
        apply = [p["apply_s"] for p in papers.values()]
        wt = r["worktree_s"]
        rows.append(
            {
                "what": f"{WORKER_ROWS}`icml25 run all --workers {r['workers']}` from scratch",
                "goal": "faster with 2 workers" if r["workers"] == 2 else "reference",
                "measured": f"{r['wall_s']:.0f} s wall ({len(papers)} papers; `dvc status` "
                + ("clean" if r["clean"] else "NOT clean")
                + " after)",
            }
        )
        rows.append(
            {
                "what": f"{WORKER_ROWS}overhead per worker, {r['workers']} worker(s)",
                "goal": "small against the papers' minutes",
                "measured": f"worktree set-up {statistics.mean(wt):.1f} s each; per paper: linking from the "
                f"shared cache {statistics.mean(setup):.1f} s, flow-run start-up and outcome "
                f"{statistics.mean(flow_extra):.1f} s, applying it here {statistics.mean(apply):.1f} s "
                f"(means over {len(papers)}); busy "
                + ", ".join(f"{w} {b / r['wall_s']:.0%}" for w, b in sorted(busy.items())),
            }
        )
    if len(runs) == 2:
        one, two = runs
        rows.append(
            {
                "what": f"{WORKER_ROWS}speed-up of 2 workers over 1 on {os.cpu_count()} cores",
                "goal": "> 1",
                "measured": f"{one['wall_s'] / two['wall_s']:.2f}x ({one['wall_s']:.0f} s -> {two['wall_s']:.0f} s)",
            }
        )
    return rows


def workers_main(counts: tuple[int, ...] = (1, 2)) -> None:
    from benchmarks._common import RESULTS, load_text

    load = load_text()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [_worker_run(n, Path(tmp)) for n in counts]
    path = RESULTS / "pipeline.json"
    old = json.loads(path.read_text()) if path.exists() else {"rows": [], "note": ""}
    rows = [r for r in old["rows"] if not r["what"].startswith(WORKER_ROWS)] + _worker_rows(runs)
    note = old.get("note", "").split(" Workers:")[0]
    note += (
        f" Workers: one run per worker count, each from an empty DVC cache; {load} of the first; the"
        " papers dispatched longest first (their last timing.json). Per-paper times under `workers`."
    )
    out = write("pipeline", ["what", "goal", "measured"], rows, note=note.strip())
    doc = json.loads(out.read_text())
    doc["workers"] = [{k: v for k, v in r.items()} for r in runs]
    out.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    if "--workers" in sys.argv:
        workers_main()
    elif len(sys.argv) == 4 and sys.argv[1] == "--overhead":
        os.chdir(ROOT)
        prefect_overhead(Path(sys.argv[2]), sys.argv[3])
    else:
        main(quick="--quick" in sys.argv)
