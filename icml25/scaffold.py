"""``icml25 new <slug>``: every file a new paper needs, so that it passes ``make test`` before any method exists.

It writes the stage package (``stages/<slug>/``: the paper declaration and params schema, one module per stage,
the report's claims module and its markdown template), the model package, the params sections (params.yaml,
profiles/smoke.yaml, profiles/paper.yaml), the test folder with a smoke-pipeline test, a benchmark stub and the
input folder, then regenerates dvc.yaml and prefect.yaml (``icml25 sync``). The placeholder pipeline moves a
small seeded table through every stage and declares no claim: a paper's claims come from its method, never from
the scaffold. CONTRIBUTING.md says what to do next.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

from .errors import UserError
from .params import implemented, load_params
from .registry import entry

INIT = '''\
"""$title: the controlled CPU reproduction.

$cite. ICML 2025. Official code: $code.

TODO: the equations this reproduction implements, and what each stage does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    rows: int = field(default=100, metadata={"ge": 2})


PAPER = Paper(
    slug="$slug",
    citation="$cite. *$title*. ICML 2025.",
    url="$code",
    schema={"prepare": Prepare},
)
'''

PREPARE = '''\
"""Prepare: TODO the paper's data. The scaffold writes a small seeded table so that every stage runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    rng = ctx.rng("table")
    rows = ctx.params.prepare.rows
    pd.DataFrame({"x": rng.standard_normal(rows), "y": rng.integers(0, 2, rows)}).to_csv(
        ctx.out / "table.csv", index=False
    )
    ctx.log.info("%d rows", rows)
'''

VALIDATE = '''\
"""Validate: the Great Expectations suite on what prepare wrote (TODO: the paper's own columns)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    frame = pd.read_csv(ctx.paths.prepared / "table.csv")
    columns = [Column("x", min=-1e6, max=1e6), Column("y", values=(0, 1))]
    write_validation(ctx.out, [validate_frame(frame, "table", columns, min_rows=2)])
'''

TRAIN = '''\
"""Train: TODO the method's fitting step (Lightning where there is a network to train)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    ctx.write_json("meta.json", {"trained": []})
'''

EVALUATE = '''\
"""Evaluate: TODO every number a claim or a table of the report needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    frame = pd.read_csv(ctx.paths.prepared / "table.csv")
    ctx.write_json("summary.json", {"rows": len(frame)})
'''

REPORT = '''\
"""The claims of $slug, computed from data/$slug/evaluated, and what report.md shows.

Declare each claim with its test, its kind, its tolerance and the function that computes it from the evaluated
artifacts (a `result` names the test in tests/papers/$slug/ in which a stub or broken method fails it):

    @claim(">=", 0.03, kind="result", killed_by="test_stubs.py::test_fedavg_as_method_fails",
           statement="...", source="Table 1", tol=0.01,  # how far a recompute may move it (CONTRIBUTING)
           paper="+4.2 points (Table 1)")
    def beats_baselines(ev):
        summary = ev.json("summary.json")
        return summary["gap"], f"note shown under the claims table"
"""

from __future__ import annotations

from icml25.reporting import Evaluated


def context(ev: Evaluated) -> dict:
    """The tables, figures and computed phrases report.md shows."""
    return {"rows": ev.json("summary.json")["rows"]}
'''

REPORT_MD = """\
## What the paper claims

TODO: the paper's claims, in its own terms.

## What we measured

TODO: tables and figures from the evaluated artifacts ({{ rows }} rows so far).

## What differs from the paper

TODO: every difference from the paper and its official code, and every choice that is ours.
"""

MODELS_INIT = '''\
"""$title ($authors, ICML 2025): the method. TODO: modules and their math."""
'''

TEST_PIPELINE = '''\
"""$slug: the smoke pipeline, in process (the same runner and outputs as `dvc repro`)."""

from __future__ import annotations

from tests.helpers import check_report

SLUG = "$slug"


def test_smoke_pipeline_writes_a_well_formed_report(smoke):
    work = smoke.run(SLUG)
    readme = check_report(work, SLUG, "smoke")
    assert "## What we measured" in readme
'''

BENCHMARK = '''\
"""Benchmark of $slug (run by hand: `python benchmarks/$slug.py`); writes benchmarks/results/$slug.json,
which the report renders. TODO: the method's speed and memory beside the issue's reference.

Until then it records the wall time of each stage of the last quick-profile run in this checkout."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import stage_times, write  # noqa: E402

if __name__ == "__main__":
    times = stage_times("$slug")
    write("$slug", ["stage", "seconds"], [{"stage": k, "seconds": v} for k, v in times.items()])
'''

PARAMS = """\
  $slug:
    seed: 0
    prepare:
      rows: 100
    validate: {}
    train: {}
    evaluate: {}
    report: {}
"""
SMOKE = """\
  $slug:
    prepare:
      rows: 20
"""
PAPER_PROFILE = """\
  $slug: {}  # paper-scale settings of $slug
"""


def _append_paper(path: Path, text: str) -> None:
    """Append a paper's entry to the ``papers:`` mapping, which must be the file's last top-level key."""
    lines = path.read_text().splitlines()
    tops = [line for line in lines if line and not line[0].isspace() and not line.startswith("#")]
    if not tops or not tops[-1].startswith("papers:"):
        raise UserError(f"{path}: `papers:` must be the last top-level key to add a paper to it")
    body = path.read_text()
    path.write_text(body + ("" if body.endswith("\n") else "\n") + text)


def new_paper(root: Path, slug: str) -> list[Path]:
    """Write the new paper's files under ``root``; returns them. Refuses a paper that already exists."""
    from .pipeline import ensure_input_folder, sync

    e = entry(slug)
    if slug in implemented(load_params(root)):
        raise UserError(f"paper {slug!r} is already in params.yaml")
    existing = [
        p for p in (f"stages/{slug}", f"models/{slug}", f"tests/papers/{slug}") if (root / p).exists()
    ]
    if existing:
        raise UserError(f"{existing[0]} already exists; `icml25 new` only creates a paper from nothing")
    fields = {
        "slug": slug,
        "title": e.title,
        "authors": e.authors,
        "cite": e.authors.rstrip("."),  # "Zang et al." + ". ICML" must not read "al.. ICML"
        "code": f"https://github.com/{e.code}" if "/" in e.code else e.code,
        "number": e.number,
    }
    files = {
        f"stages/{slug}/__init__.py": INIT,
        f"stages/{slug}/prepare.py": PREPARE,
        f"stages/{slug}/validate.py": VALIDATE,
        f"stages/{slug}/train.py": TRAIN,
        f"stages/{slug}/evaluate.py": EVALUATE,
        f"stages/{slug}/report.py": REPORT,
        f"stages/{slug}/report.md": REPORT_MD,
        f"models/{slug}/__init__.py": MODELS_INIT,
        f"tests/papers/{slug}/__init__.py": "",
        f"tests/papers/{slug}/test_pipeline.py": TEST_PIPELINE,
        f"benchmarks/{slug}.py": BENCHMARK,
    }
    if (root / f"benchmarks/{slug}.py").exists():
        files.pop(f"benchmarks/{slug}.py")
    written = []
    for rel, template in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(template).substitute(fields))
        written.append(path)
    for rel, text in (
        ("params.yaml", PARAMS),
        ("profiles/smoke.yaml", SMOKE),
        ("profiles/paper.yaml", PAPER_PROFILE),
    ):
        _append_paper(root / rel, Template(text).substitute(fields))
        written.append(root / rel)
    written.append(ensure_input_folder(root, slug) / "README.md")
    written += [root / name for name in sync(root)]
    return written
