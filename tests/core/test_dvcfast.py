"""icml25.dvcfast: the lock file written through libyaml is the lock file DVC writes, byte for byte."""

from __future__ import annotations

import copy
import io
import subprocess
import sys
from collections import OrderedDict

import pytest

from icml25 import dvcfast
from tests.helpers import ROOT, dvc

VALUES = [
    0.1, 1e-5, 3.0, 1e20, 2.5e-12, -0.0, 123456789.123, float("inf"), 1 / 3, 0, -7, 12345678901234567890,
    True, False, "2.0", "yes", "no", "null", "0755", "a: b", "x#y", " lead", "trail ", "", "ünïcode", "@at",
    "`tick", "!bang", "%pct", "1e3", "-", "~", "md5:abc", "a'b", 'a"b', "{brace}", "[br]", "*star", "&amp",
    "?q", "|pipe", ">gt", "very long string " * 10, "2026-12-06", "0x1F", "1_000", ".5", "+1", "NaN", ".inf",
    [1, 2.5, "s"], [], {}, {"a": [{"b": 1}]},
]  # fmt: skip


def _stock(data) -> str:
    from dvc.utils.serialize._yaml import _dump

    out = io.StringIO()
    _dump(data, out)
    return out.getvalue()


def _lock(values) -> dict:
    """A lock document as DVC builds one: OrderedDicts, each value in a stage's params."""
    stages = OrderedDict()
    for i, v in enumerate(values):
        params = OrderedDict([(f"papers.p.k{i}", v), ("papers.p.n", {"nested": copy.deepcopy(v)})])
        out = OrderedDict([("path", "data/x"), ("hash", "md5"), ("md5", "0" * 32 + ".dir"), ("size", 1)])
        stages[f"s{i}@p"] = OrderedDict(
            [("cmd", "python -m x"), ("params", {"params.yaml": params}), ("outs", [out])]
        )
    return {"schema": "2.0", "stages": stages}


def test_the_projects_lock_file_round_trips_to_the_same_bytes_as_dvcs():
    from dvc.utils.serialize._yaml import parse_yaml_for_update

    text = (ROOT / "dvc.lock").read_text()
    assert dvcfast.dump_lock(dvcfast.load_lock(text)) == _stock(parse_yaml_for_update(text, "dvc.lock"))


def test_new_entries_of_every_kind_of_value_are_written_as_dvc_writes_them():
    doc = _lock(VALUES)
    assert dvcfast._emits_alike(doc)  # the libyaml path is the one under test
    assert dvcfast.dump_lock(doc) == _stock(doc)
    text = dvcfast.dump_lock(doc)
    assert dvcfast.dump_lock(dvcfast.load_lock(text)) == text


@pytest.mark.parametrize("value", [None, "two\nlines", "shared"])
def test_what_the_emitters_write_differently_goes_to_dvcs_dumper(value):
    shared = [1, 2]
    doc = _lock([shared, shared] if value == "shared" else [value])
    assert not dvcfast._emits_alike(doc)
    assert dvcfast.dump_lock(doc) == _stock(doc)
    # the libyaml emitter alone would differ here: the fallback is what keeps the bytes
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    yaml.default_flow_style, yaml.sort_base_mapping_type_on_output = False, False
    raw = io.StringIO()
    yaml.dump(dvcfast._plain(doc), raw)
    assert raw.getvalue() != _stock(doc)


def test_only_lock_files_are_read_and_written_the_fast_way(tmp_path):
    import dvc.dvcfile as dvcfile

    pipeline = tmp_path / "dvc.yaml"
    pipeline.write_text("# a comment DVC keeps\nstages:\n  a:\n    cmd: echo a  # and this one\n")
    lock = tmp_path / "dvc.lock"
    with dvcfast.patched() as on:
        assert on
        with dvcfile.modify_yaml(pipeline) as data:
            data["stages"]["a"]["cmd"] = "echo b"
        with dvcfile.modify_yaml(lock) as data:
            data.update({"schema": "2.0", "stages": {"a": OrderedDict([("cmd", "echo b")])}})
    assert pipeline.read_text() == "# a comment DVC keeps\nstages:\n  a:\n    cmd: echo b  # and this one\n"
    assert lock.read_text() == "schema: '2.0'\nstages:\n  a:\n    cmd: echo b\n"
    assert dvcfile.modify_yaml.__module__ == "dvc.utils.serialize._yaml"  # unpatched after the block


def test_icml25_dvc_writes_the_lock_file_plain_dvc_writes(tmp_path):
    """The same stages reproduced by `dvc` and by `icml25 dvc` in two copies of a repository: same dvc.lock."""
    locks = []
    for name, cmd in (
        ("plain", [sys.executable, "-m", "dvc"]),
        ("fast", [sys.executable, "-m", "icml25", "dvc"]),
    ):
        repo = tmp_path / name
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        dvc(repo, "init", "-q")
        (repo / "params.yaml").write_text("lr: 1.0e-05\nname: '2.0'\nlayers: [1, 2]\n")
        (repo / "dvc.yaml").write_text(
            "stages:\n"
            "  a:\n    cmd: echo a > a.txt\n    params: [lr, name, layers]\n    outs: [a.txt]\n"
            "  b:\n    cmd: cat a.txt > b.txt\n    deps: [a.txt]\n    outs: [b.txt]\n"
        )
        from icml25.scratch import dvc_env

        out = subprocess.run([*cmd, "repro"], cwd=repo, env=dvc_env(), capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        locks.append((repo / "dvc.lock").read_text())
    assert locks[0] == locks[1] and "lr:" in locks[0] and "b.txt" in locks[0]
