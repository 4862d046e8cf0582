"""The results site in a real browser: every implemented paper reproduced under the smoke profile (in process),
the index written, `icml25 site --serve` started on a free port, and headless Chromium (Debian's package, run
offline) opening the index and every paper page: every paper's row, every figure present and loaded, every claim
id shown, nothing fetched from outside 127.0.0.1; screenshots go to the test's tmp dir."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from icml25.registry import CATALOGUE

pytestmark = pytest.mark.slow

#: Chromium offline: no sandbox (root in a container), no GPU, no background traffic, a fresh profile.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1100",
)
APT_PACKAGES = ("chromium", "chromium-driver")


def _installed() -> tuple[str, str] | None:
    browser = next(
        (p for p in ("/usr/bin/chromium", shutil.which("chromium")) if p and Path(p).is_file()), None
    )
    driver = next(
        (p for p in ("/usr/bin/chromedriver", shutil.which("chromedriver")) if p and Path(p).is_file()), None
    )
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """(chromium, chromedriver): Debian's packages, installed with apt-get when missing (root only; `apt-get
    update` first if the install fails); the test is skipped, saying why, where that cannot be done."""
    found = _installed()
    if found:
        return found
    if shutil.which("apt-get") is None:
        pytest.skip("Chromium and chromedriver are not installed and there is no apt-get to install them")
    if os.geteuid() != 0:
        pytest.skip(
            f"Chromium is not installed; installing it needs root (apt-get install {' '.join(APT_PACKAGES)})"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *APT_PACKAGES]
    errors = []
    for cmd in (install, ["apt-get", "update", "-q"], install):
        try:
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            errors.append(f"`{' '.join(cmd)}` timed out")
            continue
        if out.returncode != 0:
            errors.append(f"`{' '.join(cmd)}` failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
        elif cmd is install and _installed():
            break
    found = _installed()
    if not found:
        pytest.skip(f"could not install Chromium and chromedriver from the distribution: {'; '.join(errors)}")
    return found


def _serve(work: Path, out: Path) -> tuple[subprocess.Popen, str, list[str]]:
    """`icml25 site --out OUT --serve --port 0` in ``work``: the process, the URL it announces and its output
    lines so far (read on a thread until it exits)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "site", "--out", str(out), "--serve", "--port", "0"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    announced = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if "serving " in line:
                announced.set()
        announced.set()

    threading.Thread(target=read, daemon=True).start()
    announced.wait(120)
    url = next((m[1] for line in lines if (m := re.search(r"at (http://127\.0\.0\.1:\d+/)", line))), None)
    if url is None:
        proc.kill()
        raise AssertionError("icml25 site --serve announced no URL:\n" + "\n".join(lines))
    return proc, url, lines


def _driver(browser: str, driver_path: str, profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = browser
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    service = Service(executable_path=driver_path, log_output=str(profile.parent / "chromedriver.log"))
    return webdriver.Chrome(options=options, service=service)


IMAGES = """return Array.from(document.querySelectorAll('article img')).map(
    i => [i.getAttribute('src'), i.complete, i.naturalWidth])"""
OUTSIDE = """return performance.getEntriesByType('resource').map(e => e.name)
    .filter(u => !u.startsWith('http://127.0.0.1:') && !u.startsWith('data:'))"""
#: Each table of the article: [px its right edge passes its scroll box's (columns hidden behind a scroll bar),
#: its tallest row in px].
LAYOUT = """return Array.from(document.querySelectorAll('article table')).map(t => {
    const box = (t.closest('.md-typeset__scrollwrap') || t.parentElement).getBoundingClientRect();
    const rows = Array.from(t.rows).map(r => r.getBoundingClientRect().height);
    return [Math.round(t.getBoundingClientRect().right - box.right), Math.round(Math.max(0, ...rows))]})"""
#: No row of a page's tables is taller than this (a long text squeezed into a narrow column made rows of 500 px
#: and more, mostly blank).
MAX_ROW_PX = 400


def _open(drv, url: str, timeout: float = 30.0) -> None:
    """Load ``url`` and wait until that document is complete and shows its article's heading."""
    drv.get(url)
    ready = "return [location.href, document.readyState, !!document.querySelector('article h1')]"
    deadline = time.monotonic() + timeout
    while (state := drv.execute_script(ready)) != [url, "complete", True]:
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not load: {state}")
        time.sleep(0.1)


def _wait_images(drv, timeout: float = 20.0) -> list[list]:
    deadline = time.monotonic() + timeout
    while True:
        images = drv.execute_script(IMAGES)
        if all(done for _, done, _ in images) or time.monotonic() > deadline:
            return images
        time.sleep(0.1)


def test_smoke_site_in_headless_chromium(smoke, chromium, tmp_path):
    from icml25 import io
    from icml25.params import implemented, load_params
    from icml25.reporting import write_index

    work = smoke.root
    slugs = implemented(load_params(work))
    started = time.monotonic()
    for slug in slugs:
        smoke.run(slug)
    write_index(work, slugs)
    print(f"smoke pipelines of {len(slugs)} papers: {time.monotonic() - started:.1f} s")

    browser, driver_path = chromium
    proc, url, lines = _serve(work, tmp_path / "site")
    drv = None
    try:
        built = next(line for line in lines if line.startswith("built "))
        assert "19 papers" in built, lines
        assert not [line for line in lines if "mkdocs:" in line], lines  # MkDocs warned about nothing
        drv = _driver(browser, driver_path, tmp_path / "chromium-profile")
        _open(drv, url + "index.html")
        rows = drv.execute_script(
            "return Array.from(document.querySelectorAll('article table tbody tr'))"
            ".map(r => Array.from(r.cells).map(c => c.innerText.trim()))"
        )
        by_slug = {r[1]: r for r in rows if len(r) > 4}
        assert list(by_slug) == [e.slug for e in CATALOGUE]
        for e in CATALOGUE:
            row = by_slug[e.slug]
            assert row[0] == str(e.number) and row[2] == e.title
            if e.slug in slugs:
                claims = io.read_json(work / "reports" / e.slug / "claims.json")["claims"]
                held = sum(1 for c in claims.values() if c["kind"] == "result" and c["passed"])
                total = sum(1 for c in claims.values() if c["kind"] == "result")
                assert row[3] == "implemented" and row[4] == f"{held}/{total}" and row[8] == "smoke", row
            else:
                assert row[3] == "planned" and row[4] == "not implemented", row
        drv.save_screenshot(str(tmp_path / "index.png"))
        assert drv.execute_script(OUTSIDE) == []

        for slug in slugs:
            _open(drv, f"{url}papers/{slug}/index.html")
            figures = sorted(p.name for p in (work / "reports" / slug / "figures").glob("*.png"))
            images = _wait_images(drv)
            where = (slug, drv.current_url, drv.title, drv.execute_script("return document.readyState"))
            assert sorted(Path(src).name for src, _, _ in images) == figures, where
            broken = [src for src, done, width in images if not (done and width > 0)]
            assert not broken, f"{slug}: figures that did not load: {broken}"
            text = drv.find_element("css selector", "article").text
            claims = io.read_json(work / "reports" / slug / "claims.json")["claims"]
            assert all(cid in text for cid in claims), slug
            assert drv.execute_script(OUTSIDE) == [], slug
            # every table fits the window (no column behind a scroll bar) and no row is mostly blank height
            layout = drv.execute_script(LAYOUT)
            assert all(over <= 1 and tall <= MAX_ROW_PX for over, tall in layout), (slug, layout)
            if slug == slugs[0]:
                drv.save_screenshot(str(tmp_path / f"{slug}.png"))
        _open(drv, f"{url}papers/{slugs[0]}/report.html")
        assert "report@" in drv.find_element("css selector", "article").text
        assert all(done and width > 0 for _, done, width in _wait_images(drv))
        print(f"screenshots: {tmp_path / 'index.png'}, {tmp_path / (slugs[0] + '.png')}")
    finally:
        if drv is not None:
            drv.quit()
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert proc.returncode is not None
    assert (tmp_path / "index.png").stat().st_size > 10_000
