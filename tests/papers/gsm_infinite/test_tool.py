"""`icml25 gsm_infinite evaluate`'s results file and model path, checked before any model is loaded: a
``--results`` path in a missing folder, in a read-only folder, or naming a folder (each a 26-line traceback
before), the problems file itself, and a ``--local`` path that holds no model are one line naming the value,
exit 2, nothing written; an existing results file in a read-only folder is still appended to (resuming needs
nothing else). The model loader is never called on bad input (it took 20 s for the bundled GGUF file)."""

from __future__ import annotations

import os

import pytest

from tests.helpers import assert_refused, run_tool

SLUG = "gsm_infinite"
ROOT_CAN_WRITE = hasattr(os, "geteuid") and os.geteuid() == 0  # root writes through read-only modes


@pytest.fixture()
def problems(tmp_path):
    path = tmp_path / "problems.jsonl"
    status, _, err = run_tool(
        SLUG, "generate", "--subset", "symbolic", "--op", "2", "--n", "2", "-o", str(path)
    )
    assert status == 0, err
    return path


@pytest.fixture()
def no_model(monkeypatch):
    """Loading a local model fails the test: every refusal here must come before it."""
    from models.gsm_infinite import harness

    def refuse(self, path, *args, **kwargs):
        raise AssertionError(f"the model {path} was loaded before the input was checked")

    monkeypatch.setattr(harness.LocalTransformers, "__init__", refuse)


def _read_only(folder, monkeypatch):
    """``folder`` made read-only; as root (who writes through a 0500 mode) the kernel's answer is stood in for."""
    folder.chmod(0o500)
    if ROOT_CAN_WRITE:
        real = os.access
        monkeypatch.setattr(
            os,
            "access",
            lambda p, mode, **kw: (
                False if (mode & os.W_OK and str(p) == str(folder)) else real(p, mode, **kw)
            ),
        )


def _snapshot(tmp_path):
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("case", ["missing folder", "read-only folder", "a directory", "the problems file"])
@pytest.mark.parametrize("backend", ["simulated", "local"])
def test_a_bad_results_path_is_one_line_before_any_model_loads(
    tmp_path, problems, no_model, monkeypatch, case, backend
):
    (tmp_path / "ro").mkdir()
    (tmp_path / "dir.jsonl").mkdir()
    results, message = {
        "missing folder": (tmp_path / "nowhere" / "r.jsonl", f"no such directory {tmp_path / 'nowhere'}"),
        "read-only folder": (tmp_path / "ro" / "r.jsonl", f"the directory {tmp_path / 'ro'} is not writable"),
        "a directory": (tmp_path / "dir.jsonl", "is a directory, not a file"),
        "the problems file": (problems, "the problems file itself"),
    }[case]
    if case == "read-only folder":
        _read_only(tmp_path / "ro", monkeypatch)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    chosen = ["--simulated", "exact"] if backend == "simulated" else ["--local", str(model)]
    before, text = _snapshot(tmp_path), problems.read_text()
    status, printed, err = run_tool(SLUG, "evaluate", str(problems), *chosen, "--results", str(results))
    assert_refused(status, printed, err, f"--results {results}: {message}")
    assert _snapshot(tmp_path) == before and problems.read_text() == text  # nothing written


def test_the_default_results_file_is_checked_too(tmp_path, problems, monkeypatch):
    _read_only(tmp_path, monkeypatch)
    default = problems.with_name("problems.results.jsonl")
    status, printed, err = run_tool(SLUG, "evaluate", str(problems), "--simulated", "exact")
    assert_refused(status, printed, err, f"--results {default}: the directory {tmp_path} is not writable")
    assert not default.exists()


def test_an_existing_results_file_in_a_read_only_folder_is_resumed(tmp_path, problems, monkeypatch):
    results = tmp_path / "r.jsonl"
    assert (
        run_tool(SLUG, "evaluate", str(problems), "--simulated", "exact", "--results", str(results))[0] == 0
    )
    lines = results.read_text().splitlines()
    results.write_text(lines[0] + "\n")  # one reply lost
    _read_only(tmp_path, monkeypatch)
    status, printed, err = run_tool(
        SLUG, "evaluate", str(problems), "--simulated", "exact", "--results", str(results)
    )
    assert status == 0 and "1 new replies (2 in" in printed, err
    assert len(results.read_text().splitlines()) == 2


def _file(path, data: bytes):
    path.write_bytes(data)
    return path


def _folder(path):
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "gone", "no such file or folder"),
        (lambda d: _folder(d / "empty"), "not a transformers model folder (it has no config.json)"),
        (lambda d: _file(d / "m.gguf", b"\0" * 64), "not a GGUF file"),
        (lambda d: _file(d / "m.bin", b"GGUF" * 16), "not a GGUF file"),
    ],
    ids=["missing", "folder-without-config", "gguf-without-magic", "not-gguf-suffix"],
)
def test_a_local_path_without_a_model_is_refused_before_loading(tmp_path, problems, no_model, make, message):
    model = make(tmp_path)
    status, printed, err = run_tool(SLUG, "evaluate", str(problems), "--local", str(model))
    assert_refused(status, printed, err, f"--local {model}: {message}")
    assert not problems.with_name("problems.results.jsonl").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-tokens", "0"], "--max-tokens must be >= 1, got 0"),
        (["--temperature", "-1"], "--temperature must be a finite number >= 0, got -1"),
        (["--temperature", "nan"], "--temperature must be a finite number >= 0, got nan"),
    ],
)
def test_bad_sampling_settings_are_refused_before_any_request(problems, args, message):
    status, printed, err = run_tool(
        SLUG, "evaluate", str(problems), "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", *args
    )
    assert_refused(status, printed, err, message)
