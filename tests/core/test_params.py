"""Bad parameters fail before any work, naming the key path; exit 2, no traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from icml25.errors import UserError
from icml25.params import check_paper, load_params, merged_profile
from icml25.registry import load_paper
from tests.helpers import icml25

SLUG = "model_independence"


@pytest.fixture()
def params(root):
    return load_params(root)


def _check(params):
    check_paper(params, SLUG, load_paper(SLUG).schema)


def test_committed_params_and_profiles_are_valid(root, params):
    _check(params)
    for profile in ("smoke", "paper"):
        _check(merged_profile(root, profile))


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("train", "steps", 10, "papers.model_independence.train.steps: unknown key"),
        ("train", "base_steps", "many", "papers.model_independence.train.base_steps: must be int, got str"),
        ("train", "base_steps", -5, "papers.model_independence.train.base_steps: must be >= 1, got -5"),
        ("train", "n_pairs", 1.5, "papers.model_independence.train.n_pairs: must be int"),
        ("train", "ft_classes", [0, 12], "papers.model_independence.train.ft_classes[1]: must be <= 9"),
        (
            "evaluate",
            "match_metric",
            "manhattan",
            "papers.model_independence.evaluate.match_metric: must be one of",
        ),
        ("prepare", "test_fraction", 1.5, "papers.model_independence.prepare.test_fraction: must be < 1.0"),
        ("train", "lr", float("inf"), "papers.model_independence.train.lr: must be a finite number, got inf"),
        (
            "train",
            "ft_lr",
            float("nan"),
            "papers.model_independence.train.ft_lr: must be a finite number, got nan",
        ),
        ("validate", "strict", True, "papers.model_independence.validate.strict: unknown key"),
    ],
)
def test_bad_values_name_their_key_path(params, section, key, value, message):
    params["papers"][SLUG][section][key] = value
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _check(params)


def test_missing_section_and_bad_bool(params):
    del params["papers"][SLUG]["report"]
    with pytest.raises(UserError, match="papers.model_independence.report: missing"):
        _check(params)


def test_bool_is_not_an_int(params):
    params["papers"][SLUG]["train"]["n_blocks"] = True
    with pytest.raises(UserError, match="n_blocks: must be int, got bool"):
        _check(params)


def _copy_checkout(root: Path, dest: Path) -> Path:
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(root / name, dest / name)
    return dest


def test_cli_rejects_bad_params_before_any_work(root, tmp_path):
    work = _copy_checkout(root, tmp_path)
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["papers"][SLUG]["train"]["base_steps"] = -3
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    for args in (["check"], ["run", SLUG], ["stage", SLUG, "prepare"]):
        out = icml25(work, *args)
        assert out.returncode == 2, (args, out.stderr)
        assert "papers.model_independence.train.base_steps: must be >= 1, got -3" in out.stderr
        assert "Traceback" not in out.stderr + out.stdout
    assert sorted(p.name for p in work.iterdir()) == ["dvc.yaml", "params.yaml"]  # nothing written


def test_profile_apply_writes_the_merged_params(root, tmp_path):
    work = _copy_checkout(root, tmp_path)
    shutil.copytree(root / "profiles", work / "profiles")
    out = icml25(work, "profile", "apply", "smoke")
    assert out.returncode == 0, out.stderr
    applied = yaml.safe_load((work / "params.yaml").read_text())
    assert applied == merged_profile(root, "smoke") and applied["profile"] == "smoke"
    smoke = yaml.safe_load((root / "profiles" / "smoke.yaml").read_text())
    assert applied["papers"][SLUG]["train"]["n_pairs"] == smoke["papers"][SLUG]["train"]["n_pairs"]
    _check(applied)
    out = icml25(work, "profile", "apply", "huge")
    assert out.returncode == 2 and "invalid choice: 'huge'" in out.stderr


@pytest.mark.parametrize(
    "tail, where, message",
    [
        (
            "profile: smoke\n",
            ":{n}:1: ",
            "found duplicate key profile",
        ),  # issue 14 (7): was a 40-line traceback
        ("x: [1, 2\n", ":{m}:1: ", "expected ',' or ']'"),
        ("x: a: b\n", ":{n}:5: ", "mapping values are not allowed here"),
    ],
)
def test_a_yaml_error_is_one_line_with_file_line_and_column(root, tmp_path, tail, where, message):
    work = _copy_checkout(root, tmp_path)
    text = (work / "params.yaml").read_text()
    n = text.count("\n") + 1  # the appended line, 1-based
    (work / "params.yaml").write_text(text + tail)
    with pytest.raises(UserError) as err:
        load_params(work)
    assert f"params.yaml{where.format(n=n, m=n + 1)}invalid YAML: " in str(err.value) and message in str(
        err.value
    )
    for args in (["check"], ["list"], ["stage", SLUG, "prepare"]):
        out = icml25(work, *args)
        assert out.returncode == 2 and "Traceback" not in out.stderr + out.stdout, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and message in out.stderr, (args, out.stderr)


def test_an_empty_params_file_is_an_error_not_a_checkout_without_papers(root, tmp_path):
    work = _copy_checkout(root, tmp_path)
    (work / "params.yaml").write_text("\n")
    out = icml25(work, "check")
    assert out.returncode == 2 and "missing top-level key(s) profile, papers" in out.stderr, out.stderr
