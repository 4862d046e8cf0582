"""autospeculative's validate stage on tampered copies of the smoke profile's prepared files (grids.csv,
mixture.csv, data.npz, meta.json): the untouched files pass; a grid with a repeated t fails naming grids.min_eta
(and the K it failed at), mixture weights not summing to one fail naming mixture.weights_sum, a data value of 3.0
fails naming data.max and a NaN naming data.nonfinite (each cleanly: ValidationFailed, no validation.json). And
prepare's npy source: a user's (n, d) array becomes data.npz as is and validates; a 1-D array, a missing file or
an empty name is one UserError naming it."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
import yaml

from icml25.runner import run_stage
from tests.helpers import failure_parts, prepared_main, rewrite_npz, validation_failure

SLUG = "autospeculative"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_untouched_files_pass(work):
    assert {p.name for p in main(work).iterdir()} == {"grids.csv", "mixture.csv", "data.npz", "meta.json"}
    pp = yaml.safe_load((work / "params.yaml").read_text())["papers"][SLUG]["prepare"]
    Ks = sorted({*pp["Ks"], pp["digits_K"]})
    grids = pd.read_csv(main(work) / "grids.csv")
    assert sorted(set(grids.K)) == Ks and len(grids) == sum(K + 1 for K in Ks)
    with np.load(main(work) / "data.npz") as z:
        assert z["x"].shape == (1797, 64) and z["x"].min() == -1.0 and z["x"].max() == 1.0
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_a_repeated_t_fails_naming_min_eta(work):
    path = main(work) / "grids.csv"
    grids = pd.read_csv(path)
    K = int(grids.K.max())
    first, second = (grids.index[(grids.K == K) & (grids.k == k)] for k in (4, 5))
    grids.loc[second, "t"] = grids.loc[first, "t"].to_numpy()
    grids.to_csv(path, index=False)
    parts = failure_parts(failure(work))
    assert set(parts) == {"grids.min_eta"}, parts
    assert f"K={K}" in parts["grids.min_eta"] and "0.0" in parts["grids.min_eta"], parts


@pytest.mark.slow  # one more validate run (~0.8 s)
def test_weights_not_summing_to_one_fail_naming_weights_sum(work):
    path = main(work) / "mixture.csv"
    mix = pd.read_csv(path)
    mix.loc[0, "weight"] = 0.2  # 0.2 + 7 / 8: 1.075
    mix.to_csv(path, index=False)
    parts = failure_parts(failure(work))
    assert set(parts) == {"mixture.weights_sum"}, parts
    assert "1.075" in parts["mixture.weights_sum"], parts


def _set_x(i: int, j: int, value: float):
    def change(x):
        x = x.copy()
        x[i, j] = value
        return x

    return change


def test_a_value_of_three_fails_naming_data_max(work):
    rewrite_npz(main(work) / "data.npz", x=_set_x(5, 7, 3.0))
    parts = failure_parts(failure(work))
    assert set(parts) == {"data.max"}, parts
    assert parts["data.max"] == "expect_column_values_to_be_between, 1 bad rows (dim=7), e.g. 3.0)", parts


@pytest.mark.slow  # one more validate run (~0.9 s)
def test_a_nan_fails_naming_data_nonfinite(work):
    rewrite_npz(main(work) / "data.npz", x=_set_x(0, 3, np.nan))
    parts = failure_parts(failure(work))
    # the dimension's range is NaN too, so min and max fail as nulls besides the count of non-finite values
    assert set(parts) == {"data.nonfinite", "data.min", "data.max"}, parts
    assert parts["data.nonfinite"] == "expect_column_values_to_be_in_set, 1 bad rows (dim=3), e.g. 1)", parts
    for name in ("data.min", "data.max"):
        assert parts[name] == "expect_column_values_to_not_be_null, 1 bad rows (dim=3), e.g. nan)", parts


# ------------------------------------------------------------------------------------------ source: npy
def _npy_root(work, name: str, array=None):
    """``work`` with params reading data/autospeculative/input/``name`` (written from ``array`` if given)."""
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"].update(source="npy", npy=name)
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    folder = work / "data" / SLUG / "input"
    folder.mkdir(parents=True, exist_ok=True)
    if array is not None:
        np.save(folder / name, array)
    return folder / name


def test_prepare_reads_a_user_npy_and_validate_passes(work):
    x = np.random.default_rng(0).uniform(-1, 1, (12, 5)).astype(np.float32)
    _npy_root(work, "mine.npy", x)
    run_stage(work, SLUG, "prepare")
    with np.load(main(work) / "data.npz") as z:
        np.testing.assert_array_equal(z["x"], x.astype(np.float64))
        assert z["x"].dtype == np.float64
    meta = yaml.safe_load((main(work) / "meta.json").read_text())
    assert meta["rows"] == 12 and meta["dim"] == 5 and meta["data"] == "mine.npy (12 x 5)"
    run_stage(work, SLUG, "validate")


@pytest.mark.parametrize(
    ("name", "array", "message"),
    [
        ("flat.npy", np.zeros(7), "expected a numeric (n, d) array with n >= 2, got float64 of shape (7,)"),
        ("gone.npy", None, "no such file (papers.autospeculative.prepare.npy)"),
    ],
    ids=["1-D", "missing"],
)
def test_prepare_refuses_a_bad_npy_in_one_line(work, name, array, message):
    from icml25.errors import UserError

    path = _npy_root(work, name, array)
    with pytest.raises(UserError) as info:
        run_stage(work, SLUG, "prepare")
    text = str(info.value)
    assert text == f"{path.resolve()}: {message}" and "\n" not in text, text


@pytest.mark.slow  # prepare refuses before any work (~0.3 s each)
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "papers.autospeculative.prepare.npy: empty"),
        ("../outside.npy", "must be a path inside data/autospeculative/input/"),
    ],
    ids=["empty", "outside"],
)
def test_prepare_refuses_an_empty_or_outside_name(work, name, message):
    from icml25.errors import UserError

    _npy_root(work, name)
    with pytest.raises(UserError, match=message):
        run_stage(work, SLUG, "prepare")


@pytest.mark.slow  # prepare refuses before any work (~0.3 s)
def test_prepare_refuses_a_file_that_is_not_npy(work):
    from icml25.errors import UserError

    path = _npy_root(work, "text.npy")
    path.write_text("1,2,3\n")
    with pytest.raises(UserError, match="text.npy: not a readable .npy array"):
        run_stage(work, SLUG, "prepare")
