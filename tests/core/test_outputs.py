"""The tools' output paths (issue 14, item 9): a missing folder, a directory, a read-only folder or file is one
line and exit 2 before any work, and no `.NAME.tmp` is left behind, for every tool that writes `-o PATH`."""

from __future__ import annotations

import os

import pytest

from flows.cli import main as cli_main
from icml25.errors import UserError
from icml25.outputs import atomic_output, check_output

TOOLS = {
    "cross_conformal": ["cross_conformal", "predict", "{data}", "--target", "y", "-o", "{out}"],
    "sr_pareto": ["sr_pareto", "front", "{data}", "--target", "y", "--max-length", "1", "-o", "{out}"],
    "gsm_infinite": [
        "gsm_infinite",
        "generate",
        "--subset",
        "symbolic",
        "--op",
        "2",
        "--n",
        "1",
        "-o",
        "{out}",
    ],
}
ROOT_CAN_WRITE = hasattr(os, "geteuid") and os.geteuid() == 0  # root writes through read-only modes


def _cases(tmp_path):
    ro_dir = tmp_path / "ro"
    ro_dir.mkdir()
    ro_file = tmp_path / "ro_file.csv"
    ro_file.write_text("old\n")
    (tmp_path / "dir.csv").mkdir()
    cases = {
        "missing folder": (tmp_path / "nowhere" / "out.csv", "no such directory"),
        "a directory": (tmp_path / "dir.csv", "is a directory, not a file"),
    }
    if not ROOT_CAN_WRITE:
        ro_dir.chmod(0o500)
        ro_file.chmod(0o400)
        cases["read-only folder"] = (ro_dir / "out.csv", "is not writable")
        cases["read-only file"] = (ro_file, "the file is not writable")
    return cases


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_a_bad_output_path_is_one_line_before_any_work(tool, tmp_path, capsys):
    data = tmp_path / "data.csv"
    data.write_text("x,y\n" + "".join(f"{i},{2 * i + 1}\n" for i in range(30)))
    for name, (out, message) in _cases(tmp_path).items():
        before = sorted(p.name for p in tmp_path.rglob("*"))
        argv = [a.format(data=data, out=out) for a in TOOLS[tool]]
        assert cli_main(argv) == 2, (tool, name)
        err = capsys.readouterr().err
        assert message in err and str(out) in err and len(err.strip().splitlines()) == 1, (tool, name, err)
        assert sorted(p.name for p in tmp_path.rglob("*")) == before, (tool, name)  # nothing written


def test_an_interrupted_write_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "front.csv"
    out.write_text("previous\n")
    with pytest.raises(KeyboardInterrupt), atomic_output(out) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert out.read_text() == "previous\n" and sorted(p.name for p in tmp_path.iterdir()) == ["front.csv"]
    with atomic_output(out) as tmp:
        tmp.write_text("new\n")
    assert out.read_text() == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["front.csv"]
    with pytest.raises(UserError, match="is a directory"):
        check_output(tmp_path)
