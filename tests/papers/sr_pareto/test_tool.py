"""`icml25 sr_pareto front` (the installed command once, then in process) and sr_pareto's data paths (PMLB files
on a fixture the test writes)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from flows.cli import main as cli_main
from icml25.errors import UserError
from icml25.runner import run_stage
from models.sr_pareto.data import planted
from tests.helpers import icml25, paper_params

COLUMNS = "EquationLength,EquationStructure,EquationParameters,NumericalIterations,MSE,R2"


@pytest.fixture()
def csv(tmp_path):
    path = tmp_path / "data.csv"
    planted("planted_len3", 40, 0).rename(columns={"target": "y"}).to_csv(path, index=False)
    return path


def test_front_command_writes_the_published_columns(csv, tmp_path, root):
    out = tmp_path / "front.csv"
    res = icml25(root, "sr_pareto", "front", str(csv), "--target", "y", "--max-length", "3", "-o", str(out))
    assert res.returncode == 0, res.stderr
    text = out.read_text().splitlines()
    assert text[0] == COLUMNS
    front = pd.read_csv(out)
    assert front.EquationLength.tolist() == [1, 3]
    assert front.EquationStructure.iloc[1] == "Sub(xdata[0],xdata[1])" and front.R2.iloc[1] >= 1 - 1e-8


@pytest.mark.parametrize(
    ("edit", "args", "message"),
    [
        (None, ["--target", "nope"], "no column 'nope'"),
        (lambda f: f.assign(x1=["a"] * len(f)), ["--target", "y"], "non-numeric column(s): x1"),
        (lambda f: f.assign(x0=[np.nan] + f.x0.tolist()[1:]), ["--target", "y"], "1 row(s) with NaN"),
        (lambda f: f.head(5), ["--target", "y", "--max-length", "7"], "5 rows; at least 8 are needed"),
        (None, ["--target", "y", "--max-length", "4"], "odd number of nodes from 1 to 9, got 4"),
        (None, ["--target", "y", "--optimizer", "Adam"], "unknown optimizer 'Adam'"),
        (lambda f: f.assign(x1=1.0), ["--target", "y"], "constant column(s): x1"),
        # NumPy refused it once the search began, without naming it ("Seed must be between 0 and 2**32 - 1")
        (None, ["--target", "y", "--seed", "-1"], "--seed -1: must be an integer in [0, 2^32)"),
        (None, ["--target", "y", "--seed", str(2**32)], "--seed 4294967296: must be an integer in [0, 2^32)"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(csv, tmp_path, capsys, edit, args, message):
    if edit:
        edit(pd.read_csv(csv)).to_csv(csv, index=False)
    out = tmp_path / "front.csv"
    code = cli_main(["sr_pareto", "front", str(csv), *args, "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize(("scale", "message"), [(1e300, "overflows"), (1e-300, "underflows")])
def test_a_target_whose_squares_leave_float64_is_refused(csv, tmp_path, capsys, scale, message):
    """y * 1e300 used to give R2 = 1.0 for every length with an empty MSE (the squared deviations overflowed,
    every z-score became 0); y * 1e-300 an empty front. Now a one-line error that says what to do."""
    frame = pd.read_csv(csv)
    frame.assign(y=frame.y * scale).to_csv(csv, index=False)
    out = tmp_path / "front.csv"
    code = cli_main(["sr_pareto", "front", str(csv), "--target", "y", "--max-length", "3", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"column 'y': the target's standard deviation is about 1e{int(np.log10(scale))}" in err
    assert f"MSE column, {message} float64; rescale the target" in err
    assert not out.exists()


@pytest.mark.parametrize("column", ["x0", "y"])
def test_extreme_but_representable_scales_give_the_true_front(csv, tmp_path, column):
    """Features of scale 1e300 (whose squares overflow) are z-scored on a rescaled copy: the planted Sub(x0, x1)
    is found exactly (R2 was 0.0 before). A target of scale 1e150 keeps a finite MSE in its own units."""
    frame = pd.read_csv(csv)
    scale = 1e300 if column == "x0" else 1e150
    if column == "x0":
        frame = frame.assign(x0=frame.x0 * scale, x1=frame.x1 * scale)
    else:
        frame = frame.assign(y=frame.y * scale)
    frame.to_csv(csv, index=False)
    out = tmp_path / "front.csv"
    assert (
        cli_main(["sr_pareto", "front", str(csv), "--target", "y", "--max-length", "3", "-o", str(out)]) == 0
    )
    front = pd.read_csv(out)
    assert front.EquationStructure.iloc[1] == "Sub(xdata[0],xdata[1])" and front.R2.iloc[1] >= 1 - 1e-8
    assert np.isfinite(front.MSE).all() and (front.MSE >= 0).all()
    y_var = float(np.var(frame.y / scale)) * scale**2 if column == "y" else float(np.var(frame.y))
    assert front.MSE.iloc[0] == pytest.approx(y_var * (1 - front.R2.iloc[0]), rel=1e-6)


def test_missing_file_is_a_clean_error(tmp_path, capsys):
    code = cli_main(["sr_pareto", "front", str(tmp_path / "none.csv"), "--target", "y"])
    err = capsys.readouterr().err
    assert code == 2 and "no such file" in err and "Traceback" not in err


def write_pmlb(root, name, rows=30):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.standard_normal(rows), "b": rng.standard_normal(rows)})
    frame["target"] = frame.a * frame.b
    (root / name).mkdir(parents=True)
    frame.to_csv(root / name / f"{name}.tsv.gz", sep="\t", index=False, compression="gzip")


def _params(root, **prepare):
    return paper_params(root, "sr_pareto", **prepare)


def test_prepare_reads_pmlb_files_behind_the_source_switch(tmp_path, root):
    write_pmlb(tmp_path / "data" / "sr_pareto" / "input" / "pmlb", "192_vineyard")
    params = _params(root, source="pmlb", pmlb_root="pmlb", pmlb_names=["192_vineyard"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(tmp_path, "sr_pareto", "prepare")
    out = tmp_path / "data" / "sr_pareto" / "prepared" / "main"
    meta = json.loads((out / "meta.json").read_text())
    assert meta["datasets"][0] == {"name": "192_vineyard", "rows": 30, "features": 2, "planted": None}
    assert list(pd.read_csv(out / "192_vineyard.csv").columns) == ["a", "b", "target"]
    params = _params(root, source="pmlb", pmlb_root="pmlb", pmlb_names=["228_elusage"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(UserError, match="228_elusage.*not found.*no downloads"):
        run_stage(tmp_path, "sr_pareto", "prepare")
    params = _params(root, source="pmlb", pmlb_root="../../../params.yaml", pmlb_names=["192_vineyard"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(UserError, match="papers.sr_pareto.prepare.pmlb_root: .* must be a path inside"):
        run_stage(tmp_path, "sr_pareto", "prepare")
