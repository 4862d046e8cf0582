"""`icml25 cross_conformal predict` and cross_conformal's data paths (a real CSV on a fixture the test writes)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from flows.cli import main as cli_main
from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import icml25, paper_params

SLUG = "cross_conformal"


@pytest.fixture()
def tables(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((130, 3)), columns=["a", "b", "c"])
    frame["y"] = 2 * frame.a - frame.b + 0.5 * rng.standard_normal(130)
    frame.iloc[:100].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[100:].to_csv(tmp_path / "test.csv", index=False)
    holes = frame.copy()
    holes.loc[holes.index[-4:], "y"] = np.nan
    holes.to_csv(tmp_path / "holes.csv", index=False)
    return tmp_path


def test_predict_command_writes_sets_with_coverage(tables, root):
    out = tables / "sets.csv"
    res = icml25(
        root,
        SLUG,
        "predict",
        str(tables / "train.csv"),
        "--target",
        "y",
        "--test",
        str(tables / "test.csv"),
        "--method",
        "e-mod",
        "--model",
        "linear",
        "-o",
        str(out),
    )
    assert res.returncode == 0, res.stderr
    sets = pd.read_csv(out)
    assert list(sets.columns) == ["row", "set", "lower", "upper", "width", "n_intervals", "y", "covered"]
    assert len(sets) == 30 and sets.covered.mean() >= 0.7
    assert np.all(sets.lower < sets.upper) and np.allclose(sets.width, sets.upper - sets.lower)


def test_predict_without_test_uses_the_rows_with_an_empty_target(tables, capsys):
    out = tables / "sets.json"
    code = cli_main(
        [
            SLUG,
            "predict",
            str(tables / "holes.csv"),
            "--target",
            "y",
            "--method",
            "eu-mod",
            "--model",
            "ridge",
            "--folds",
            "7",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    doc = json.loads(out.read_text())
    assert [d["row"] for d in doc] == [1, 2, 3, 4]
    assert all(lo < hi for d in doc for lo, hi in d["intervals"])
    # 126 training rows, K = 7: m = 18, no surplus
    assert "m = 18, 0 training rows calibrate nothing" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "0.5"], "alpha must lie in (0, 0.5), got 0.5"),
        (["--alpha", "0"], "alpha must lie in (0, 0.5), got 0.0"),
        (["--folds", "1"], "the number of folds K must be an integer >= 2, got 1"),
        (["--folds", "101"], "K = 101 exceeds the number of training points n = 100"),
        (["--method", "cv+"], "unknown method 'cv+'"),
        (["--model", "svm"], "unknown model 'svm'"),
        (["--target", "nope"], "no column 'nope'"),
        (["-o", "sets.txt"], "--output must end in .csv or .json"),
        # scikit-learn refused it after a fit, without naming it ("expected non-negative integer")
        (["--seed", "-1", "--model", "rf"], "--seed -1: must be an integer in [0, 2^32)"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tables, capsys, args, message):
    out = tables / "sets.csv"
    argv = [
        SLUG,
        "predict",
        str(tables / "train.csv"),
        "--target",
        "y",
        "--test",
        str(tables / "test.csv"),
        "-o",
        str(out),
        *args,
    ]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not list(tables.glob(".*tmp"))


def test_bad_tables_name_the_row_or_column(tables, capsys):
    train = pd.read_csv(tables / "train.csv")
    train.loc[6, "b"] = np.nan
    train.to_csv(tables / "nan.csv", index=False)
    assert (
        cli_main(
            [SLUG, "predict", str(tables / "nan.csv"), "--target", "y", "--test", str(tables / "test.csv")]
        )
        == 2
    )
    assert "1 row(s) with NaN or infinite values (first: row 7)" in capsys.readouterr().err
    pd.read_csv(tables / "test.csv").drop(columns="c").to_csv(tables / "short.csv", index=False)
    assert (
        cli_main(
            [SLUG, "predict", str(tables / "train.csv"), "--target", "y", "--test", str(tables / "short.csv")]
        )
        == 2
    )
    assert "TEST lacks the feature column 'c'" in capsys.readouterr().err
    assert cli_main([SLUG, "predict", str(tables / "train.csv"), "--target", "y"]) == 2
    assert "nothing to predict" in capsys.readouterr().err


def test_missing_file_is_a_clean_error_from_the_console(tmp_path, root):
    res = icml25(root, SLUG, "predict", str(tmp_path / "none.csv"), "--target", "y")
    assert res.returncode == 2 and "none.csv: no such file" in res.stderr and "Traceback" not in res.stderr


def _params(root, **prepare):
    small = {"n": 20, "p_grid": [3], "replications": 2, "real_splits": 1, "real_test": 10, "real_folds": [5]}
    return paper_params(root, SLUG, **{**small, **prepare})


def test_prepare_reads_a_real_csv_behind_the_source_switch(tmp_path, root):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.standard_normal((42, 2)), columns=["x1", "x2"])
    frame["Rings"] = frame.x1 + 3.0
    (tmp_path / "data" / SLUG / "input").mkdir(parents=True)
    frame.to_csv(tmp_path / "data" / SLUG / "input" / "abalone.csv", index=False)
    params = _params(root, real_source="csv", real_csv="abalone.csv", real_target="Rings")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(tmp_path, SLUG, "prepare")
    out = tmp_path / "data" / SLUG / "prepared" / "main"
    meta = json.loads((out / "meta.json").read_text())
    assert meta["real"] == {
        "name": "abalone.csv",
        "target": "Rings",
        "rows": 42,
        "features": 2,
        "n_train": 32,
        "n_test": 10,
        "splits": 1,
        "folds": [5],
    }
    folds = np.load(out / "real_splits.npz")["folds_K5"][0]
    assert np.sum(folds < 0) == 2 and sorted(np.bincount(folds[folds >= 0])) == [6] * 5  # 32 = 5 x 6 + 2
    assert pd.read_csv(out / "real.csv").target.tolist() == frame.Rings.tolist()


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        ({"real_source": "csv", "real_csv": "nowhere.csv"}, "nowhere.csv: no such file"),
        ({"real_test": 440}, "diabetes has 442 rows; real_test = 440 leaves 2 training rows"),
        (
            {"real_source": "csv", "real_csv": "/etc/hosts"},
            "real_csv: '/etc/hosts' must be a path inside data/",
        ),
        ({"n": 4, "folds": 5}, "n = 4, folds = 5: the number of folds K = 5 exceeds"),
    ],
)
def test_prepare_errors_name_the_bad_setting_and_write_nothing(tmp_path, root, prepare, message):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(_params(root, **prepare)))
    with pytest.raises(UserError, match=message):
        run_stage(tmp_path, SLUG, "prepare")
    assert not (tmp_path / "data" / SLUG / "prepared" / "main").exists()
