"""icml25.validation on small frames: columns checked by name (missing and unexpected ones named), types (a text
cell in a numeric column, a float where integers belong, a bool that is no number), exact row counts, values,
and the description of NumPy files."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from icml25.errors import ValidationFailed
from icml25.validation import (
    Column,
    Others,
    npz_arrays,
    observed_kind,
    usable,
    validate_frame,
    write_validation,
)

COLUMNS = [
    Column("x", min=-10, max=10),
    Column("n", kind="integer", min=0),
    Column("name", kind="string", values=("a", "b")),
    Column("flag", kind="bool", values=(True,)),
]


def good() -> pd.DataFrame:
    return pd.DataFrame(
        {"x": [0.5, -1.0, 2.0], "n": [1, 2, 3], "name": ["a", "b", "a"], "flag": [True, True, True]}
    )


def failures(frame, columns=COLUMNS, **kwargs) -> list[tuple[str, str | None, str]]:
    summary = validate_frame(frame, "t", columns, **kwargs)
    return [(f["check"], f["column"], f["detail"]) for f in summary["failures"]]


def message(summary) -> str:
    with pytest.raises(ValidationFailed) as info:
        write_validation(None, [summary])  # raises before anything is written
    return str(info.value)


def test_a_good_frame_passes_and_is_written(tmp_path):
    summary = validate_frame(good(), "t", COLUMNS, rows=3)
    assert summary["success"] and summary["failures"] == [] and usable(summary)
    write_validation(tmp_path, [summary])
    assert (tmp_path / "validation.json").exists()


def test_a_missing_column_is_named_and_makes_the_table_unusable():
    summary = validate_frame(good().drop(columns=["n"]), "t", COLUMNS)
    assert [(f["check"], f["column"]) for f in summary["failures"]] == [("columns", "n")]
    assert not usable(summary)
    assert "t.n (missing column)" in message(summary)


def test_an_unexpected_column_is_named():
    frame = good().assign(extra=1.0)
    assert failures(frame) == [("columns", "extra", "unexpected column")]


def test_a_text_cell_in_a_numeric_column_fails_naming_it():
    text = "x,n,name,flag\n0.5,1,a,True\nabc,2,b,True\n"
    frame = pd.read_csv(io.StringIO(text))
    assert observed_kind(frame["x"]) == "string"  # pandas reads the whole column as strings
    summary = validate_frame(frame, "t", COLUMNS)
    assert [(f["check"], f["column"]) for f in summary["failures"]] == [("type", "x")]
    assert summary["failures"][0]["examples"] == ["abc"]
    assert "t.x (expected number, found string, e.g. 'abc')" in message(summary)


def test_mixed_python_values_in_a_numeric_column_fail_cleanly():
    frame = good().astype({"x": object})
    frame.loc[1, "x"] = "oops"
    assert failures(frame) == [("type", "x", "expected number, found mixed, e.g. 'oops'")]


def test_a_float_is_not_an_integer_but_is_a_number():
    frame = good().astype({"n": float})
    frame.loc[1, "n"] = 2.5
    assert failures(frame) == [("type", "n", "expected integer, found float, e.g. 2.5")]
    assert failures(good().astype({"x": int})) == []  # integers are numbers


def test_a_null_in_an_integer_column_is_a_type_failure():
    frame = good().astype({"n": float})
    frame.loc[0, "n"] = np.nan
    assert failures(frame) == [("type", "n", "expected integer, found float, e.g. nan")]


def test_a_bool_is_not_a_number_and_a_number_is_not_a_bool():
    frame = good()
    frame["x"] = [True, False, True]
    frame["flag"] = [1, 1, 1]
    assert [(c, col) for c, col, _ in failures(frame)] == [("type", "x"), ("type", "flag")]


def test_a_string_column_holding_numbers_fails():
    frame = good()
    frame["name"] = [1, 2, 3]
    assert failures(frame) == [("type", "name", "expected string, found integer, e.g. 1")]


def test_row_counts_exact_floor_and_ceiling():
    assert failures(good(), rows=4) == [("rows", None, "3 rows, expected 4")]
    assert failures(good(), min_rows=5) == [("rows", None, "3 rows, expected at least 5")]
    assert failures(good(), max_rows=2) == [("rows", None, "3 rows, expected 1 to 2")]
    assert failures(good(), rows=3) == []


def test_values_out_of_range_or_set_and_nulls_are_named():
    frame = good()
    frame.loc[0, "x"] = 11.0
    frame.loc[1, "x"] = np.nan
    frame.loc[2, "name"] = "c"
    got = failures(frame)
    assert ("values", "name", "expect_column_values_to_be_in_set, 1 bad rows, e.g. 'c'") in got
    assert {(c, col) for c, col, _ in got} == {("values", "x"), ("values", "name")}
    assert usable(validate_frame(frame, "t", COLUMNS))  # bad values, right structure


def test_an_infinity_fails_finite_bounds():
    frame = good()
    frame.loc[2, "x"] = np.inf
    assert failures(frame, [Column("x", min=-1e300, max=1e300), *COLUMNS[1:]]) == [
        ("values", "x", "expect_column_values_to_be_between, 1 bad rows, e.g. inf")
    ]


def test_columns_in_order_when_asked():
    frame = good()[["n", "x", "name", "flag"]]
    assert failures(frame) == []
    assert [c for c, _, _ in failures(frame, ordered=True)] == ["columns"]


def test_others_are_counted_and_held_to_the_rule():
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0], "target": [0.0, 1.0]})
    spec = [Column("target")]
    assert failures(frame, spec, others=Others(2)) == []
    got = failures(frame.drop(columns=["b"]), spec, others=Others(2))
    assert got == [("columns", None, "2 columns, expected 3 (target and 2 more)")]
    assert failures(frame.drop(columns=["target"]), spec, others=Others(2))[0][:2] == ("columns", "target")
    frame["b"] = ["x", "y"]
    assert failures(frame, spec, others=Others(2))[0][:2] == ("type", "b")


def test_an_empty_table_fails_on_rows_only():
    frame = pd.read_csv(io.StringIO("x,n,name,flag\n"))
    assert failures(frame) == [("rows", None, "0 rows, expected at least 1")]


def test_observed_kinds():
    assert observed_kind(pd.Series([1, 2])) == "integer"
    assert observed_kind(pd.Series([1.0, np.nan])) == "float"
    assert observed_kind(pd.Series(["a", None])) == "string"
    assert observed_kind(pd.Series([True, False])) == "bool"
    assert observed_kind(pd.Series([1, "a"], dtype=object)) == "mixed"


def test_npz_arrays_describe_what_is_wrong(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, x=np.zeros((2, 3)), y=np.array(["1", "2"]), z=np.array([1, 2], dtype=object))
    expected = {"x": ("float", 2), "y": ("integer", 1), "z": ("integer", 1), "w": ("number", 1)}
    arrays, status = npz_arrays(path, expected)
    assert list(arrays) == ["x"]
    assert status == {
        "x": "ok",
        "y": "string, expected integer",
        "z": "pickled objects",
        "w": "missing",
    }
    assert npz_arrays(path, {"x": ("float", 3)})[1] == {"x": "2-d, expected 3-d"}
    assert npz_arrays(tmp_path / "none.npz", {"x": ("float", 2)})[1] == {"x": "no such file"}
    (tmp_path / "bad.npz").write_text("not a zip")
    assert npz_arrays(tmp_path / "bad.npz", {"x": ("float", 2)})[1]["x"].startswith("unreadable file")


def test_an_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError, match="kind 'numeric'"):
        Column("x", kind="numeric")
