"""Exact code dependencies (icml25.codedeps): the closure of a stage from the source, on a planted project and
on the real one, the fingerprint, and the layering rule."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from icml25.codedeps import (
    ImportGraph,
    UntrackableImport,
    fingerprint,
    layering_violations,
    stage_files,
)
from icml25.params import implemented, load_params
from icml25.registry import STAGES


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


PLANTED = {
    "icml25/__init__.py": "",
    "icml25/stage.py": "from . import io\nfrom .errors import UserError\n",
    "icml25/io.py": "import json\n",
    "icml25/errors.py": "",
    "icml25/runner.py": "from . import training\n",  # plumbing: neither tracked nor followed
    "icml25/training.py": "",
    "icml25/reporting.py": "from . import io\n",
    "flows/__init__.py": "",
    "stages/__init__.py": "",
    "stages/demo/__init__.py": "from icml25.registry import Paper\n",
    "stages/demo/prepare.py": """\
        from __future__ import annotations
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from models.demo import heavy  # type hints only: not run
        def run(ctx):
            from models.demo.data import make  # lazy imports are followed
            make()
        """,
    "stages/demo/train.py": "def run(ctx):\n    from models.demo import fit\n",
    "stages/demo/validate.py": "def run(ctx):\n    pass\n",
    "stages/demo/evaluate.py": "def run(ctx):\n    import models.demo.data\n",
    "stages/demo/report.py": "def context(ev):\n    return {}\n",
    "stages/demo/report.md": "## What we measured\n",
    "models/__init__.py": "",
    "models/common/__init__.py": "",
    "models/common/stats.py": "",
    "models/demo/__init__.py": "",
    "models/demo/data.py": "from ..common import stats\nfrom .util import helper\n",
    "models/demo/util.py": "def helper():\n    pass\n",
    "models/demo/fit.py": "from . import util\n",
    "models/demo/heavy.py": "",
    "models/demo/cli.py": "from .fit import *\n",
}


@pytest.fixture()
def planted(tmp_path) -> Path:
    return _write(tmp_path, PLANTED)


def test_closure_follows_lazy_and_relative_imports_and_skips_type_checking_and_plumbing(planted):
    files = stage_files(planted, "demo", "prepare")
    assert files == [
        "icml25/__init__.py",
        "icml25/io.py",
        "icml25/stage.py",
        "models/__init__.py",
        "models/common/__init__.py",
        "models/common/stats.py",
        "models/demo/__init__.py",
        "models/demo/data.py",
        "models/demo/util.py",
        "stages/__init__.py",
        "stages/demo/__init__.py",
        "stages/demo/prepare.py",
    ]
    assert "models/demo/fit.py" in stage_files(planted, "demo", "train")
    assert "models/demo/fit.py" not in stage_files(planted, "demo", "evaluate")
    report = stage_files(planted, "demo", "report")
    assert "icml25/reporting.py" in report and not any(f.startswith("models/") for f in report)


def test_fingerprint_changes_with_the_code_a_stage_runs_only(planted):
    before = {s: fingerprint(planted, "demo", s) for s in STAGES}
    assert "stages/demo/prepare.py" not in before["prepare"]["files"]  # its own module is a direct DVC dep
    assert before["report"]["files"]["benchmarks/results/demo.json"] == "absent"
    (planted / "models/demo/fit.py").write_text("from . import util\n# an edit\n")
    after = {s: fingerprint(planted, "demo", s) for s in STAGES}
    assert [s for s in STAGES if before[s] != after[s]] == ["train"]
    (planted / "models/demo/cli.py").write_text("# the command line never reaches a stage\n")
    assert {s: fingerprint(planted, "demo", s) for s in STAGES} == after


def test_an_import_by_a_computed_name_cannot_be_tracked(planted):
    _write(
        planted, {"models/demo/fit.py": "import importlib\nmod = importlib.import_module(f'models.{1}')\n"}
    )
    with pytest.raises(UntrackableImport, match=r"models/demo/fit.py:2: imports a module by a computed name"):
        stage_files(planted, "demo", "train")
    stage_files(planted, "demo", "evaluate")  # a stage that does not run it is unaffected


def test_layering_violations_are_named(planted):
    assert layering_violations(planted) == []
    _write(
        planted,
        {
            "models/other/__init__.py": "",
            "models/other/x.py": "from models.demo import fit\n",  # sideways between papers
            "stages/demo/evaluate.py": "from models.demo.cli import main\nimport stages.other\n",
            "stages/other/__init__.py": "",
            "icml25/cli.py": "from flows import run\n",  # upward
            "models/common/stats.py": "import stages.demo\n",  # upward
        },
    )
    found = {(str(v.path), v.imported) for v in layering_violations(planted)}
    assert found == {
        ("models/other/x.py", "models.demo"),
        ("models/other/x.py", "models.demo.fit"),
        ("stages/demo/evaluate.py", "models.demo.cli"),
        ("stages/demo/evaluate.py", "stages.other"),
        ("icml25/cli.py", "flows"),
        ("models/common/stats.py", "stages"),
        ("models/common/stats.py", "stages.demo"),
    }


def test_the_project_keeps_the_layering(root):
    assert [str(v) for v in layering_violations(root)] == []


def test_every_stage_of_every_paper_is_tracked_and_stays_in_its_paper(root):
    graph = ImportGraph(root)
    slugs = implemented(load_params(root))
    for slug in slugs:
        for stage in STAGES:
            files = stage_files(root, slug, stage, graph)  # raises on an untrackable import
            assert f"stages/{slug}/{stage}.py" in files and "icml25/stage.py" in files
            assert not any(f.endswith("/cli.py") for f in files), (slug, stage)
            papers = {
                f.split("/")[1] for f in files if f.startswith(("models/", "stages/")) and f.count("/") > 1
            }
            assert papers <= {slug, "common"}, (slug, stage, papers)
        assert "icml25/reporting.py" in stage_files(root, slug, "report", graph)
