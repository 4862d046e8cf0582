"""ghost's validate stage on tampered copies of the smoke profile's prepared files: a column deleted from
partition.csv, text in its node column, an array dropped from a graph draw and one turned to text: each a clean
ValidationFailed naming the column or array; the untouched files pass."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from icml25.runner import run_stage
from tests.helpers import prepared_main, validation_failure

SLUG = "ghost"
pytestmark = pytest.mark.filterwarnings("ignore")


main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_the_prepared_files_pass(work):
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_a_deleted_partition_column_fails_naming_it(work):
    path = main(work) / "partition.csv"
    pd.read_csv(path).drop(columns=["client"]).to_csv(path, index=False)
    message = failure(work)
    assert "partition.client (missing column)" in message
    assert "assignments" not in message  # the per-node tables need the column: not built


def test_text_in_a_partition_column_fails_naming_it(work):
    path = main(work) / "partition.csv"
    frame = pd.read_csv(path).astype({"node": object})
    frame.loc[5, "node"] = "five"
    frame.to_csv(path, index=False)
    assert "partition.node (expected integer, found string, e.g. 'five')" in failure(work)


def test_an_array_dropped_or_turned_to_text_in_a_draw_fails_naming_it(work):
    path = main(work) / "sbm" / "run0.npz"
    d = dict(np.load(path))
    del d["y"]
    np.savez_compressed(path, **d)
    path = main(work) / "digits" / "run0.npz"
    d = dict(np.load(path))
    d["x"] = d["x"].astype(str)
    np.savez_compressed(path, **d)
    message = failure(work)
    assert (
        "graph files.y (expect_column_values_to_be_in_set, 1 bad rows (graph=sbm run=0), e.g. 'missing')"
        in message
    )
    assert (
        "graph files.x (expect_column_values_to_be_in_set, 1 bad rows (graph=digits run=0), e.g. 'string, expected float')"
        in message
    )
