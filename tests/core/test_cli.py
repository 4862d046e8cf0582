"""`icml25 --help` and `icml25 list`: all 19 papers, fast, no heavy imports; user errors exit 2 cleanly; the core
never imports the orchestration layer."""

from __future__ import annotations

import subprocess
import sys

from icml25.registry import CATALOGUE
from tests.helpers import icml25, with_planned

HEAVY = ("torch", "lightning", "great_expectations", "prefect", "dvc", "pandas", "stages", "models")


def test_list_shows_all_papers_with_status(root):
    out = icml25(root, "list")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()[1:]
    assert len(lines) == 19
    slugs = [line.split()[1] for line in lines]
    assert slugs == [e.slug for e in CATALOGUE]
    from icml25.params import implemented, load_params

    done = set(implemented(load_params(root)))
    assert {"model_independence", "ghost"} <= done
    for line in lines:
        if line.split()[1] in done:
            assert "implemented" in line
            held, total = line.split()[3].split("/")  # "4/5 results, 3/3 inv, 2 sim": results first
            assert line.split()[4].startswith("result") and 0 <= int(held) <= int(total)
        else:
            assert "planned" in line


def test_help_and_list_import_nothing_heavy(root):
    code = (
        "import sys, contextlib, io\n"
        "from flows.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['list'])\n"
        "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_core_commands_run_without_the_orchestration_layer(root):
    """`python -m icml25` (what DVC calls) is the core alone: it has no `run` and imports no flows module."""
    code = (
        "import sys, contextlib, io\n"
        "from icml25.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['list'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'flows'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    bad = subprocess.run(
        [sys.executable, "-m", "icml25", "run", "all"], cwd=root, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "invalid choice: 'run'" in bad.stderr


def test_unknown_paper_and_planned_paper(root, tmp_path):
    out = icml25(root, "run", "nope")
    assert out.returncode == 2 and "unknown paper 'nope'" in out.stderr and "Traceback" not in out.stderr
    work, slug = with_planned(root, tmp_path / "repo")
    out = icml25(work, "run", slug)
    assert out.returncode == 2 and "planned, not implemented" in out.stderr


def test_unknown_stage_is_an_argparse_error(root):
    out = icml25(root, "stage", "model_independence", "fly")
    assert out.returncode == 2 and "invalid choice: 'fly'" in out.stderr


def test_a_bad_command_line_is_one_line_naming_the_value(root, capsys):
    """Core commands and paper tools alike (icml25.cli.ToolParser): no usage block, exit 2, the value named."""
    from flows.cli import main

    tool = next(e.slug for e in CATALOGUE if e.has_tools)
    for argv, named in (
        (["stage", "model_independence", "fly"], "invalid choice: 'fly'"),
        (["s3", "serve", "--port", "eighty"], "invalid int value: 'eighty'"),
        ([tool, "no-such-verb"], "invalid choice: 'no-such-verb'"),
        ([], "the following arguments are required: COMMAND"),
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and named in err and "usage:" not in err, (argv, err)
        assert err.startswith("icml25: error: ") and "--help)" in err, err


def test_s3_serve_is_a_command(root):
    out = icml25(root, "s3", "serve", "--help")
    assert out.returncode == 0 and "--port" in out.stdout and "--bucket" in out.stdout
