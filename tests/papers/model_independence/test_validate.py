"""model_independence's validate stage on tampered copies of the smoke profile's train.csv and test.csv: a pixel
or the label column deleted, text in a pixel column, a lost row: each a clean ValidationFailed naming the
column; the untouched files pass."""

from __future__ import annotations

import functools

import pandas as pd

from icml25.runner import run_stage
from tests.helpers import prepared_main, validation_failure

SLUG = "model_independence"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_the_prepared_files_pass(work):
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_deleted_columns_fail_naming_them(work):
    path = main(work) / "train.csv"
    pd.read_csv(path).drop(columns=["label", "p10"]).to_csv(path, index=False)
    message = failure(work)
    assert "train.label (missing column)" in message and "train.p10 (missing column)" in message


def test_text_in_a_pixel_column_fails_naming_it(work):
    path = main(work) / "test.csv"
    frame = pd.read_csv(path).astype({"p5": object})
    frame.loc[3, "p5"] = "dark"
    frame.to_csv(path, index=False)
    assert "test.p5 (expected integer, found string, e.g. 'dark')" in failure(work)


def test_a_lost_row_fails_on_the_image_count(work):
    path = main(work) / "test.csv"
    pd.read_csv(path).iloc[1:].to_csv(path, index=False)
    assert "splits.images (expect_column_values_to_be_in_set, 1 bad rows, e.g. 1796)" in failure(work)
