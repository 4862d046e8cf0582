"""GHOST's smoke run through `dvc repro` (the session's smoke repo) and its proxy models through S3."""

from __future__ import annotations

import shutil

import pytest

from icml25.store import local_s3
from tests.conftest import check_smoke_report, dvc

SLUG = "ghost"
pytestmark = pytest.mark.filterwarnings("ignore")


def test_smoke_repro_writes_ghost_report_and_artifacts(smoke_repo, root):
    work, log = smoke_repo
    readme = check_smoke_report(work, log, root, SLUG, {"beats_baselines", "above_chance", "proxy_fidelity"})
    for fig in ("accuracy.png", "label_distribution.png"):
        assert f"figures/{fig}" in readme
        assert (work / "reports" / SLUG / "figures" / fig).stat().st_size > 1000
    trained = work / "data" / SLUG / "trained" / "main" / "run0"
    assert (trained / "generators" / "paper" / "client00.safetensors").exists()
    assert (trained / "generators" / "code" / "client00.safetensors").exists()
    assert (trained / "models" / "ghost_paper.safetensors").exists()
    acc = (work / "data" / SLUG / "evaluated" / "main" / "accuracy.csv").read_text()
    for method in ("ghost_paper", "ghost_code", "ghost_paper_noret", "fedavg", "local", "central"):
        assert f"0,{method}," in acc


def test_proxy_models_travel_through_s3(smoke_repo, tmp_path):
    """`dvc push` sends the trained proxies and global models; a fresh copy without cache pulls them back."""
    work, _ = smoke_repo
    src = tmp_path / "src"
    shutil.copytree(work, src, symlinks=True)
    with local_s3(tmp_path / "s3", bucket="icml25-repro") as s3:
        for cmd in s3.dvc_commands():  # endpoint and keys into .dvc/config.local, as users do
            dvc(src, *cmd.split()[1:])
        dvc(src, "push", f"train@{SLUG}")
        trained = src / "data" / SLUG / "trained" / "main"
        before = {p.relative_to(trained): p.read_bytes() for p in trained.rglob("*") if p.is_file()}
        dst = tmp_path / "dst"
        shutil.copytree(src, dst, symlinks=True)
        shutil.rmtree(dst / ".dvc" / "cache")
        shutil.rmtree(dst / "data" / SLUG / "trained")
        dvc(dst, "pull", f"train@{SLUG}")
        moved = dst / "data" / SLUG / "trained" / "main"
        after = {p.relative_to(moved): p.read_bytes() for p in moved.rglob("*") if p.is_file()}
    assert after == before
    assert any(str(p).startswith("run0/generators/paper/") for p in after)
