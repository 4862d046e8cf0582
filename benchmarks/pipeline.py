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

- with ``--scratch [--keep DIR]`` (only this part runs; the other rows are kept): the quick profile of every
  paper from scratch (a scratch copy: no DVC outputs, an empty cache, no Prefect database) by ``icml25 run all``,
  and where its time went (:func:`breakdown`): per paper and stage the stage's own work (its ``run``: the
  papers' compute) against the framework's (interpreter start-up and imports, the code fingerprints, DVC's
  bookkeeping, Prefect, the server start and the plan), from the stage records under .dvc/tmp. ``--before``
  analyses the records this checkout's last full run left instead (nothing runs). The results go under the
  file's ``scratch`` key, each run under its label (``--label``, default the commit).

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
from icml25.progress import FOLDER  # noqa: E402


def prefect_overhead(work: Path, slug: str) -> None:
    """Child mode: PREFECT_API_URL is set; time a forced flow run against its DVC work (the one plan, the paper's
    `dvc repro` from start to end, a forced report if any): the rest is Prefect's, per stage run."""
    import flows.reproduce as fr

    spent: list[float] = []
    runs: list[fr.PaperRun] = []

    def timing(fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent.append(time.perf_counter() - start)

        return wrapper

    class TimedRun(fr.PaperRun):
        def __init__(self, *args, **kwargs):
            self.began = time.perf_counter()
            super().__init__(*args, **kwargs)

        def __exit__(self, *exc: object) -> None:
            super().__exit__(*exc)
            spent.append(time.perf_counter() - self.began)
            runs.append(self)

    fr.repro, fr.plan, fr.PaperRun = timing(fr.repro), timing(fr.plan), TimedRun
    start = time.perf_counter()
    fr.reproduce_paper(slug, force=True, root=str(work))
    total = time.perf_counter() - start
    n = sum(len(r.ran) for r in runs)
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


def _records(work: Path, skip_commit: str | None = None) -> dict[str, dict[str, dict]]:
    """The stage records of the last run in ``work``: {slug: {stage: record}} (icml25.runner.record_run); a
    paper with a record made at ``skip_commit`` (re-run since the full run) is left out."""
    out: dict[str, dict[str, dict]] = {}
    for f in sorted((work / ".dvc" / "tmp" / "icml25-timing").glob("*/*.json")):
        try:
            out.setdefault(f.parent.name, {})[f.stem] = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
    if skip_commit:
        out = {k: v for k, v in out.items() if all(r.get("commit") != skip_commit for r in v.values())}
    return out


STAGE_ORDER = ("code", "prepare", "validate", "train", "evaluate", "report")


def breakdown(
    work: Path,
    total_s: float | None = None,
    papers_s: dict[str, float] | None = None,
    skip_commit: str | None = None,
) -> dict:
    """Where a full run's time went, from its stage records.

    A stage's ``wall_s`` is its own work (``run``), the papers' compute; everything else is the framework's.
    Per paper: ``span_s`` is the paper's time in the run (``papers_s``: what the flow measured; without it, the
    time from the previous paper's last stage to this paper's, from the records' finish times, which have
    one-second resolution), ``compute_s`` the sum of its stages' walls (code@ excluded: the fingerprints are
    framework), ``framework_s`` the difference, and ``startup_s`` the part of it spent starting interpreters and
    importing (recorded since the warm starter; absent before). ``total_s``: the run's wall time (else the
    papers' spans summed)."""
    from datetime import datetime

    records = _records(work, skip_commit)

    def finished(rec: dict) -> float:
        return datetime.fromisoformat(rec["finished"]).timestamp()

    from icml25.params import implemented, load_params

    papers = []
    previous_end: float | None = None
    for i, slug in enumerate(implemented(load_params(work))):  # the order a run takes
        if slug not in records:
            previous_end = None  # the next paper's start is unknown
            continue
        recs = records[slug]
        compute = sum(recs[s]["wall_s"] for s in STAGE_ORDER[1:] if s in recs)
        end = max(finished(r) for r in recs.values())
        if papers_s and slug in papers_s:
            span = papers_s[slug]
        elif previous_end is not None and i > 0:
            span = end - previous_end
        else:
            span = None
        if span is not None and span < compute:
            span = None  # its records come from different runs (a stage that did not run in this one)
        previous_end = end
        startups = [r.get("startup_s") for r in recs.values() if r.get("startup_s") is not None]
        papers.append(
            {
                "paper": slug,
                "span_s": None if span is None else round(span, 1),
                "compute_s": round(compute, 1),
                "framework_s": None if span is None else round(span - compute, 1),
                "startup_s": round(sum(startups), 1) if startups else None,
                "stages": {
                    s: {k: recs[s].get(k) for k in ("wall_s", "cpu_s", "startup_s")}
                    for s in STAGE_ORDER
                    if s in recs
                },
            }
        )
    spans = [p["span_s"] for p in papers if p["span_s"] is not None]
    compute = sum(p["compute_s"] for p in papers)
    known = [p for p in papers if p["span_s"] is not None]
    total = total_s if total_s is not None else sum(spans)
    share_known = sum(p["framework_s"] for p in known) / sum(p["span_s"] for p in known) if known else None
    return {
        "total_s": round(total, 1),
        "compute_s": round(compute, 1),
        "framework_s": round(total - compute, 1),
        "framework_share": round((total - compute) / total, 3) if total else None,
        "framework_share_within_papers": None if share_known is None else round(share_known, 3),
        "papers": papers,
    }


def _scratch_rows(label: str, b: dict) -> list[dict]:
    per = sorted((p for p in b["papers"] if p["span_s"] is not None), key=lambda p: -p["span_s"])
    return [
        {
            "what": f"{SCRATCH_ROWS}{label}: total",
            "goal": "< 20 min on the faster machine, < 45 min on the slower",
            "measured": f"{b['total_s'] / 60:.1f} min; the stages' own work {b['compute_s'] / 60:.1f} min, the "
            f"framework {b['framework_s'] / 60:.1f} min ({b['framework_share']:.0%})",
        },
        {
            "what": f"{SCRATCH_ROWS}{label}: per paper (time in the run / its stages' own work)",
            "goal": "framework < 10 % of the total",
            "measured": "; ".join(f"{p['paper']} {p['span_s']:.0f}/{p['compute_s']:.0f} s" for p in per),
        },
    ]


SCRATCH_ROWS = "from scratch, "


def _save_scratch(label: str, b: dict, note: str) -> None:
    from benchmarks._common import RESULTS

    path = RESULTS / "pipeline.json"
    old = json.loads(path.read_text()) if path.exists() else {"rows": [], "note": ""}
    prefix = f"{SCRATCH_ROWS}{label}:"
    rows = [r for r in old["rows"] if not r["what"].startswith(prefix)] + _scratch_rows(label, b)
    runs = dict(old.get("scratch", {}))
    runs[label] = {**b, "note": note}
    out = write("pipeline", ["what", "goal", "measured"], rows, note=old.get("note", ""))
    doc = json.loads(out.read_text())
    for key in ("workers",):
        if key in old:
            doc[key] = old[key]
    doc["scratch"] = runs
    out.write_text(json.dumps(doc, indent=2) + "\n")


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def scratch_main(label: str, keep: Path | None) -> None:
    """``--scratch``: the quick profile of every paper from scratch by ``icml25 run all`` (module docstring)."""
    from benchmarks._common import load_text
    from icml25.scratch import dvc_env, make_scratch

    load = load_text()
    with tempfile.TemporaryDirectory() as tmp:
        work = make_scratch(ROOT, "quick", dest=keep or Path(tmp) / "scratch")
        env = {k: v for k, v in dvc_env().items() if not k.startswith("PREFECT_")}
        print(f"from scratch in {work} ({load})", flush=True)
        start = time.perf_counter()
        with open(work.parent / f"{work.name}.log", "w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "flows.cli", "run", "all"],
                cwd=work,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                if "] " in line and ("left" in line or "up to date" in line or line.startswith("[")):
                    print(line.rstrip(), flush=True)
            code = proc.wait()
        wall = time.perf_counter() - start
        if code != 0:
            raise SystemExit(f"icml25 run all failed ({code}); see {work.parent / (work.name + '.log')}")
        status = subprocess.run(
            [sys.executable, "-m", "dvc", "status", "--json"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )
        last = json.loads((work / FOLDER / "last.json").read_text())
        b = breakdown(work, wall, {p["slug"]: p["seconds"] for p in last["papers"]})
        clean = json.loads(status.stdout or "{}") == {}
    _save_scratch(
        label,
        b,
        f"`icml25 run all` in a scratch copy, {load}; `dvc status` {'clean' if clean else 'NOT clean'} after",
    )
    print(json.dumps({k: v for k, v in b.items() if k != "papers"}, indent=1))


def before_main(label: str) -> None:
    """``--before``: the breakdown of the last full run in this checkout, from its stage records; papers re-run
    at the commit checked out (since that run) are left out, and so is the first paper (no start time)."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    b = breakdown(ROOT, skip_commit=head)
    b["papers"] = [p for p in b["papers"] if p["span_s"] is not None]
    spans = sum(p["span_s"] for p in b["papers"])
    compute = sum(p["compute_s"] for p in b["papers"])
    b.update(
        total_s=round(spans, 1),
        compute_s=round(compute, 1),
        framework_s=round(spans - compute, 1),
        framework_share=round((spans - compute) / spans, 3),
    )
    note = (
        "from this checkout's stage records of its last full run (finish times, 1 s resolution): "
        f"{len(b['papers'])} papers with a known span; total = their spans"
    )
    _save_scratch(label, b, note)
    print(json.dumps({k: v for k, v in b.items() if k != "papers"}, indent=1))


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


def _option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv[:-1] else None


if __name__ == "__main__":
    if "--scratch" in sys.argv:
        keep = _option("--keep")
        scratch_main(_option("--label") or _commit(), Path(keep).resolve() if keep else None)
    elif "--before" in sys.argv:
        before_main(_option("--label") or _commit())
    elif "--workers" in sys.argv:
        workers_main()
    elif len(sys.argv) == 4 and sys.argv[1] == "--overhead":
        os.chdir(ROOT)
        prefect_overhead(Path(sys.argv[2]), sys.argv[3])
    else:
        main(quick="--quick" in sys.argv)
