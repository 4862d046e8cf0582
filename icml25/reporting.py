"""Reports: README.md, figures, claims.json and metrics.json of a paper, and the index reports/README.md.

A paper's report stage is declarative: ``stages/<slug>/report.py`` declares its claims (:func:`icml25.claims
.claim`, each a function of the evaluated artifacts), ``context(ev)`` (the tables, figures and computed
phrases its template shows) and optionally ``metrics(ev)``; ``stages/<slug>/report.md`` holds the paper's fixed
prose as a Jinja2 template with three sections (what the paper claims, what we measured, what differs). The
framework (:func:`write_report`) does the rest: it reads the evaluated artifacts through :class:`Evaluated`,
computes the verdicts, renders the template, saves the figures, and writes every file.

Contract (DESIGN.md, "Claims"): every claim's ``value`` is one number computed from the evaluated artifacts;
evaluate writes every number a claim or table needs, the report only selects and renders; a failed claim stays
failed. README.md and claims.json depend only on the artifacts and the params, never on wall time, so running the
same params twice gives byte-identical files (PNG figures are written without timestamps).
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import Any

from . import io
from .claims import KINDS, contract_problems, declared, describe, tally
from .paths import PaperPaths, index_path
from .registry import BY_SLUG, CATALOGUE, STAGES, load_paper


# ------------------------------------------------------------------------------------------------ numbers
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


#: Code spans and URLs: kept as written by :func:`md_escape` (a code span is meant; a URL must stay a link).
_VERBATIM = re.compile(r"(`[^`]*`|https?://[^\s<>()`]+)")
#: What markdown would read as emphasis, a link, an escape or (attr_list) attributes: ``R* ... R*`` must not turn
#: into italics, nor a cell ending in ``{k + 1}`` into a class.
_MD_SPECIAL = re.compile(r"([\\*_\[\]{}])")


def md_escape(text: Any) -> str:
    """Text written from data (a figure's caption; the site's statements and benchmark cells), as markdown that
    shows it as written: ``\\ * _ [ ] { }`` backslash-escaped and ``<``/``>``/``&`` HTML-escaped (a statement
    such as "p < 0.05" must not open an HTML tag), except inside code spans and URLs."""
    s = "" if text is None else str(text)
    parts = _VERBATIM.split(s)
    return "".join(
        p if i % 2 else html.escape(_MD_SPECIAL.sub(r"\\\1", p), quote=False) for i, p in enumerate(parts)
    )


def fixed(x: float, decimals: int = 6) -> str:
    """A number known to ``decimals`` places (an R^2, a coverage): rounding noise such as 2.2e-16 prints as 0,
    trailing zeros are dropped (0.418079, 1, 0)."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    """A GitHub markdown table of ``rows`` (dicts), in the order of ``columns``."""
    if not rows:
        return "_(no rows)_\n"
    columns = columns or list(rows[0])
    lines = [
        "| " + " | ".join(str(c).replace("|", "\\|") for c in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c, "")).replace("|", "\\|") for c in columns) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ figures
def pyplot() -> Any:
    """matplotlib.pyplot on the non-interactive Agg backend (the only backend reports use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> None:
    """PNG without timestamps (byte-identical for identical figures)."""
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})


# ------------------------------------------------------------------------------------------ the evaluated
class Evaluated:
    """What a report module reads: the evaluated folder (files read once), every params section, the seed and
    the profile; figures registered here are saved with the report."""

    def __init__(self, folder: Path, params: Any, seed: int, profile: str, slug: str):
        self.dir = Path(folder)
        self.params = params
        self.seed = seed
        self.profile = profile
        self.slug = slug
        self.figures: dict[str, Any] = {}
        self._cache: dict[Any, Any] = {}

    def path(self, name: str) -> Path:
        return self.dir / name

    def exists(self, name: str) -> bool:
        return (self.dir / name).exists()

    def json(self, name: str) -> Any:
        key = ("json", name)
        if key not in self._cache:
            self._cache[key] = io.read_json(self.dir / name)
        return self._cache[key]

    def csv(self, name: str, **kwargs: Any) -> Any:
        """A pandas DataFrame (a fresh copy: callers may change it). An empty file gives an empty frame."""
        from .tables import read_frame

        key = ("csv", name, tuple(sorted(kwargs.items())))
        if key not in self._cache:
            self._cache[key] = read_frame(self.dir / name, **kwargs)
        return self._cache[key].copy()

    def once(self, fn: Any) -> Any:
        """``fn(self)``, computed once per report (a summary several claims and tables share)."""
        key = ("once", fn)
        if key not in self._cache:
            self._cache[key] = fn(self)
        return self._cache[key]

    def figure(self, name: str, fig: Any, caption: str) -> str:
        """Register a figure (saved as figures/<name>); returns the markdown that shows it."""
        self.figures[name] = fig
        pyplot().close(fig)
        return f"![{caption}](figures/{name})\n\n*{md_escape(caption)}*\n"


# -------------------------------------------------------------------------------------------- the report
def _params_yaml(params: dict[str, Any]) -> str:
    from omegaconf import OmegaConf

    return OmegaConf.to_yaml(OmegaConf.create(params)).strip()


def render_benchmark(path: Path) -> str:
    """The benchmark JSON (written by benchmarks/<slug>.py, run by hand) as a table, or a note that none ran."""
    if not path.exists():
        return f"No benchmark has been run yet (`python benchmarks/{path.stem}.py` writes {path.name}).\n"
    data = io.read_json(path)
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


def render_template(path: Path, variables: dict[str, Any]) -> str:
    """Render a paper's report.md (Jinja2: ``{{ name }}``, ``{{ x | fmt }}``, ``{% if %}``; an unknown name is an
    error, not an empty string)."""
    import jinja2

    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(fmt=fmt, fixed=fixed, g=lambda x: f"{x:g}")
    return env.from_string(path.read_text()).render(**variables)


def tidy_sections(text: str) -> str:
    """Each ``## `` section of a rendered template with its body trimmed and one blank line around it, so that
    the template's own blank lines (before a heading, after a table) never show twice."""
    parts = re.split(r"(?m)^(## .*)$", text)
    out = [parts[0].strip() + "\n"] if parts[0].strip() else []
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        out += [heading + "\n", body.strip() + "\n"]
    return "\n".join(out)


def _sections(params: Any) -> dict[str, Any]:
    import dataclasses

    return {
        name: dataclasses.asdict(section) if dataclasses.is_dataclass(section) else {}
        for name, section in vars(params).items()
    }


def write_report(ctx: Any, module: Any) -> dict[str, Any]:
    """The report stage of every paper: claims, template, figures, metrics, written into ``ctx.out``.

    ``module`` (``stages/<slug>/report.py``) declares the claims, ``context(ev)`` and optionally
    ``metrics(ev)`` and ``LEAD`` (a paragraph shown before the claims: what a reader must know first); its
    template is the ``.md`` file beside it."""
    paths, profile = ctx.paths, ctx.profile
    entry = BY_SLUG[ctx.slug]
    paper = load_paper(ctx.slug)
    ev = Evaluated(paths.evaluated, ctx.params, ctx.seed, profile, ctx.slug)
    claims = {}
    for c in declared(module):
        claims[c.id] = c.verdict(*c.evaluate(ev))
    doc = {"paper": ctx.slug, "profile": profile, "claims": claims}
    # A claim whose value is not a finite number is written as failed with its reason (the contract's checkers
    # then reject the file: the paper must make the value computable); anything else wrong is a bug here.
    problems = contract_problems({**doc, "claims": {k: c for k, c in claims.items() if "reason" not in c}})
    if problems:
        raise RuntimeError(f"{ctx.slug}: claims.json would break the contract: {'; '.join(problems)}")
    variables = {**vars(ctx.params), "seed": ctx.seed, "profile": profile}
    variables.update(module.context(ev))
    body = render_template(Path(module.__file__).with_suffix(".md"), variables)
    metrics = module.metrics(ev) if hasattr(module, "metrics") else {}

    claim_rows = [
        {
            "claim": f"`{cid}`",
            "kind": c["kind"],
            "statement": c["statement"],
            "source": c["source"],
            "value": c["value"],
            "test": f"{c['op']} {fmt(c['threshold'])}",
            "verdict": "held" if c["passed"] else "**failed**",
            "recompute tolerance": c["tolerance"],
            "the paper's number": c.get("paper", "-"),
        }
        for cid, c in claims.items()
    ]
    notes = "".join(_note_line(ctx.slug, cid, c) for cid, c in claims.items())
    shown = {"seed": ctx.seed, **_sections(ctx.params)}
    text = [
        f"# {entry.title}\n",
        f"Paper {entry.number} of icml25-repro, slug `{ctx.slug}`. {paper.citation} "
        f"Official code: {paper.url}.\n",
        f"Profile **{profile}**: {describe(tally(claims))}. Only `result` claims are evidence for the paper: "
        "an `invariant` checks the implementation (it holds by algebra or construction) and a `simulated` claim "
        "runs on a stand-in. "
        f"This file is generated by `report@{ctx.slug}`; do not edit it by hand.\n",
        *([module.LEAD.strip() + "\n"] if getattr(module, "LEAD", "") else []),
        "## Claims\n",
        table(claim_rows) if claim_rows else "No claims are declared yet.\n",
        notes,
        tidy_sections(body),
        "## Parameters\n",
        "```yaml\n" + _params_yaml(shown) + "\n```\n",
        "## Benchmark\n",
        render_benchmark(paths.benchmark),
    ]
    out = ctx.out
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for name, fig in ev.figures.items():
        save_figure(fig, out / "figures" / name)
    (out / "README.md").write_text("\n".join(text))
    io.write_json(out / "claims.json", doc)
    io.write_json(out / "metrics.json", metrics)
    io.write_json(out / "timing.json", _timings(paths, profile))
    return doc


def _note_line(slug: str, cid: str, c: dict[str, Any]) -> str:
    """One line under the claims table: the claim's note and, for a result, the test a stub fails."""
    parts = [c["note"]] if c.get("note") else []
    if c.get("killed_by"):
        parts.append(f"a stub fails it in `tests/papers/{slug}/{c['killed_by']}`")
    return f"- `{cid}`: {'; '.join(parts)}\n" if parts else ""


def _timings(paths: PaperPaths, profile: str) -> dict[str, Any]:
    """Wall times of the stages' last runs, kept out of README.md and claims.json: each stage's record under
    .dvc/tmp; a stage without one there (DVC skipped it in a checkout whose .dvc/tmp is new, such as a queued
    experiment's temporary workspace under .dvc/tmp/exps) keeps its time from the previous timing.json (a persist
    output, still in place) when that one was written under the same profile."""
    previous: dict[str, Any] = {}
    try:
        doc = io.read_json(paths.timing)
        if doc.get("profile") == profile and isinstance(doc.get("wall_s"), dict):
            previous = doc["wall_s"]
    except (OSError, ValueError, AttributeError):
        pass
    found = {}
    for stage in STAGES:
        f = paths.stage_timings / f"{stage}.json"
        if f.exists():
            found[stage] = io.read_json(f)["wall_s"]
        elif isinstance(previous.get(stage), int | float):
            found[stage] = previous[stage]
    return {"paper": paths.slug, "profile": profile, "wall_s": found}


# -------------------------------------------------------------------------------------------------- index
def write_index(root: Path, slugs: list[str]) -> str:
    """reports/README.md: one row per paper, claims held / total for the implemented ones."""
    rows = []
    for e in CATALOGUE:
        claims_path = PaperPaths(root, e.slug).claims
        if e.slug in slugs and claims_path.exists():
            counts = tally(io.read_json(claims_path)["claims"])
            status, link = "implemented", f"[{e.slug}]({e.slug}/README.md)"
            # results always (0/0 says a paper has none); the other kinds only where a paper has them
            result, invariant, simulated = (
                "{}/{}".format(*counts[k]) if k in counts else ("0/0" if k == "result" else "-")
                for k in KINDS
            )
        else:
            status, link = ("implemented" if e.slug in slugs else "planned"), e.slug
            result = invariant = simulated = "-"
        rows.append(
            {
                "#": e.number,
                "slug": link,
                "paper": e.title,
                "authors": e.authors,
                "status": status,
                "results held": result,
                "invariants held": invariant,
                "simulated held": simulated,
            }
        )
    text = (
        "# Reproduction reports\n\nGenerated by `dvc repro index`: one row per paper of icml25-repro; "
        "claims held / total come from each paper's `claims.json` (quick profile), counted by kind: only "
        "`result` claims are evidence for a paper; an `invariant` checks the implementation and a `simulated` "
        "claim runs on a stand-in (DESIGN.md, claims contract).\n\n" + table(rows)
    )
    io.write_text_atomic(index_path(root), text)
    return text


def claims_summary(root: Path, slug: str) -> dict[str, tuple[int, int]] | None:
    """(held, total) per kind (:func:`icml25.claims.tally`) from a committed claims.json, or None (used by
    `icml25 list` and `icml25 run`)."""
    path = PaperPaths(root, slug).claims
    if not path.exists():
        return None
    try:
        return tally(io.read_json(path)["claims"])
    except (ValueError, KeyError, AttributeError):
        return None
