"""Where a run is: a line per finished paper, an estimate of the time left, and the final table.

``[7/19] sr_pareto: 5/5 results held, 3 min 14 s; about 38 min left``

The estimate of a paper that will run is the wall time of its last run on this machine (``.dvc/tmp/icml25-progress/
papers.json``, written after every paper), else the sum of its stages' wall times in the committed
``reports/<slug>/timing.json`` (what a fresh clone has); a paper whose stages are all up to date counts zero.
Once papers have run, the estimates of the rest are scaled by how the finished ones compared with theirs (a
slower machine, or a busy one), with a prior that keeps one paper from rescaling the rest (:meth:`Progress.left`). The last run's summary (``last.json`` beside it) is what ``icml25 run`` prints
as its final table.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import io
from .claims import describe
from .paths import PaperPaths
from .reporting import claims_summary

FOLDER = Path(".dvc") / "tmp" / "icml25-progress"
#: The estimate's prior: the recorded times hold, as if this many seconds of papers had run as recorded.
PRIOR_S = 300.0


def duration(seconds: float) -> str:
    """``3 min 14 s``, ``42 s``, ``1 h 05 min``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def about(seconds: float) -> str:
    """An estimate in words: ``38 min``, ``45 s``."""
    return f"{int(round(seconds))} s" if seconds < 60 else f"{int(round(seconds / 60))} min"


def _read(path: Path) -> dict:
    try:
        doc = io.read_json(path)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    io.write_json(path, doc)


def committed_seconds(root: Path, slug: str) -> float | None:
    """The sum of the paper's stage wall times in its committed timing.json (None without one)."""
    walls = _read(PaperPaths(root, slug).report / "timing.json").get("wall_s")
    if not isinstance(walls, dict) or not walls:
        return None
    return float(sum(v for v in walls.values() if isinstance(v, int | float)))


@dataclass
class PaperDone:
    slug: str
    ran: list[str]
    seconds: float
    summary: str


@dataclass
class Progress:
    """The state of one run over ``slugs``; ``stale[slug]``: whether any of its stages will run."""

    root: Path
    slugs: list[str]
    stale: dict[str, bool]
    started: float = field(default_factory=time.time)
    done: list[PaperDone] = field(default_factory=list)
    _expected: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        history = _read(self.root / FOLDER / "papers.json")
        for slug in self.slugs:
            last = history.get(slug)
            guess = float(last) if isinstance(last, int | float) else committed_seconds(self.root, slug)
            self._expected[slug] = guess or 0.0

    def expected(self, slug: str) -> float:
        return self._expected[slug] if self.stale.get(slug, True) else 0.0

    def left(self) -> float:
        """Seconds left: the expected times of the papers not done, scaled by how the papers that ran compared
        with theirs, (done + PRIOR_S) / (expected + PRIOR_S): the prior keeps one paper whose code changed (a
        paper made faster, say) from rescaling all the others, and fades as papers finish."""
        finished = {d.slug for d in self.done}
        ran = [d for d in self.done if d.ran and self.expected(d.slug) > 0]
        actual = sum(d.seconds for d in ran)
        expected = sum(self.expected(d.slug) for d in ran)
        scale = (actual + PRIOR_S) / (expected + PRIOR_S)
        return scale * sum(self.expected(s) for s in self.slugs if s not in finished)

    def finish(self, slug: str, ran: list[str], seconds: float) -> str:
        """Record a finished paper; its progress line."""
        counts = claims_summary(self.root, slug)
        summary = describe(counts).replace("; ", ", ") if counts else "no claims.json"
        self.done.append(PaperDone(slug, list(ran), seconds, summary))
        if ran:
            history = _read(self.root / FOLDER / "papers.json")
            history[slug] = round(seconds, 1)
            _write(self.root / FOLDER / "papers.json", history)
        what = f"{summary}, {duration(seconds)}" if ran else f"up to date ({summary})"
        line = f"[{len(self.done)}/{len(self.slugs)}] {slug}: {what}"
        left = self.left()
        return line + (f"; about {about(left)} left" if left >= 1 else "")

    def table(self) -> str:
        """The final table; also written to last.json, which ``icml25 run`` prints (:func:`last_table`)."""
        doc = {"seconds": round(time.time() - self.started, 1), "papers": [asdict(d) for d in self.done]}
        _write(self.root / FOLDER / "last.json", doc)
        return render(doc)


def render(doc: dict) -> str:
    """A run's summary as a table: paper, stages run, time, claims; and the total."""
    rows = [("paper", "stages run", "time", "claims")]
    for d in doc["papers"]:
        ran = str(len(d["ran"])) if d["ran"] else "up to date"
        rows.append((d["slug"], ran, duration(d["seconds"]), d["summary"]))
    rows.append(("total", str(sum(len(d["ran"]) for d in doc["papers"])), duration(doc["seconds"]), ""))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}".rstrip() for r in rows]
    lines.insert(1, "-" * max(len(x) for x in lines))
    return "\n".join(lines)


def last_table(root: Path, since: float) -> str | None:
    """The table of the run that finished after ``since`` (epoch seconds) in ``root``, else None."""
    path = root / FOLDER / "last.json"
    try:
        if path.stat().st_mtime < since:
            return None
    except OSError:
        return None
    doc = _read(path)
    return render(doc) if doc.get("papers") else None
