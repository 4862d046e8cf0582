"""Fixtures: the project root, the in-process smoke workspace, one paper's DVC repo, Prefect's test harness.
Helpers that are not fixtures live in tests/helpers.py; the per-paper timing report in tests/timing.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, dvc

pytest_plugins = ["tests.timing"]

os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# With the venv named on PATH by a relative path (PATH=.venv/bin:$PATH), Python's sys.executable is relative too,
# and every subprocess a test starts in another folder (a scratch repo's DVC, the claims checker) fails to find
# the interpreter. Absolute, not resolved: resolving the symlink would leave the venv.
sys.executable = os.path.abspath(sys.executable)

#: The paper the integration tests drive through real `dvc repro` and Prefect (the others run in process).
DVC_PAPER = "model_independence"

COLLECTION_IMPORTED: dict[str, bool] = {}


def pytest_collection_modifyitems(config, items):
    """The groups `make test` hands to its workers (pytest-xdist, ``--dist loadgroup``): each paper's tests
    together (they share its smoke pipeline, run once per worker), the integration tests together (they share
    the reproduced repository and the Prefect server), the rest file by file."""
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(ROOT / "tests").parts
        if parts[0] == "papers" and len(parts) > 2:
            group = f"papers/{parts[1]}"
        elif parts[0] == "integration":
            group = "integration"
        else:
            group = "/".join(parts)
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session):
    """Record whether collecting the tests imported torch or Lightning (tests/core/test_layout.py checks)."""
    for name in ("torch", "lightning"):
        COLLECTION_IMPORTED[name] = name in sys.modules


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


class SmokeWorkspace:
    """A scratch copy of the project under the smoke profile; :meth:`run` runs one paper's five stages in this
    process (the runner DVC calls, the same outputs), once per session."""

    def __init__(self, work: Path):
        self.root = work
        self._done: set[str] = set()

    def run(self, slug: str) -> Path:
        from icml25.runner import run_pipeline

        if slug not in self._done:
            run_pipeline(self.root, slug)
            self._done.add(slug)
        return self.root


@pytest.fixture(scope="session")
def smoke(tmp_path_factory) -> SmokeWorkspace:
    from icml25.scratch import make_scratch

    return SmokeWorkspace(make_scratch(ROOT, "smoke", dest=tmp_path_factory.mktemp("smoke") / "repo"))


@pytest.fixture(scope="session")
def dvc_repo(tmp_path_factory) -> tuple[Path, str]:
    """A scratch copy holding only :data:`DVC_PAPER` under the smoke profile, reproduced once by plain
    `dvc repro` with a fresh DVC cache (nothing can be restored): (path, dvc's output). Treat it as read-only;
    tests that change it work on :func:`tests.helpers.clone_repo` copies."""
    from icml25.scratch import make_scratch

    work = make_scratch(ROOT, "smoke", dest=tmp_path_factory.mktemp("dvc") / "repo", papers=[DVC_PAPER])
    assert not (work / ".dvc" / "cache").exists()
    return work, dvc(work, "repro").stdout


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """One Prefect test server for the whole session (PREFECT_HOME in a temp dir)."""
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
