"""Exact code dependencies (icml25.codedeps): the closure of a stage from the source, on a planted project and
on the real one; the fingerprint, what changes it (code) and what does not (comments, docstrings, layout), on a
copy of the real code; and the layering rule."""

from __future__ import annotations

import ast
import hashlib
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from icml25 import io
from icml25.codedeps import (
    HASH,
    ImportGraph,
    UntrackableImport,
    _normalise,
    fingerprint,
    layering_violations,
    source_digest,
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
    (planted / "models/demo/fit.py").write_text("from . import util\n# an edit that changes no number\n")
    assert {s: fingerprint(planted, "demo", s) for s in STAGES} == before
    (planted / "models/demo/fit.py").write_text("from . import util\nSTEPS = 2\n")
    after = {s: fingerprint(planted, "demo", s) for s in STAGES}
    assert [s for s in STAGES if before[s] != after[s]] == ["train"]
    (planted / "models/demo/cli.py").write_text("# the command line never reaches a stage\n")
    assert {s: fingerprint(planted, "demo", s) for s in STAGES} == after


def test_the_fingerprint_document_names_its_hash_and_is_deterministic(planted):
    doc = fingerprint(planted, "demo", "train")
    assert list(doc) == ["stage", "hash", "files"] and doc["stage"] == "train@demo"
    assert doc["hash"] == HASH == f"ast-v1 (python {sys.version_info.major}.{sys.version_info.minor})"
    assert list(doc["files"]) == sorted(doc["files"])
    assert io.dumps(fingerprint(planted, "demo", "train", ImportGraph(planted))) == io.dumps(doc)


def test_a_non_python_file_is_hashed_byte_for_byte(planted):
    bench = planted / "benchmarks/results/demo.json"
    bench.parent.mkdir(parents=True)
    bench.write_text('{"a": 1}\n')
    doc = fingerprint(planted, "demo", "report")
    assert doc["files"]["benchmarks/results/demo.json"] == hashlib.md5(bench.read_bytes()).hexdigest()
    bench.write_text('{"a":  1}\n')  # the same JSON in other bytes: DVC itself would see a change too
    assert fingerprint(planted, "demo", "report") != doc


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("x = 1  # a comment\n", "\n\nx = 1\n"),
        ("x = (1 +\n     2)\n", "x = 1 + 2"),
        ("x = 'a'\n", 'x = "a"\n'),
        ("x = 1e3\n", "x = 1000.0\n"),
        ('"""Module doc."""\n', "# nothing but a comment\n"),
        ('def f():\n    """Doc."""\n', "def f():\n    pass\n"),  # both define f returning None
        ('def f():\n    """Doc."""\n', "def f(): ..."),
        ('def f():\n    """Doc."""\n    return 1\n', "def f():\n    return 1\n"),
        (
            'class A:\n    """Doc."""\n    x: int = 1\n    """Attribute doc."""\n',
            "class A:\n    x: int = 1\n",
        ),
        ("if x:\n    y = 1\n    'note'\nelse:\n    pass\n", "if x:\n    y = 1\nelse:\n    pass\n"),
    ],
)
def test_comments_docstrings_and_layout_do_not_change_a_source_digest(a, b):
    assert source_digest(a) == source_digest(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("x = 1\n", "x = 2\n"),
        ("x = 1\n", "x = 1.0\n"),
        ("x = 'a'\n", "x = 'b'\n"),  # a string that is used, not a docstring
        ("def f():\n    pass\n", "def f():\n    return 1\n"),
        ('def f():\n    """Doc."""\n', 'def g():\n    """Doc."""\n'),
        ('f"{x}"\n', "pass\n"),  # an f-string statement is evaluated (it calls format)
        ("a = 1\nb = 2\n", "b = 2\na = 1\n"),
        ("def f(x: int): pass\n", "def f(x: float): pass\n"),  # annotations are code (dataclasses read them)
    ],
)
def test_code_changes_a_source_digest(a, b):
    assert source_digest(a) != source_digest(b)


def test_the_normalised_tree_is_still_python():
    """A block whose only statements compiled to nothing gets ``pass`` back: no empty body, so it compiles."""
    tree = ast.parse("def f():\n    'doc'\nclass C:\n    ...\ntry:\n    x\nfinally:\n    'done'\n")
    tree.body = _normalise(tree.body, keep_empty=True)
    compile(ast.fix_missing_locations(tree), "<normalised>", "exec")
    assert ast.unparse(tree) == "def f():\n    pass\n\nclass C:\n    pass\ntry:\n    x\nfinally:\n    pass"


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
    graph = ImportGraph(root, keep_trees=False)
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


# ------------------------------------------------------------------- the fingerprints of a copy of the real code
@pytest.fixture()
def project(root, tmp_path) -> Path:
    """The project's Python packages and benchmark results, copied (the only files a fingerprint reads)."""
    work = tmp_path / "project"
    for package in ("icml25", "flows", "stages", "models"):
        shutil.copytree(root / package, work / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root / "benchmarks" / "results", work / "benchmarks" / "results")
    return work


def _papers(root: Path) -> list[str]:
    """Four papers spread over the catalogue: all 19 would take about a second per fingerprint pass."""
    return implemented(load_params(root))[::6]


def _fingerprints(work: Path, slugs: list[str]) -> dict[str, dict]:
    graph = ImportGraph(work)  # a fresh graph each time: it caches each file's digest
    return {f"{stage}@{slug}": fingerprint(work, slug, stage, graph) for slug in slugs for stage in STAGES}


def _edit_first_constant(path: Path) -> str:
    """Change the first number in ``path`` (the first string that is not a docstring if it has none), in place
    (every other byte kept); returns what changed."""
    source = path.read_text()
    tree = ast.parse(source)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and ast.get_docstring(node, clean=False) is not None
    }
    constants = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and id(node) not in docs
        and type(node.value) in (int, float, str)
        and node.lineno == node.end_lineno
    ]
    assert constants, f"no constant to change in {path}"
    node = min(constants, key=lambda n: (isinstance(n.value, str), n.lineno, n.col_offset))
    new = repr(node.value + "_edited" if isinstance(node.value, str) else node.value + 1)
    lines = source.splitlines(keepends=True)
    line = lines[node.lineno - 1].encode()  # ast offsets count UTF-8 bytes
    lines[node.lineno - 1] = (line[: node.col_offset] + new.encode() + line[node.end_col_offset :]).decode()
    path.write_text("".join(lines))
    return f"{path.name}:{node.lineno}: {node.value!r} -> {new}"


def _docstrings_edited_and_reformatted(source: str) -> str:
    """``source`` printed again from its tree (other quotes, parentheses and line breaks, no comments), with
    every module, class and function docstring edited."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if ast.get_docstring(node, clean=False) is not None:
                node.body[0].value.value += " (edited)"
    return ast.unparse(tree) + "\n"


def test_comments_docstrings_and_layout_of_the_stage_context_change_no_fingerprint(root, project):
    """icml25/stage.py runs in every stage: when its bytes were hashed, a comment there re-ran all 95 stages."""
    slugs = _papers(root)
    stage_py = project / "icml25" / "stage.py"
    original = stage_py.read_text()
    before = _fingerprints(project, slugs)
    assert all("icml25/stage.py" in doc["files"] for doc in before.values())

    commented = original.replace('"""', '"""An edited docstring.\n\n', 1).replace(
        "\nclass ", "\n\n# a comment\n\nclass "
    )
    stage_py.write_text(commented + "\n\n# a trailing comment\n")
    assert stage_py.read_text() != original
    assert _fingerprints(project, slugs) == before

    stage_py.write_text(_docstrings_edited_and_reformatted(original))
    assert stage_py.read_text() != original
    assert _fingerprints(project, slugs) == before


def test_a_changed_constant_in_the_stage_context_changes_every_stage_fingerprint(root, project):
    slugs = _papers(root)
    before = _fingerprints(project, slugs)
    edit = _edit_first_constant(project / "icml25" / "stage.py")
    after = _fingerprints(project, slugs)
    assert len(before) == 5 * len(slugs) >= 20
    changed = {
        s for s in before if after[s]["files"]["icml25/stage.py"] != before[s]["files"]["icml25/stage.py"]
    }
    assert changed == set(before), edit


def test_a_changed_constant_in_a_papers_module_changes_only_the_stages_that_run_it(root, project):
    """The first model module (in catalogue order, not a package's __init__) that some of its paper's stages run
    and others do not; two other papers' stages stay as they were."""
    graph = ImportGraph(project, keep_trees=False)
    for slug in implemented(load_params(root)):
        runs = {stage: set(stage_files(project, slug, stage, graph)) for stage in STAGES}
        modules = sorted(
            f for f in set().union(*runs.values()) if f.startswith(f"models/{slug}/") and "__init__" not in f
        )
        picked = next((f for f in modules if 0 < sum(f in r for r in runs.values()) < len(STAGES)), None)
        if picked:
            break
    else:
        pytest.skip("no paper has a model module that only some of its stages run")
    slugs = [slug, *[s for s in _papers(root) if s != slug][:2]]
    before = _fingerprints(project, slugs)
    edit = _edit_first_constant(project / picked)
    after = _fingerprints(project, slugs)
    changed = {s for s in before if after[s] != before[s]}
    assert changed == {f"{stage}@{slug}" for stage in STAGES if picked in runs[stage]}, edit
    assert 0 < len(changed) < len(STAGES)
