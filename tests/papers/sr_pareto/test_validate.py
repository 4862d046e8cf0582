"""sr_pareto's validate stage on tampered copies of the smoke profile's data sets: the target or a planted
feature deleted, a Friedman feature deleted (known by number only), text in a feature column: each a clean
ValidationFailed naming the column; the untouched files pass."""

from __future__ import annotations

import functools

import pandas as pd
import pytest

from icml25.runner import run_stage
from tests.helpers import prepared_main, validation_failure

SLUG = "sr_pareto"
pytestmark = pytest.mark.filterwarnings("ignore")


main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_the_prepared_files_pass(work):
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def drop(work, name: str, *columns: str) -> None:
    path = main(work) / f"{name}.csv"
    pd.read_csv(path).drop(columns=list(columns)).to_csv(path, index=False)


def test_deleted_columns_fail_naming_them(work):
    drop(work, "planted_len5", "target")
    drop(work, "planted_len7_chain", "x0")
    drop(work, "friedman1", "x1")
    message = failure(work)
    assert "planted_len5.target (missing column)" in message
    assert "planted_len7_chain.x0 (missing column)" in message
    assert "friedman1.<table> (2 columns, expected 3 (target and 2 more))" in message


def test_text_in_a_feature_column_fails_naming_it(work):
    path = main(work) / "planted_len5.csv"
    frame = pd.read_csv(path).astype({"x1": object})
    frame.loc[0, "x1"] = "oops"
    frame.to_csv(path, index=False)
    assert "planted_len5.x1 (expected number, found string, e.g. 'oops')" in failure(work)
