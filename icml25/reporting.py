"""Reports: README.md, figures, claims.json and metrics.json of a paper, and the index reports/README.md.

Contract (DESIGN.md, "Claims"): every claim's ``value`` is one number computed from the evaluated artifacts;
its threshold is the paper's acceptance floor, declared in ``stages/<slug>.py``; a failed claim stays failed.
README.md and claims.json depend only on the artifacts and the params, never on wall time, so running the same
params twice gives byte-identical files (PNG figures are written without timestamps).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .paths import PaperPaths, index_path
from .registry import BY_SLUG, CATALOGUE, Paper


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary sibling and a rename: readers never see half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def json_safe(obj: Any) -> Any:
    """JSON has no NaN or infinity: a non-finite float becomes the string "nan", "inf" or "-inf"."""
    import math

    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def dump_json(obj: Any, path: Path) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, allow_nan=False) + "\n")


def fmt(x: Any, digits: int = 4) -> str:
    """A number for a table: fixed for moderate magnitudes, scientific otherwise."""
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        if x != 0 and (abs(x) < 10 ** -(digits - 1) or abs(x) >= 10**6):
            return f"{x:.{digits - 1}e}"
        return f"{x:.{digits}g}" if abs(x) >= 1 else f"{x:.{digits}f}".rstrip("0").rstrip(".") or "0"
    return str(x)


def table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """A GitHub markdown table of ``rows`` (dicts), in the order of ``columns``."""
    if not rows:
        return "_(no rows)_\n"
    columns = columns or list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c, "")).replace("|", "\\|") for c in columns) + " |")
    return "\n".join(lines) + "\n"


@dataclass
class Report:
    """What a paper's report stage assembles; :func:`write_report` turns it into files."""

    values: dict[str, float] = field(default_factory=dict)  # claim id -> computed value
    reasons: dict[str, str] = field(default_factory=dict)  # claim id -> why it failed / what it means
    metrics: dict[str, Any] = field(default_factory=dict)  # extra numbers for `dvc metrics show`
    claims_text: str = ""  # "What the paper claims"
    measured: str = ""  # "What we measured": tables and figure links
    differences: str = ""  # "What differs from the paper"
    figures: dict[str, Any] = field(default_factory=dict)  # file name -> matplotlib figure

    def figure(self, name: str, fig: Any, caption: str) -> str:
        """Register a figure; returns the markdown that shows it."""
        self.figures[name] = fig
        return f"![{caption}](figures/{name})\n\n*{caption}*\n"


def claims_document(paper: Paper, report: Report, profile: str) -> dict[str, Any]:
    missing = [c.id for c in paper.claims if c.id not in report.values]
    extra = [k for k in report.values if k not in {c.id for c in paper.claims}]
    if missing or extra:
        raise RuntimeError(f"{paper.slug}: claims without values {missing}, values without claims {extra}")
    claims = {}
    for c in paper.claims:
        rec = c.verdict(report.values[c.id])
        if c.id in report.reasons:
            rec["note"] = report.reasons[c.id]
        claims[c.id] = rec
    return {"paper": paper.slug, "profile": profile, "claims": claims}


def _params_yaml(params: dict[str, Any]) -> str:
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.create(params)).strip()


def render_benchmark(path: Path) -> str:
    """The benchmark JSON (written by benchmarks/<slug>.py, run by hand) as a table, or a note that none ran."""
    if not path.exists():
        return f"No benchmark has been run yet (`python benchmarks/{path.stem}.py` writes {path.name}).\n"
    data = json.loads(path.read_text())
    rows = data.get("rows", [])
    head = f"From `benchmarks/results/{path.name}`"
    if data.get("machine"):
        head += f", measured on {data['machine']}"
    if data.get("date"):
        head += f" ({data['date']})"
    return (
        head
        + ".\n\n"
        + table(rows, data.get("columns"))
        + ("\n" + data["note"] + "\n" if data.get("note") else "")
    )


def write_report(ctx: Any, paper: Paper, report: Report) -> dict[str, Any]:
    """Write README.md, claims.json, metrics.json, timing.json and figures/ into ``ctx.out`` (the runner moves
    them into place). The parameters shown are the sections the report stage declared, plus the seed."""
    import dataclasses

    out, paths, profile = ctx.out, ctx.paths, ctx.profile
    params: dict[str, Any] = {"seed": ctx.seed}
    for name, section in vars(ctx.params).items():
        params[name] = dataclasses.asdict(section) if dataclasses.is_dataclass(section) else {}
    entry = BY_SLUG[paper.slug]
    doc = claims_document(paper, report, profile)
    held = sum(c["passed"] for c in doc["claims"].values())
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for name, fig in report.figures.items():
        fig.savefig(out / "figures" / name, dpi=110, bbox_inches="tight", metadata={"Software": None})
    claim_rows = [
        {
            "claim": f"`{cid}`",
            "statement": c["statement"],
            "source": c["source"],
            "value": c["value"],
            "test": f"{c['op']} {fmt(c['threshold'])}",
            "verdict": "held" if c["passed"] else "**failed**",
        }
        for cid, c in doc["claims"].items()
    ]
    notes = "".join(f"- `{cid}`: {c['note']}\n" for cid, c in doc["claims"].items() if c.get("note"))
    text = [
        f"# {entry.title}\n",
        f"Paper {entry.number} of icml25-repro, slug `{paper.slug}`. {paper.citation} "
        f"Official code: {paper.url}.\n",
        f"Profile **{profile}**: {held} of {len(doc['claims'])} claims held. "
        "This file is generated by `report@" + paper.slug + "`; do not edit it by hand.\n",
        "## Claims\n",
        table(claim_rows),
        notes,
        "## What the paper claims\n",
        report.claims_text.strip() + "\n",
        "## What we measured\n",
        report.measured.strip() + "\n",
        "## What differs from the paper\n",
        report.differences.strip() + "\n",
        "## Parameters\n",
        "```yaml\n" + _params_yaml(params) + "\n```\n",
        "## Benchmark\n",
        render_benchmark(paths.benchmark),
    ]
    (out / "README.md").write_text("\n".join(text))
    dump_json(doc, out / "claims.json")
    dump_json(json_safe(report.metrics), out / "metrics.json")
    dump_json(_timings(paths), out / "timing.json")
    return doc


def _timings(paths: PaperPaths) -> dict[str, Any]:
    """Wall times of the stages' last runs (from .dvc/tmp): kept out of README.md and claims.json."""
    from .registry import STAGES

    found = {}
    for stage in STAGES:
        f = paths.stage_timings / f"{stage}.json"
        if f.exists():
            found[stage] = json.loads(f.read_text())["wall_s"]
    return {"paper": paths.slug, "wall_s": found}


def write_index(root: Path, slugs: list[str]) -> str:
    """reports/README.md: one row per paper, claims held / total for the implemented ones."""
    rows = []
    for e in CATALOGUE:
        claims_path = PaperPaths(root, e.slug).claims
        if e.slug in slugs and claims_path.exists():
            claims = json.loads(claims_path.read_text())["claims"]
            held = sum(int(c["passed"]) for c in claims.values())
            status, result = "implemented", f"{held}/{len(claims)}"
            link = f"[{e.slug}]({e.slug}/README.md)"
        else:
            status, result, link = ("implemented" if e.slug in slugs else "planned"), "-", e.slug
        rows.append(
            {
                "#": e.number,
                "slug": link,
                "paper": e.title,
                "authors": e.authors,
                "status": status,
                "claims held": result,
            }
        )
    text = (
        "# Reproduction reports\n\nGenerated by `dvc repro index`: one row per paper of icml25-repro; "
        "claims held / total come from each paper's `claims.json` (quick profile).\n\n" + table(rows)
    )
    write_text_atomic(index_path(root), text)
    return text


def claims_summary(root: Path, slug: str) -> tuple[int, int] | None:
    """(held, total) from a committed claims.json, or None (used by `icml25 list`)."""
    path = PaperPaths(root, slug).claims
    if not path.exists():
        return None
    try:
        claims = json.loads(path.read_text())["claims"]
    except (ValueError, KeyError):
        return None
    return sum(int(c.get("passed", 0)) for c in claims.values()), len(claims)
