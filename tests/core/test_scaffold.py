"""`icml25 new <slug>`: in a copy of the project, a new paper gets every file it needs and passes its tests,
the layering check and the freshness check of the derived files before any method exists."""

from __future__ import annotations

import subprocess
import sys

import yaml

from icml25.scratch import dvc_env
from tests.helpers import with_planned


def _run(work, *args):
    return subprocess.run([sys.executable, *args], cwd=work, env=dvc_env(), capture_output=True, text=True)


def test_a_new_paper_passes_its_tests_before_any_method_exists(root, tmp_path):
    work, slug = with_planned(root, tmp_path / "repo")
    out = _run(work, "-m", "icml25", "new", slug)
    assert out.returncode == 0, out.stderr
    for rel in (
        *(
            f"stages/{slug}/{m}.py"
            for m in ("__init__", "prepare", "validate", "train", "evaluate", "report")
        ),
        f"stages/{slug}/report.md",
        f"models/{slug}/__init__.py",
        f"tests/papers/{slug}/test_pipeline.py",
        f"benchmarks/{slug}.py",
        f"data/{slug}/input/README.md",
    ):
        assert (work / rel).exists(), rel
    for rel in ("params.yaml", "profiles/smoke.yaml", "profiles/paper.yaml"):
        assert slug in yaml.safe_load((work / rel).read_text())["papers"], rel
    assert f"slug: {slug}" in (work / "prefect.yaml").read_text()
    assert "al.." not in (work / "stages" / slug / "__init__.py").read_text()  # "et al." + ". ICML 2025"
    assert f"reports/{slug}/claims.json" in (work / "dvc.yaml").read_text()
    for args in (["-m", "icml25", "check"], ["-m", "icml25", "layers"], ["-m", "icml25", "sync", "--check"]):
        out = _run(work, *args)
        assert out.returncode == 0, (args, out.stdout, out.stderr)
    out = _run(work, "-m", "pytest", f"tests/papers/{slug}", "-q", "-p", "no:cacheprovider")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout

    again = _run(work, "-m", "icml25", "new", slug)
    assert (
        again.returncode == 2 and "already in params.yaml" in again.stderr and "Traceback" not in again.stderr
    )
    unknown = _run(work, "-m", "icml25", "new", "nope")
    assert unknown.returncode == 2 and "invalid choice: 'nope'" in unknown.stderr
