"""Shared fixtures: the project root, scratch copies under a profile, DVC runs, Prefect's test harness."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def dvc(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the venv's DVC in ``cwd`` (this interpreter's bin first on PATH, as the stages need)."""
    from icml25.scratch import dvc_env

    out = subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=cwd, env=dvc_env(), capture_output=True, text=True
    )
    if check and out.returncode != 0:
        raise AssertionError(f"dvc {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


def icml25(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    from icml25.scratch import dvc_env

    return subprocess.run(
        [sys.executable, "-m", "icml25", *args], cwd=cwd, env=dvc_env(), capture_output=True, text=True
    )


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def smoke_repo(tmp_path_factory) -> tuple[Path, str]:
    """A scratch copy of the project under the smoke profile, reproduced once by plain `dvc repro` with a
    fresh DVC cache (nothing can be restored): (path, dvc's output). Treat it as read-only; tests that change
    it work on :func:`clone_repo` copies."""
    from icml25.scratch import make_scratch

    work = make_scratch(ROOT, "smoke", dest=tmp_path_factory.mktemp("smoke") / "repo")
    assert not (work / ".dvc" / "cache").exists()
    return work, dvc(work, "repro").stdout


def clone_repo(src: Path, dest: Path) -> Path:
    """A full copy (git, DVC cache, outputs) of a reproduced scratch repo: up to date without re-running."""
    import shutil

    shutil.copytree(src, dest, symlinks=True)
    return dest


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """One Prefect test server for the whole session (PREFECT_HOME in a temp dir)."""
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def paper_params(root: Path, slug: str, **prepare) -> dict:
    """params.yaml reduced to one paper, with some of its prepare keys overridden (for run_stage in a tmp dir)."""
    from icml25.params import load_yaml

    params = load_yaml(root / "params.yaml")
    params["papers"] = {slug: params["papers"][slug]}
    params["papers"][slug]["prepare"].update(prepare)
    return params


def check_smoke_report(work: Path, log: str, root: Path, slug: str, claim_ids: set[str]) -> str:
    """Every stage of ``slug`` ran in the smoke repo, its claims.json has these claims and passes the shared
    checker; returns the report's README.md."""
    import json

    for stage in ("prepare", "validate", "train", "evaluate", "report"):
        assert f"Running stage '{stage}@{slug}'" in log
    claims = json.loads((work / "reports" / slug / "claims.json").read_text())
    assert claims["profile"] == "smoke" and set(claims["claims"]) == claim_ids
    checker = root.parent / "shared" / "tools" / "check_claims.py"
    if checker.exists():
        res = subprocess.run([sys.executable, str(checker), slug], cwd=work, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout
    return (work / "reports" / slug / "README.md").read_text()
