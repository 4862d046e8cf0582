"""icml25.progress: the line per finished paper, the estimate of the time left, and the final table."""

from __future__ import annotations

import json
import time
from pathlib import Path

from icml25.progress import FOLDER, Progress, about, duration, last_table


def _paper(root: Path, slug: str, walls: dict | None, held: int = 2, total: int = 3) -> None:
    report = root / "reports" / slug
    report.mkdir(parents=True, exist_ok=True)
    if walls is not None:
        (report / "timing.json").write_text(json.dumps({"paper": slug, "profile": "quick", "wall_s": walls}))
    claims = {f"c{i}": {"kind": "result", "passed": i < held} for i in range(total)}
    (report / "claims.json").write_text(json.dumps({"claims": claims}))


def test_durations_in_words():
    assert [duration(s) for s in (42, 194, 3900)] == ["42 s", "3 min 14 s", "1 h 05 min"]
    assert [about(s) for s in (45, 119, 2280)] == ["45 s", "2 min", "38 min"]


def test_the_estimate_comes_from_the_committed_timings_and_is_scaled_by_the_papers_done(tmp_path):
    _paper(tmp_path, "a", {"prepare": 10, "train": 50})  # 60 s
    _paper(tmp_path, "b", {"train": 120})
    _paper(tmp_path, "c", {"train": 600})  # up to date: counts nothing
    run = Progress(tmp_path, ["a", "b", "c"], {"a": True, "b": True, "c": False})
    assert run.left() == 180
    # 7x slower than recorded: the rest is scaled by (420 + 300) / (60 + 300) = 2
    line = run.finish("a", ["train@a"], 420.0)
    assert line.startswith("[1/3] a: 2/3 results held, 7 min 00 s; about 4 min left")
    assert run.left() == 240
    line = run.finish("b", ["train@b"], 240.0)
    assert "left" not in line and run.left() == 0
    assert run.finish("c", [], 0.4) == "[3/3] c: up to date (2/3 results held)"


def test_the_last_run_on_this_machine_is_the_better_estimate(tmp_path):
    _paper(tmp_path, "a", {"train": 50})
    _paper(tmp_path, "b", None)  # no committed timing: nothing to go on
    Progress(tmp_path, ["a"], {"a": True}).finish("a", ["train@a"], 80.0)
    history = json.loads((tmp_path / FOLDER / "papers.json").read_text())
    assert history == {"a": 80.0}
    again = Progress(tmp_path, ["a", "b"], {"a": True, "b": True})
    assert again.left() == 80.0


def test_the_final_table_lists_every_paper_and_the_total(tmp_path):
    _paper(tmp_path, "alpha", {"train": 5})
    _paper(tmp_path, "b", {"train": 5}, held=3)
    start = time.time()
    run = Progress(tmp_path, ["alpha", "b"], {"alpha": True, "b": False})
    run.finish("alpha", ["code@alpha", "train@alpha"], 75.0)
    run.finish("b", [], 0.2)
    table = run.table()
    lines = table.splitlines()
    assert lines[0].split() == ["paper", "stages", "run", "time", "claims"]
    assert lines[2].split()[:5] == ["alpha", "2", "1", "min", "15"]
    assert "up to date" in lines[3] and "3/3 results held" in lines[3]
    assert lines[4].startswith("total") and lines[4].split()[1] == "2"
    assert last_table(tmp_path, since=start) == table
    assert last_table(tmp_path, since=time.time() + 60) is None  # an older run's table is not this run's
