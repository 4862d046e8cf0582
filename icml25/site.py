"""The results site: ``icml25 site`` renders reports/ as a static site with MkDocs (theme Material).

What it shows, all read from the checkout's files (nothing recomputed, nothing downloaded):

- ``index``: one row per catalogue paper (19), its status (implemented = params.yaml has ``papers.<slug>``,
  else planned, "not implemented"), its claims by kind (:func:`icml25.claims.tally`: only ``result`` claims
  are evidence; invariants and simulated claims are counted apart), the ids of its failed claims;
- ``papers/<slug>/``: per paper, the citation and links, the profile, the claims (ours next to the paper's own
  number, the test, the verdict, the tolerance), the failed claims' notes, every figure of
  ``reports/<slug>/figures/``, the stage wall times (``timing.json``), the benchmark table
  (``benchmarks/results/<slug>.json``, laid out to fit the page: :func:`benchmark_section`), the Prefect
  deployments that run it (and, when a Prefect API answers at ``PREFECT_API_URL``, a link into its UI), and the
  full report (``reports/<slug>/README.md``) as a sub-page;
- ``pipeline``: the pipeline benchmark (``benchmarks/results/pipeline.json``) when it exists.

Text taken from data (statements, captions, benchmark cells) is escaped (:func:`md_escape`): it shows as written.
The markdown sources and ``mkdocs.yml`` are generated into a temporary folder; MkDocs builds them into a
temporary folder beside the target, which then replaces it (a failed build leaves the old site). A folder this
module built carries :data:`MARKER`; any other non-empty folder is refused as a target, so that ``--out`` can
never replace a folder of the user's. MkDocs is imported only here, inside the functions that build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import io
from .claims import KINDS, describe, tally
from .errors import UserError
from .params import implemented, load_params
from .paths import PaperPaths
from .registry import CATALOGUE, STAGES, Entry
from .reporting import fmt, md_escape

#: The file that marks a folder as a site this module built (the only non-empty folders it replaces).
MARKER = ".icml25-site"
#: Seconds allowed for each request to the Prefect API (the build never fails on it).
PREFECT_TIMEOUT_S = 2.0
KIND_HEADINGS = {
    "result": "Results: evidence for the paper",
    "invariant": "Invariants: checks of our implementation (they hold by algebra or construction)",
    "simulated": "Simulated: computed on a stand-in (shown, never counted as a paper result)",
}
HIDE_TOC = "---\nhide:\n  - toc\n---\n"  # Material's page meta: no table of contents on the right
_FIGURE_LINK = re.compile(r"!\[([^\]]*)\]\(figures/([^)\s]+)\)")
_CITATION = re.compile(
    r"^Paper \d+ of icml25-repro, slug `[^`]+`\. (?P<citation>.*?) Official code: (?P<code>.*)\.$"
)


# ------------------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Deployment:
    """One deployment of prefect.yaml: ``flow/name`` is what ``prefect deployment run`` takes."""

    flow: str
    name: str
    slug: str | None  # the paper it runs; None for reproduce-all

    @property
    def full_name(self) -> str:
        return f"{self.flow}/{self.name}"

    @property
    def command(self) -> str:
        return f"prefect deployment run '{self.full_name}'"


def deployments(root: Path) -> list[Deployment]:
    """The deployments of the checkout's prefect.yaml (the flow's name is its entrypoint function's, ``_`` as
    ``-``, as the flows declare it); none when the file is absent."""
    import yaml

    path = root / "prefect.yaml"
    if not path.exists():
        return []
    doc = yaml.safe_load(path.read_text()) or {}
    out = []
    for d in doc.get("deployments") or []:
        function = str(d.get("entrypoint", "")).rpartition(":")[2]
        slug = (d.get("parameters") or {}).get("slug")
        out.append(Deployment(function.replace("_", "-"), str(d.get("name")), slug))
    return out


@dataclass
class PrefectLinks:
    """Links into a Prefect UI by deployment (``flow/name`` -> URL) and a sentence on where they came from."""

    links: dict[str, str] = field(default_factory=dict)
    status: str = ""


def prefect_links(deps: list[Deployment], timeout: float = PREFECT_TIMEOUT_S) -> PrefectLinks:
    """Ask the Prefect API at ``PREFECT_API_URL`` for each deployment's id; the UI link is
    ``<ui>/deployments/deployment/<id>`` with ``ui`` = ``PREFECT_UI_URL`` or the API URL without ``/api``.
    Never raises: an unset variable, a server that does not answer (one short timeout, then no more requests)
    or an error leaves the links it has and says why in ``status``."""
    import urllib.error
    import urllib.parse
    import urllib.request

    api = os.environ.get("PREFECT_API_URL", "").strip().rstrip("/")
    if not api:
        return PrefectLinks(status="PREFECT_API_URL is not set, so the site has no links into a Prefect UI")
    ui = os.environ.get("PREFECT_UI_URL", "").strip().rstrip("/") or api.removesuffix("/api")
    headers = {"Accept": "application/json"}
    if os.environ.get("PREFECT_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['PREFECT_API_KEY']}"
    found = PrefectLinks()
    for d in deps:
        quoted = "/".join(urllib.parse.quote(part, safe="") for part in (d.flow, d.name))
        request = urllib.request.Request(f"{api}/deployments/name/{quoted}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                doc = json.loads(answer.read().decode())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # not deployed on that server
                continue
            found.status = f"the Prefect API at {api} answered HTTP {exc.code}; no further links"
            return found
        except (OSError, ValueError) as exc:  # URLError, a timeout, a refused connection, a non-JSON answer
            reason = getattr(exc, "reason", None) or exc
            found.status = f"no Prefect API answered at {api} ({reason}); no links into its UI"
            return found
        if isinstance(doc, dict) and doc.get("id"):
            found.links[d.full_name] = f"{ui}/deployments/deployment/{doc['id']}"
    found.status = (
        f"links into the Prefect UI at {ui} ({len(found.links)} of {len(deps)} deployments found there)"
    )
    return found


@dataclass
class PaperData:
    """What the site shows of one catalogue paper, read from its report folder."""

    entry: Entry
    implemented: bool
    claims: dict[str, dict[str, Any]] | None = None  # None: no claims.json
    profile: str | None = None
    citation: str | None = None
    code: str | None = None
    readme: str | None = None
    figures: list[Path] = field(default_factory=list)
    captions: dict[str, str] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return self.entry.slug

    @property
    def has_report(self) -> bool:
        return self.claims is not None

    @property
    def failed(self) -> list[str]:
        return [cid for cid, c in (self.claims or {}).items() if not c.get("passed")]


def read_paper(root: Path, e: Entry, done: set[str]) -> PaperData:
    paths = PaperPaths(root, e.slug)
    data = PaperData(e, e.slug in done)
    if not data.implemented or not paths.claims.exists():
        return data
    try:
        doc = io.read_json(paths.claims)
        data.claims = dict(doc["claims"])
        data.profile = doc.get("profile")
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{paths.claims.relative_to(root)} is not a claims document ({exc})") from None
    if paths.readme.exists():
        data.readme = paths.readme.read_text()
        for line in data.readme.splitlines()[:6]:
            m = _CITATION.match(line.strip())
            if m:
                data.citation, data.code = m["citation"], m["code"]
                break
        data.captions = {name: caption for caption, name in _FIGURE_LINK.findall(data.readme)}
    if paths.figures.is_dir():
        data.figures = sorted(
            p for p in paths.figures.iterdir() if p.suffix.lower() == ".png" and p.is_file()
        )
    if paths.timing.exists():
        try:
            wall = io.read_json(paths.timing).get("wall_s") or {}
            data.timing = {k: float(v) for k, v in wall.items() if isinstance(v, int | float)}
        except (ValueError, AttributeError):
            data.timing = {}
    return data


# ---------------------------------------------------------------------------------------------- markdown
#: What opens a block at the start of a paragraph (a heading, a list item).
_BLOCK_START = re.compile(r"^(\s*)(#|[-+](?=\s)|\d+(?=[.)]\s))")


def paragraph(text: Any) -> str:
    """:func:`md_escape` for text that starts a paragraph: a leading ``#``, ``-``, ``+`` or ``1.`` stays text
    (not a heading or a list)."""

    def escape(m: re.Match[str]) -> str:
        return m[1] + (m[2] + "\\" if m[2][0].isdigit() else "\\" + m[2])

    return _BLOCK_START.sub(escape, md_escape(text), count=1)


def cell(text: Any) -> str:
    """Text for a markdown table cell: :func:`md_escape` on one line, ``|`` escaped."""
    s = "" if text is None else str(text).replace("\n", " ")
    return md_escape(s).replace("|", "\\|")


def md_table(columns: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _code_link(code: str) -> str:
    """The catalogue's official code: ``owner/name`` becomes a GitHub link; prose ("none public") stays."""
    if re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", code):
        return f"[{code}](https://github.com/{code})"
    return cell(code)


def _value(c: dict[str, Any]) -> str:
    return fmt(c["value"]) if c.get("value") is not None else "not a finite number"


def _held(c: dict[str, Any]) -> str:
    return "held" if c.get("passed") else "**failed**"


def _counts(claims: dict[str, dict[str, Any]], kind: str) -> str:
    counts = tally(claims)
    if kind in counts:
        return "{}/{}".format(*counts[kind])
    return "0/0" if kind == "result" else "-"


def index_page(
    papers: list[PaperData], deps: list[Deployment], has_pipeline: bool, profiles: set[str]
) -> str:
    rows = []
    for p in papers:
        e = p.entry
        slug = f"[`{e.slug}`](papers/{e.slug}/index.md)"
        title = f"[{cell(e.title)}](papers/{e.slug}/index.md)"
        if not p.implemented:
            rows.append([e.number, slug, title, "planned", "not implemented", "-", "-", "-", "-"])
            continue
        if not p.has_report:
            rows.append(
                [e.number, slug, title, "implemented", f"no report yet (`icml25 run {e.slug}`)"] + ["-"] * 4
            )
            continue
        claims = p.claims or {}
        failed = ", ".join(f"[`{cid}`](papers/{e.slug}/index.md#failed-{cid})" for cid in p.failed) or "none"
        rows.append(
            [
                e.number,
                slug,
                title,
                "implemented",
                _counts(claims, "result"),
                failed,
                _counts(claims, "invariant"),
                _counts(claims, "simulated"),
                cell(p.profile),
            ]
        )
    done = [p for p in papers if p.implemented]
    total: dict[str, list[int]] = {k: [0, 0] for k in KINDS}
    for p in done:
        for kind, (held, n) in tally(p.claims or {}).items():
            total[kind][0] += held
            total[kind][1] += n
    summary = describe({k: (v[0], v[1]) for k, v in total.items() if v[1] or k == "result"})
    profile = ", ".join(sorted(profiles)) if profiles else "none"
    everything = next((d for d in deps if d.slug is None), None)
    text = [
        HIDE_TOC,
        "# Reproduction results\n",
        f"icml25-repro reproduces ICML 2025 papers at CPU scale and says, claim by claim, what held. "
        f"{len(done)} of {len(papers)} papers are implemented; across them: {summary}. "
        f"Profile of these reports: **{profile}**.\n",
        "Claims are counted by kind: a `result` is evidence for the paper's statement (an experiment that could "
        "have come out otherwise; a test shows a stub failing it), an `invariant` checks our implementation (it "
        "holds by algebra or construction) and a `simulated` claim runs on a stand-in. Only results count as "
        "reproduced.\n",
        md_table(
            [
                "#",
                "slug",
                "paper",
                "status",
                "results held",
                "failed claims",
                "invariants held",
                "simulated held",
                "profile",
            ],
            rows,
        ),
    ]
    if has_pipeline:
        text.append(
            "The pipeline's own costs (start-up, no-op runs, Prefect overhead): [pipeline benchmark](pipeline.md).\n"
        )
    if everything:
        text.append(
            f"Every paper, then this index, runs as the Prefect deployment `{everything.full_name}`: "
            f'`{everything.command}` (a worker must be running: README, "The Prefect UI").\n'
        )
    return "\n".join(text)


def planned_page(e: Entry) -> str:
    return (
        f"# {e.title}\n\n"
        f"Paper {e.number} of icml25-repro, slug `{e.slug}`, by {cell(e.authors)}. "
        f"Official code: {_code_link(e.code)}.\n\n"
        f"**Not implemented** yet: params.yaml has no `papers.{e.slug}` section, so there is no report. "
        f"`icml25 new {e.slug}` scaffolds it (CONTRIBUTING.md).\n"
    )


def _claims_section(p: PaperData) -> list[str]:
    claims = p.claims or {}
    if not claims:
        return ["## Claims\n", "No claims are declared yet.\n"]
    out = [
        "## Claims\n",
        f"{describe(tally(claims))}. Each row gives our value beside the paper's own number (where it states "
        "one), the test our value must pass (the issue's acceptance floor, in code), the verdict and how far a "
        "recompute may move the value (the tolerance).\n",
    ]
    columns = ["id", "kind", "statement", "source", "ours", "paper's number", "test", "verdict", "tolerance"]
    for kind in KINDS:
        mine = {cid: c for cid, c in claims.items() if c.get("kind") == kind}
        if not mine:
            continue
        rows = [
            [
                f"`{cid}`",
                kind,
                cell(c.get("statement")),
                cell(c.get("source")),
                _value(c),
                cell(c["paper"]) if c.get("paper") else "-",
                f"{cell(c.get('op'))} {fmt(c.get('threshold'))}",
                _held(c),
                f"{c['tolerance']:g}" if isinstance(c.get("tolerance"), int | float) else "-",
            ]
            for cid, c in mine.items()
        ]
        out += [f"### {KIND_HEADINGS[kind]}\n", _div("icml25-claims", md_table(columns, rows))]
    other = {cid: c for cid, c in claims.items() if c.get("kind") not in KINDS}
    if other:  # an old claims.json without kinds: shown, counted nowhere
        rows = [[f"`{cid}`", cell(c.get("statement")), _value(c), _held(c)] for cid, c in other.items()]
        table = md_table(["id", "statement", "ours", "verdict"], rows)
        out += ["### Claims without a kind\n", _div("icml25-claims", table)]
    if p.failed:
        out.append("## Failed claims\n")
        for cid in p.failed:
            c = claims[cid]
            line = f"Ours: {_value(c)}; the test: {cell(c.get('op'))} {fmt(c.get('threshold'))}"
            if c.get("paper"):
                line += f"; the paper: {cell(c['paper'])}"
            body = [
                f"### `{cid}` ({c.get('kind', 'no kind')}) {{#failed-{cid}}}\n",
                paragraph(str(c.get("statement") or "").replace("\n", " ")) + ".\n",
                line + ".\n",
            ]
            if c.get("reason"):
                body.append(f"Why it failed: {cell(c['reason'])}.\n")
            if c.get("note"):
                body.append(f"Note: {cell(c['note'])}\n")
            if c.get("killed_by"):
                body.append(f"A stub fails it in `tests/papers/{p.slug}/{c['killed_by']}`.\n")
            out += body
    return out


def _div(css_class: str, markdown: str) -> str:
    """``markdown`` in a ``<div class=...>`` (md_in_html), so that the site's CSS can tell its tables apart."""
    return f'<div class="{css_class}" markdown="1">\n\n{markdown}\n</div>\n'


#: A benchmark table with more columns than this is split: its long text columns go to a second table.
BENCH_MAX_COLUMNS = 6
#: A column (other than the first, the row's name) whose longest cell has more characters than this is long text.
BENCH_LONG_CELL = 40
#: The row benchmarks/<slug>.py appends with the stage wall times of the report it ran beside.
_STAGE_TIMES_ROW = re.compile(r"stage wall times")


def _header(name: str) -> str:
    """A column name for a table's header: escaped, and free to break after ``_`` (``rm_calls_per_token``)."""
    return cell(name).replace("\\_", "\\_<wbr>")


def _is_stage_times(row: dict[str, Any]) -> bool:
    return any(isinstance(v, str) and _STAGE_TIMES_ROW.search(v) for v in row.values())


def _stage_times_line(row: dict[str, Any], columns: list[str]) -> str:
    """The stage-wall-times row as a sentence: its cells are not the columns' quantities (a list of stage times
    under "method", a total under "check"), so in the table they sat under the wrong headers."""
    keys = [c for c in columns if row.get(c) not in (None, "")] + [
        k for k in row if k not in columns and row[k] not in (None, "")
    ]
    split = next(i for i, k in enumerate(keys) if isinstance(row[k], str) and _STAGE_TIMES_ROW.search(row[k]))
    label = ", ".join(cell(row[k]) for k in keys[: split + 1])
    # text as written ("evaluate 10 s, prepare 0 s, ...", "total 76 s"); a bare number with its column's name
    rest = [
        cell(row[k]) if isinstance(row[k], str) else f"{cell(k)}: {cell(fmt(row[k]))}"
        for k in keys[split + 1 :]
    ]
    return f"{label}: {'; '.join(rest) or 'none recorded'}.\n"


def _long_columns(columns: list[str], rows: list[dict[str, Any]]) -> list[str]:
    """The long text columns of a table wider than :data:`BENCH_MAX_COLUMNS` (never the first, the row's name)."""
    if len(columns) <= BENCH_MAX_COLUMNS or not rows:
        return []
    return [c for c in columns[1:] if max(len(fmt(r.get(c, ""))) for r in rows) > BENCH_LONG_CELL]


def benchmark_section(path: Path) -> str:
    """The benchmark JSON (written by benchmarks/<slug>.py) laid out for the site's pages: the stage-wall-times
    row as a sentence under the table (not under the columns' headers); a table wider than
    :data:`BENCH_MAX_COLUMNS` keeps its short columns (the numbers and ratios, so they fit the page without a
    scroll bar) and moves its long text columns (checks, lists of runs, settings) into a second table, by row
    number, where they have the room to wrap into a few lines instead of a column a few words wide that makes
    every row of the table tall. Every cell is escaped (:func:`cell`). reports/<slug>/README.md keeps the whole
    table (:func:`icml25.reporting.render_benchmark`)."""
    if not path.exists():
        return f"No benchmark has been run yet (`python benchmarks/{path.stem}.py` writes {path.name}).\n"
    data = io.read_json(path)
    all_rows = [r for r in data.get("rows") or [] if isinstance(r, dict)]
    columns = [str(c) for c in data.get("columns") or (list(all_rows[0]) if all_rows else [])]
    head = f"From `benchmarks/results/{path.name}`"
    if data.get("machine"):
        head += f", measured on {md_escape(data['machine'])}"
    if data.get("date"):
        head += f" ({md_escape(data['date'])})"
    out = [head + ".\n"]
    rows = [r for r in all_rows if not _is_stage_times(r)]
    text = {id(r): {c: cell(fmt(r.get(c, ""))) for c in columns} for r in rows}
    long = _long_columns(columns, rows)
    short = [c for c in columns if c not in long]
    if not rows:
        out.append("_(no rows)_\n")
    elif not long:
        table = md_table([_header(c) for c in columns], [[text[id(r)][c] for c in columns] for r in rows])
        out.append(_div("icml25-bench", table))
    else:
        numbered = list(enumerate(rows, 1))
        table = md_table(
            ["#"] + [_header(c) for c in short], [[i] + [text[id(r)][c] for c in short] for i, r in numbered]
        )
        out.append(_div("icml25-bench icml25-numbered", table))
        detail = [
            [i] + [text[id(r)][c] for c in long] for i, r in numbered if any(text[id(r)][c] for c in long)
        ]
        out.append(f"The table's longer cells ({', '.join(cell(c) for c in long)}), by row (#):\n")
        out.append(_div("icml25-bench-detail", md_table(["#"] + [_header(c) for c in long], detail)))
    out += [_stage_times_line(r, columns) for r in all_rows if _is_stage_times(r)]
    if data.get("note"):
        out.append(paragraph(data["note"]) + "\n")
    return "\n".join(out)


def _timing_section(p: PaperData) -> list[str]:
    if not p.timing:
        return ["## Timing\n", "No stage timings were recorded with this report (`timing.json`).\n"]
    order = [s for s in STAGES if s in p.timing] + [s for s in p.timing if s not in STAGES]
    rows = [[f"`{s}@{p.slug}`", f"{p.timing[s]:.1f}"] for s in order]
    rows.append(["**total**", f"**{sum(p.timing.values()):.1f}**"])
    return [
        "## Timing\n",
        f"Wall seconds of each stage's last run (`reports/{p.slug}/timing.json`, profile {p.profile}).\n",
        md_table(["stage", "wall s"], rows),
    ]


def _deploy_section(p: PaperData, deps: list[Deployment], links: PrefectLinks) -> list[str]:
    mine = [d for d in deps if d.slug == p.slug] + [d for d in deps if d.slug is None]
    if not mine:
        return [
            "## Deployments\n",
            "prefect.yaml names no deployment for this paper (`icml25 sync` writes it).\n",
        ]
    rows = []
    for d in mine:
        what = "this paper" if d.slug else "every paper, then the index"
        ui = f"[open in the UI]({links.links[d.full_name]})" if d.full_name in links.links else "-"
        rows.append([f"`{d.full_name}`", what, f"`{d.command}`", ui])
    return [
        "## Deployments\n",
        'The Prefect deployments that reproduce it (prefect.yaml; a worker must be running, README "The Prefect '
        f'UI"). UI links: {cell(links.status)}.\n',
        md_table(["deployment", "runs", "command", "Prefect UI"], rows),
    ]


def paper_page(root: Path, p: PaperData, deps: list[Deployment], links: PrefectLinks) -> str:
    e = p.entry
    if not p.implemented:
        return planned_page(e)
    # the claims tables are wide: the page gives them the table of contents' room (the nav stays)
    head = [HIDE_TOC, f"# {e.title}\n", f"Paper {e.number} of icml25-repro, slug `{e.slug}`.\n"]
    if not p.has_report:
        return "\n".join(
            head
            + [
                f"Implemented, but no report has been written yet (`reports/{e.slug}/claims.json` is missing): "
                f"`icml25 run {e.slug}` writes it.\n"
            ]
            + _deploy_section(p, deps, links)
        )
    facts = [
        f"- Paper: {p.citation}" if p.citation else f"- Authors: {cell(e.authors)}",
        f"- Official code: {p.code}" if p.code else f"- Official code: {_code_link(e.code)}",
        f"- Profile: **{cell(p.profile)}**",
        f"- Claims: {describe(tally(p.claims or {}))}",
    ]
    if p.readme is not None:
        facts.append(f"- The full report: [reports/{e.slug}/README.md](report.md)")
    figures = ["## Figures\n"]
    if not p.figures:
        figures.append("This report has no figures.\n")
    for f in p.figures:
        caption = p.captions.get(f.name) or f.stem.replace("_", " ")
        figures.append(f"![{cell(caption)}](figures/{f.name})\n\n*{cell(caption)}* (`{f.name}`)\n")
    bench = PaperPaths(root, e.slug).benchmark
    return "\n".join(
        head
        + ["\n".join(facts) + "\n"]
        + _claims_section(p)
        + figures
        + _timing_section(p)
        + ["## Benchmark\n", benchmark_section(bench)]
        + _deploy_section(p, deps, links)
    )


def report_page(p: PaperData) -> str:
    """The report README as a sub-page: its figure links (``figures/x.png``) resolve beside it (its captions are
    escaped by the report itself: :func:`icml25.reporting.md_escape`)."""
    text = p.readme or ""
    first, _, rest = text.partition("\n")
    note = (
        f"\n*This is `reports/{p.slug}/README.md`, written by `report@{p.slug}`; the "
        f"[summary page](index.md) sets it beside the paper's numbers.*\n"
    )
    return first + "\n" + note + rest if first.startswith("# ") else note + text


def pipeline_page(path: Path) -> str:
    return (
        "# Pipeline benchmark\n\nWhat the pipeline itself costs, beside its goals.\n\n"
        + benchmark_section(path)
    )


# ------------------------------------------------------------------------------------------------ building
@dataclass
class Built:
    """The outcome of :func:`build_site`."""

    out: Path
    pages: int
    figures: int
    papers: int
    implemented: int
    seconds: float
    prefect: str
    warnings: list[str]


#: The site's own stylesheet: the claims tables are wide, so pages use more of the window, cells are tighter, and
#: identifiers do not break mid-word. Tables come in classed divs (:func:`_div`): the claims tables give their
#: statement column room; a benchmark table (:func:`benchmark_section`) keeps its columns narrow (headers wrap)
#: so that all of them, the ratios at the right included, fit the page; its long text cells get their own table.
CSS = """\
.md-grid { max-width: 100rem; }
.md-typeset table:not([class]) th, .md-typeset table:not([class]) td { padding: .5em .7em; }
.md-typeset table:not([class]) td code { white-space: nowrap; }
.md-typeset table:not([class]) td { vertical-align: top; }
.md-typeset :is(.icml25-claims, .icml25-bench, .icml25-bench-detail) .md-typeset__table { display: block; }
.md-typeset :is(.icml25-claims, .icml25-bench, .icml25-bench-detail) table:not([class]) {
  display: table; width: 100%; }
.md-typeset :is(.icml25-claims, .icml25-bench) table:not([class]) th { min-width: 0; }
.md-typeset .icml25-claims table:not([class]) td:nth-child(3) { min-width: 20em; }
.md-typeset .icml25-claims table:not([class]) td:nth-child(4) { min-width: 9em; }
.md-typeset .icml25-claims table:not([class]) td:nth-child(6) { min-width: 8em; }
.md-typeset .icml25-claims table:not([class]) td:is(:nth-child(5), :nth-child(7)) { white-space: nowrap; }
.md-typeset .icml25-bench table:not([class]) th, .md-typeset .icml25-bench table:not([class]) td {
  padding: .4em .45em; }
.md-typeset .icml25-numbered table:not([class]) td:nth-child(2) { min-width: 9em; }
.md-typeset .icml25-bench-detail table:not([class]) td { min-width: 12em; }
.md-typeset .icml25-bench-detail table:not([class]) :is(td, th):first-child { min-width: 0; width: 2em; }
.md-typeset img { max-width: 100%; }
"""


def write_sources(
    root: Path, docs: Path, links: PrefectLinks | None = None
) -> tuple[list[Any], dict[str, Any]]:
    """Write the markdown pages (and copy the figures) into ``docs``; returns the MkDocs nav and counts."""
    done = set(implemented(load_params(root)))
    papers = [read_paper(root, e, done) for e in CATALOGUE]
    deps = deployments(root)
    if links is None:
        links = prefect_links([d for d in deps if d.slug is None or d.slug in done])
    pipeline = root / "benchmarks" / "results" / "pipeline.json"
    profiles = {p.profile for p in papers if p.profile}
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "site.css").write_text(CSS)
    (docs / "index.md").write_text(index_page(papers, deps, pipeline.exists(), profiles))
    nav: list[Any] = [{"Results": "index.md"}]
    paper_nav: list[Any] = []
    pages, figures = 1, 0
    for p in papers:
        folder = docs / "papers" / p.slug
        folder.mkdir(parents=True)
        (folder / "index.md").write_text(paper_page(root, p, deps, links))
        pages += 1
        label = f"{p.entry.number}. {p.slug}" + ("" if p.implemented else " (planned)")
        if p.readme is not None:
            (folder / "report.md").write_text(report_page(p))
            pages += 1
            paper_nav.append(
                {label: [f"papers/{p.slug}/index.md", {"Full report": f"papers/{p.slug}/report.md"}]}
            )
        else:
            paper_nav.append({label: f"papers/{p.slug}/index.md"})
        if p.figures:
            (folder / "figures").mkdir()
            for f in p.figures:
                shutil.copy2(f, folder / "figures" / f.name)
                figures += 1
    nav.append({"Papers": paper_nav})
    if pipeline.exists():
        (docs / "pipeline.md").write_text(pipeline_page(pipeline))
        nav.append({"Pipeline benchmark": "pipeline.md"})
        pages += 1
    counts = {"pages": pages, "figures": figures, "papers": len(papers), "implemented": len(done)}
    return nav, {**counts, "prefect": links.status}


def mkdocs_config(docs: Path, site_dir: Path, nav: list[Any]) -> dict[str, Any]:
    """The MkDocs configuration, in code: Material with its fonts off (no Google Fonts link: the site works
    offline), plain file URLs (``papers/ghost/index.html``, so the folder also reads from disk) and the local
    search index."""
    return {
        "site_name": "icml25-repro results",
        "site_description": "Claim-by-claim CPU-scale reproductions of 19 ICML 2025 papers",
        "docs_dir": str(docs),
        "site_dir": str(site_dir),
        "use_directory_urls": False,
        "strict": False,
        "nav": nav,
        "theme": {
            "name": "material",
            "font": False,
            "features": ["navigation.indexes", "navigation.top", "toc.follow"],
            "palette": {"scheme": "default", "primary": "indigo", "accent": "indigo"},
        },
        "plugins": ["search"],
        "markdown_extensions": [
            "tables",
            "attr_list",
            "admonition",
            "md_in_html",
            {"toc": {"permalink": True}},
            "pymdownx.magiclink",
        ],
        "extra": {"generator": False},
        "extra_css": ["site.css"],
        "validation": {
            "links": {"not_found": "warn", "unrecognized_links": "info", "absolute_links": "info"}
        },
    }


def check_out(root: Path, out: Path) -> None:
    """Refuse a target that is a file or a non-empty folder this module did not build."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a folder")
    if out == root or out in root.parents:
        raise UserError(f"--out {out} would replace the checkout itself")
    if out.is_dir() and not (out / MARKER).exists() and any(out.iterdir()):
        raise UserError(
            f"--out {out} is a folder that `icml25 site` did not build; give a new or empty folder (or remove it)"
        )


def _mkdocs_build(config: dict[str, Any], config_file: Path) -> list[str]:
    """Build with MkDocs' Python API; returns its warnings (it logs them; a build error raises)."""
    import logging

    import yaml

    try:
        from mkdocs.commands.build import build
        from mkdocs.config import load_config
        from mkdocs.exceptions import MkDocsException
    except ImportError as exc:  # pragma: no cover - the project pins mkdocs
        raise UserError(
            f"MkDocs is not installed ({exc}); `pip install -e .` installs the pinned version"
        ) from None

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    logger = logging.getLogger("mkdocs")
    handler, propagate = Collect(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            cfg = load_config(config_file=str(config_file))
            build(cfg)
        except MkDocsException as exc:
            raise RuntimeError(f"MkDocs could not build the site: {exc}") from exc
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
    return handler.messages


def build_site(root: Path, out: Path | None = None, *, links: PrefectLinks | None = None) -> Built:
    """Build the site of checkout ``root`` into ``out`` (default ``root/site``), atomically."""
    start = time.monotonic()
    root = root.resolve()
    out = (out if out is not None else root / "site").resolve()
    check_out(root, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    src = Path(tempfile.mkdtemp(prefix="icml25-site-src-"))
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        nav, counts = write_sources(root, src / "docs", links)
        warnings = _mkdocs_build(mkdocs_config(src / "docs", tmp, nav), src / "mkdocs.yml")
        (tmp / MARKER).write_text(f"built by `icml25 site` from {root / 'reports'}\n")
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return Built(
        out,
        counts["pages"],
        counts["figures"],
        counts["papers"],
        counts["implemented"],
        time.monotonic() - start,
        str(counts["prefect"]),
        warnings,
    )


# ------------------------------------------------------------------------------------------------- serving
def check_port(port: int) -> None:
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port} is not a TCP port (0 to 65535; 0 picks a free one)")


def serve(folder: Path, port: int, announce: Callable[[str], None] = print) -> int:
    """Serve ``folder`` on 127.0.0.1:``port`` (0: a free port) until Ctrl-C or SIGTERM; announces the URL."""
    import functools
    import http.server

    from .procs import exit_on_signals

    check_port(port)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    try:
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise UserError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    with httpd, exit_on_signals():
        url = f"http://127.0.0.1:{httpd.server_address[1]}/"
        announce(f"serving {folder} at {url} (Ctrl-C stops it)")
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            announce("stopped")
    return 0
