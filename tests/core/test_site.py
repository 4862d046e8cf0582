"""`icml25 site`: the results site built by MkDocs from the committed reports (one row per catalogue paper, every
implemented paper's page with its figures and claims), from a small made-up checkout (a planned paper, a paper
with no report yet, a failed claim with the paper's number and tolerance, Prefect UI links from a stub API), the
atomic replacement of site/, and bad input refused in one line."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from icml25 import io
from icml25.params import implemented, load_params
from icml25.registry import CATALOGUE
from icml25.reporting import fmt
from tests.helpers import assert_refused, run_tool


class Page(HTMLParser):
    """The parts of a built page the tests read: table rows (cell texts), img srcs, element ids, link hrefs; and,
    per table, its section (the id of the h2 above it), the class of the div it sits in and its rows; the texts
    of em and p elements."""

    def __init__(self, path: Path):
        super().__init__()
        self.rows: list[list[str]] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.tables: list[tuple[str, str, list[list[str]]]] = []
        self.ems: list[str] = []
        self.paragraphs: list[str] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._section = ""
        self._divs: list[str] = []
        self._open: dict[str, list[list[str]]] = {"em": [], "p": []}
        self.text: list[str] = []
        self.feed(path.read_text())

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "h2":
            self._section = a.get("id", "")
        elif tag == "div":
            self._divs.append(a.get("class") or "")
        elif tag == "table":
            mine = next((c for c in reversed(self._divs) if "icml25-" in c), "")
            self.tables.append((self._section, mine, []))
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "img":
            self.images.append(a.get("src", ""))
        elif tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag in self._open:
            self._open[tag].append([])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            if self.tables:
                self.tables[-1][2].append(self._row)
            self._row = None
        elif tag == "div" and self._divs:
            self._divs.pop()
        if tag in self._open and self._open[tag]:
            text = " ".join("".join(self._open[tag].pop()).split())
            (self.ems if tag == "em" else self.paragraphs).append(text)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        for parts in self._open.values():
            for part in parts:
                part.append(data)
        self.text.append(data)

    @property
    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())


@pytest.fixture(scope="module")
def committed(root, tmp_path_factory):
    """The site of the checkout's committed reports, built once (no Prefect API asked)."""
    from icml25.site import PrefectLinks, build_site

    out = tmp_path_factory.mktemp("site") / "site"
    return build_site(root, out, links=PrefectLinks(status="no Prefect API in this test")).out


def test_index_has_one_row_per_catalogue_paper(root, committed):
    page = Page(committed / "index.html")
    rows = {r[1]: r for r in page.rows if len(r) == 9 and r[0].isdigit()}
    assert list(rows) == [e.slug for e in CATALOGUE]
    done = set(implemented(load_params(root)))
    for e in CATALOGUE:
        row = rows[e.slug]
        assert row[0] == str(e.number) and row[2] == e.title
        if e.slug not in done:
            assert row[3:5] == ["planned", "not implemented"]
            continue
        claims = io.read_json(root / "reports" / e.slug / "claims.json")["claims"]
        results = [c for c in claims.values() if c["kind"] == "result"]
        assert row[3] == "implemented" and row[8] == "quick"
        assert row[4] == f"{sum(c['passed'] for c in results)}/{len(results)}"
        failed = [cid for cid, c in claims.items() if not c["passed"]]
        assert row[5] == (", ".join(failed) or "none")
        assert f"papers/{e.slug}/index.html" in page.links


def test_every_implemented_paper_page_shows_its_figures_and_claims(root, committed):
    for slug in implemented(load_params(root)):
        path = committed / "papers" / slug / "index.html"
        page = Page(path)
        figures = sorted(p.name for p in (root / "reports" / slug / "figures").glob("*.png"))
        assert sorted(Path(src).name for src in page.images) == figures, slug
        for src in page.images:  # each img resolves to the copied figure, byte for byte
            target = (path.parent / src).resolve()
            assert target.read_bytes() == (root / "reports" / slug / "figures" / target.name).read_bytes()
        claims = io.read_json(root / "reports" / slug / "claims.json")["claims"]
        rows = {r[0]: r for r in page.rows if r and r[0] in claims}
        assert set(rows) == set(claims), slug
        for cid, c in claims.items():
            row = rows[cid]
            assert row[1] == c["kind"] and row[4] == fmt(c["value"]), (slug, row)
            assert row[6] == f"{c['op']} {fmt(c['threshold'])}"
            assert row[7] == ("held" if c["passed"] else "failed"), (slug, row)
            if not c["passed"]:
                assert f"failed-{cid}" in page.ids
        timing_json = root / "reports" / slug / "timing.json"
        timing = io.read_json(timing_json)["wall_s"] if timing_json.exists() else {}
        if timing:
            assert f"{sum(timing.values()):.1f}" in [r[1] for r in page.rows if r and r[0] == "total"], slug
        text = page.all_text
        assert f"prefect deployment run 'reproduce-paper/{slug.replace('_', '-')}'" in text
        assert (root / "benchmarks" / "results" / f"{slug}.json").exists() == ("benchmarks/results/" in text)
        report = Page(committed / "papers" / slug / "report.html")
        assert sorted(Path(src).name for src in report.images) == figures
        assert all((path.parent / src).is_file() for src in report.images)
    assert (committed / "pipeline.html").exists() == (root / "benchmarks/results/pipeline.json").exists()


def test_site_loads_nothing_from_outside(committed):
    """Material's fonts are off: no page links Google Fonts or any stylesheet or script off the site."""
    for path in [committed / "index.html", *committed.glob("papers/*/index.html")]:
        html = path.read_text()
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html
        assert not [
            line for line in html.splitlines() if ("<script" in line or "<link" in line) and "://" in line
        ], path


@pytest.fixture(scope="module")
def stub_prefect():
    """A stub Prefect API that knows one deployment (reproduce-paper/ghost)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the base class's name
            known = self.path == "/api/deployments/name/reproduce-paper/ghost"
            body = json.dumps({"id": "d-123", "name": "ghost"} if known else {"detail": "not found"}).encode()
            self.send_response(200 if known else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def made_up(root, tmp_path_factory, stub_prefect):
    """A small checkout: ghost as committed but one claim turned failed with the new fields (`paper`,
    `tolerance`), ucb_ogd without those fields (a claims.json of before they existed), issm implemented with no
    report, every other paper planned; built with PREFECT_API_URL at the stub."""
    from icml25.scratch import write_params
    from icml25.site import build_site

    work = tmp_path_factory.mktemp("made-up")
    params = load_params(root)
    params["papers"] = {s: params["papers"][s] for s in ("ghost", "ucb_ogd", "issm")}
    write_params(work / "params.yaml", params)
    shutil.copy(root / "prefect.yaml", work / "prefect.yaml")
    for slug in ("ghost", "ucb_ogd"):
        shutil.copytree(root / "reports" / slug, work / "reports" / slug)
    (work / "benchmarks" / "results").mkdir(parents=True)
    shutil.copy(root / "benchmarks" / "results" / "ghost.json", work / "benchmarks" / "results")
    doc = io.read_json(work / "reports" / "ghost" / "claims.json")
    cid, c = next((k, v) for k, v in doc["claims"].items() if v["passed"])
    c.update(passed=0, value=-1.5 if c["op"] in (">=", ">") else 1e9, note="made up <for> the test")
    c.update(paper="0.90 at every p (Fig. 2)", tolerance=0.02)
    io.write_json(work / "reports" / "ghost" / "claims.json", doc)
    old = io.read_json(work / "reports" / "ucb_ogd" / "claims.json")
    for rec in old["claims"].values():
        rec.pop("paper", None), rec.pop("tolerance", None)
    io.write_json(work / "reports" / "ucb_ogd" / "claims.json", old)
    mp = pytest.MonkeyPatch()
    mp.setenv("PREFECT_API_URL", stub_prefect + "/api")
    mp.delenv("PREFECT_UI_URL", raising=False)
    try:
        built = build_site(work, work / "site")
    finally:
        mp.undo()
    return built, cid


def test_planned_papers_say_not_implemented_and_a_missing_report_says_so(made_up):
    built, _ = made_up
    rows = {r[1]: r for r in Page(built.out / "index.html").rows if len(r) == 9 and r[0].isdigit()}
    assert len(rows) == 19
    assert rows["tmvml"][3:5] == ["planned", "not implemented"]
    assert rows["issm"][3] == "implemented" and rows["issm"][4].startswith("no report yet")
    assert "Not implemented" in Page(built.out / "papers" / "tmvml" / "index.html").all_text
    assert "icml25 run issm" in Page(built.out / "papers" / "issm" / "index.html").all_text
    assert built.implemented == 3 and built.papers == 19


def test_a_failed_claim_shows_failed_beside_the_papers_number(made_up):
    built, cid = made_up
    index = {r[1]: r for r in Page(built.out / "index.html").rows if len(r) == 9}
    assert cid in index["ghost"][5]
    page = Page(built.out / "papers" / "ghost" / "index.html")
    row = next(r for r in page.rows if r and r[0] == cid)
    assert row[5] == "0.90 at every p (Fig. 2)" and row[7] == "failed" and row[8] == "0.02"
    assert f"failed-{cid}" in page.ids and "made up <for> the test" in page.all_text
    ucb = Page(
        built.out / "papers" / "ucb_ogd" / "index.html"
    )  # claims without tolerance / paper: shown as "-"
    assert all(r[5] == "-" and r[8] == "-" for r in ucb.rows if len(r) == 9 and r[0] != "id")


def test_prefect_ui_links_come_from_the_api(made_up, stub_prefect):
    built, _ = made_up
    assert f"{stub_prefect}/deployments/deployment/d-123" in Page(built.out / "papers/ghost/index.html").links
    assert not [
        u for u in Page(built.out / "papers/ucb_ogd/index.html").links if "/deployments/deployment/" in u
    ]
    assert "1 of 4 deployments" in built.prefect


def test_an_unreachable_prefect_api_costs_one_short_timeout(monkeypatch):
    import time

    from icml25.site import Deployment, prefect_links

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{port}/api")
    deps = [Deployment("reproduce-paper", f"p{i}", f"p{i}") for i in range(5)]
    start = time.monotonic()
    found = prefect_links(deps, timeout=0.5)
    assert found.links == {} and "no Prefect API answered" in found.status
    assert time.monotonic() - start < 2
    monkeypatch.delenv("PREFECT_API_URL")
    assert "not set" in prefect_links(deps).status


def test_a_failed_build_leaves_the_old_site(made_up, monkeypatch):
    from icml25 import site

    built, _ = made_up
    before = (built.out / "index.html").read_text()

    def broken(config, config_file):
        Path(config["site_dir"]).mkdir()
        (Path(config["site_dir"]) / "index.html").write_text("half")
        raise RuntimeError("MkDocs could not build the site: boom")

    monkeypatch.setattr(site, "_mkdocs_build", broken)
    root = built.out.parent
    with pytest.raises(RuntimeError, match="boom"):
        site.build_site(root, built.out, links=site.PrefectLinks())
    assert (built.out / "index.html").read_text() == before
    assert not [p.name for p in root.iterdir() if p.name.startswith((".site.tmp-", ".site.old-"))]

    def fake(config, config_file):  # a build that works replaces the old site whole
        Path(config["site_dir"]).mkdir()
        (Path(config["site_dir"]) / "index.html").write_text("new")
        return []

    monkeypatch.setattr(site, "_mkdocs_build", fake)
    copy = root / "copy-site"
    shutil.copytree(built.out, copy)
    site.build_site(root, copy, links=site.PrefectLinks())
    assert (copy / "index.html").read_text() == "new" and not (copy / "papers").exists()
    assert (copy / site.MARKER).exists()


def test_bad_input_is_refused_in_one_line(root, tmp_path, monkeypatch):
    monkeypatch.chdir(root)
    assert_refused(*run_tool("site", "--serve", "--port", "70000"), "--port 70000")
    assert_refused(*run_tool("site", "--serve", "--port", "-1"), "--port -1")
    assert_refused(*run_tool("site", "--serve", "--port", "http"), "'http'")
    assert_refused(*run_tool("site", "--port", "8000"), "--port is for --serve")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert_refused(*run_tool("site", "--out", str(a_file)), "is a file")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert_refused(*run_tool("site", "--out", str(mine)), "did not build")
    assert_refused(*run_tool("site", "--out", str(root)), "the checkout itself")
    assert (mine / "notes.txt").read_text() == "keep me" and not (tmp_path / "site").exists()


def test_a_busy_port_is_refused(tmp_path):
    from icml25.errors import UserError
    from icml25.site import serve

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(UserError, match="cannot serve on 127.0.0.1"):
            serve(tmp_path, s.getsockname()[1], announce=lambda line: None)


# --------------------------------------------------------------------------------- text and layout of the pages
#: A caption, claim statements and a benchmark that markdown would misread when written as they are.
CAPTION = "mean R* against RM calls per token (greedy, x_1 and x_2 over seeds)"
STATEMENT = "mean R* of A minus mean R* of B over beta in {1, 10, 100}"
FAILED_STATEMENT = "- R* of x_1 against R* of x_2 over beta in {1, 10, 100}"
CHECK = (
    "paper (Table 3, TL;DR, GPUs): ARGS 32 min vs FaRMA 5 min = 6.4x; spec >= 3x; same text as FaRMA: True"
)
STAGE_TIMES = "evaluate 10 s, prepare 0 s, report 2 s, train 57 s, validate 6 s"
WIDE_BENCHMARK = {
    "machine": "2 CPU cores",
    "date": "2026-12-01",
    "columns": [
        "setting",
        "method",
        "tokens",
        "rm_calls_per_token",
        "rm_seconds",
        "total_seconds",
        "peak_mb",
        "rm runs (s)",
        "total runs (s)",
        "max |diff| vs ours",
        "rm_ratio",
        "total_ratio",
        "check",
    ],
    "rows": [
        {
            "setting": "synthetic CausalNet (V 16, GRU 64), 64 prompts",
            "method": "FaRMA",
            "tokens": 32,
            "rm_calls_per_token": 1.0,
            "rm_seconds": 0.0827,
            "total_seconds": 0.1732,
            "peak_mb": 3.043,
            "rm runs (s)": "0.107, 0.077, 0.078, 0.086, 0.083, 0.091, 0.079, 0.088",
            "total runs (s)": "0.221, 0.164, 0.160, 0.189, 0.173, 0.181, 0.170, 0.166",
            "max |diff| vs ours": 0.0,
            "rm_ratio": "",
            "total_ratio": "",
            "check": "",
        },
        {
            "setting": "synthetic CausalNet (V 16, GRU 64), 64 prompts",
            "method": "ARGS batched",
            "tokens": 32,
            "rm_calls_per_token": 10.0,
            "rm_seconds": 0.5919,
            "total_seconds": 0.6883,
            "peak_mb": 29.064,
            "rm runs (s)": "0.630, 0.592, 0.592, 0.637, 0.582, 0.601, 0.598, 0.611",
            "total runs (s)": "0.743, 0.688, 0.688, 0.741, 0.677, 0.690, 0.702, 0.695",
            "max |diff| vs ours": 0.0,
            "rm_ratio": 7.16,
            "total_ratio": 3.97,
            "check": CHECK,
        },
        {
            "setting": "quick profile, `dvc repro` (last run's stage wall times)",
            "method": STAGE_TIMES,
            "check": "total 76 s",
        },
    ],
    "note": "Calls per token: R* of A and R* of B, rm_forwards_per_token the forward passes.",
}


@pytest.fixture(scope="module")
def odd_texts(root, tmp_path_factory):
    """ghost alone, as committed but for a figure caption, two claim statements and a benchmark (WIDE_BENCHMARK)
    that markdown and the page's width would get wrong if written as they are."""
    import re

    from icml25.reporting import md_escape
    from icml25.scratch import write_params
    from icml25.site import PrefectLinks, build_site

    work = tmp_path_factory.mktemp("odd-texts")
    params = load_params(root)
    params["papers"] = {"ghost": params["papers"]["ghost"]}
    write_params(work / "params.yaml", params)
    shutil.copytree(root / "reports" / "ghost", work / "reports" / "ghost")
    readme = work / "reports" / "ghost" / "README.md"
    text = readme.read_text()
    old = re.search(r"!\[([^\]]*)\]\(figures/accuracy\.png\)", text)[1]
    line = f"\n*{md_escape(old)}*\n"  # the caption line as Evidence.figure writes it
    assert line in text
    readme.write_text(text.replace(f"![{old}]", f"![{CAPTION}]").replace(line, f"\n*{md_escape(CAPTION)}*\n"))
    doc = io.read_json(work / "reports" / "ghost" / "claims.json")
    first, second = list(doc["claims"])[:2]
    doc["claims"][first]["statement"] = STATEMENT
    doc["claims"][second].update(statement=FAILED_STATEMENT, passed=0)
    io.write_json(work / "reports" / "ghost" / "claims.json", doc)
    (work / "benchmarks" / "results").mkdir(parents=True)
    io.write_json(work / "benchmarks" / "results" / "ghost.json", WIDE_BENCHMARK)
    built = build_site(work, work / "site", links=PrefectLinks(status="no Prefect API in this test"))
    return built.out, first, second


def test_generated_texts_are_escaped_markdown(root, odd_texts, committed):
    """A caption "mean R* against ..." shows whole, not "mean R" in italics and a stray "*"; a statement keeps
    its stars, underscores and braces (attr_list read a cell ending in "{1, 10, 100}" as attributes) and a
    failed claim's statement starting with "- " is a sentence, not a list."""
    import re

    site, first, second = odd_texts
    page = Page(site / "papers" / "ghost" / "index.html")
    assert CAPTION in page.ems and f'alt="{CAPTION}"' in (site / "papers/ghost/index.html").read_text()
    rows = {r[0]: r for r in page.rows if r and r[0] in (first, second)}
    assert rows[first][2] == STATEMENT and rows[second][2] == FAILED_STATEMENT
    assert f"{FAILED_STATEMENT}." in page.paragraphs
    assert CAPTION in Page(site / "papers" / "ghost" / "report.html").ems  # the README's own caption line
    for slug in implemented(
        load_params(root)
    ):  # the committed reports: every caption whole (farma's "mean R*")
        readme = (root / "reports" / slug / "README.md").read_text()
        captions = re.findall(r"!\[([^\]]*)\]\(figures/[^)\s]+\)", readme)
        for name in ("index.html", "report.html"):
            ems = Page(committed / "papers" / slug / name).ems
            assert all(c in ems for c in captions), (slug, name, captions, ems)


def _benchmark_tables(page: Page) -> list[tuple[str, list[list[str]]]]:
    return [(css, rows) for section, css, rows in page.tables if section == "benchmark"]


def test_a_wide_benchmark_table_fits_the_page_and_its_long_texts_do_not_stretch_rows(odd_texts, committed):
    """The short columns (numbers, ratios) stay in the benchmark table, which the CSS fits to the page's width
    (no scroll bar hiding the ratios at the right); long text columns (checks, lists of runs) go to a second
    table, by row number, where they wrap into a few wide lines instead of a narrow column of many."""
    from icml25.site import BENCH_LONG_CELL, BENCH_MAX_COLUMNS

    site, _, _ = odd_texts
    tables = _benchmark_tables(Page(site / "papers" / "ghost" / "index.html"))
    assert len(tables) == 2, tables
    (main_css, main), (detail_css, detail) = tables
    header = main[0]
    assert {"rm_ratio", "total_ratio", "max |diff| vs ours", "total_seconds"} <= set(header), header
    assert "check" not in header and "rm runs (s)" not in header
    assert all(len(c) <= BENCH_LONG_CELL for r in main for c in r[2:]), main  # beside "#" and the row's name
    assert detail[0] == ["#", "rm runs (s)", "total runs (s)", "check"]
    assert [r[0] for r in detail[1:]] == ["1", "2"] and detail[2][3] == CHECK
    assert "icml25-bench" in main_css.split() and "icml25-bench-detail" in detail_css.split()
    # the CSS: a benchmark table is laid out to the page's width (not Material's inline-block that grows past it,
    # with 5rem headers); the claims tables' room for the statement (column 3) is theirs, not every table's
    rules = [
        (sel.strip(), body)
        for sel, _, body in (r.partition("{") for r in (committed / "site.css").read_text().split("}"))
    ]
    bench = [body for sel, body in rules if ".icml25-bench" in sel and sel.endswith("table:not([class])")]
    assert any("display: table" in b and "width: 100%" in b for b in bench), rules
    assert any(
        ".icml25-bench" in sel and sel.endswith(" th") and "min-width: 0" in body for sel, body in rules
    )
    assert [sel for sel, _ in rules if "td:nth-child(3)" in sel] == [
        ".md-typeset .icml25-claims table:not([class]) td:nth-child(3)"
    ]
    # the committed benchmarks: no wide table holds long texts beside its row's number and name
    for page_path in committed.glob("papers/*/index.html"):
        for css_class, rows in _benchmark_tables(Page(page_path)):
            if len(rows[0]) > BENCH_MAX_COLUMNS and "icml25-bench-detail" not in css_class:
                named = 2 if rows[0][0] == "#" else 1
                assert all(len(c) <= BENCH_LONG_CELL for r in rows[1:] for c in r[named:]), page_path


def test_the_stage_times_row_is_a_sentence_not_a_row_under_the_columns(root, odd_texts, committed):
    """benchmarks/<slug>.py end their table with the stage wall times of `dvc repro`: a list of stage times (under
    "method"), a total (under "check"). On the site it is a sentence under the table; every row of the table has
    as many cells as its header, and a header with a "|" (epd_serving's "max |diff| vs ours") no longer breaks
    the table into a paragraph of pipes."""
    site, _, _ = odd_texts
    page = Page(site / "papers" / "ghost" / "index.html")
    for _, rows in _benchmark_tables(page):
        assert all(len(r) == len(rows[0]) for r in rows)
        assert not [r for r in rows if any("stage wall times" in c for c in r)], rows
    line = f"quick profile, dvc repro (last run's stage wall times): {STAGE_TIMES}; total 76 s."
    assert line in page.paragraphs, page.paragraphs
    assert WIDE_BENCHMARK["note"] in page.paragraphs
    for page_path in committed.glob("papers/*/index.html"):
        slug = page_path.parent.name
        if not (root / "benchmarks" / "results" / f"{slug}.json").exists():
            continue
        tables = _benchmark_tables(Page(page_path))
        assert tables, slug  # the table was rendered as a table
        assert not [r for _, rows in tables for r in rows if any("stage wall times" in c for c in r)], slug
