"""cross_conformal's validate stage on tampered copies of the smoke profile's prepared files: a deleted column
(the target train would otherwise take from the last column, or a feature), text in a numeric column, an array
dropped from a simulation file, a reordered table, a user's CSV missing a feature: each a clean ValidationFailed
naming the column; the untouched files pass."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest
import yaml

from icml25.runner import run_stage
from tests.helpers import prepared_main, rewrite_npz, validation_failure

SLUG = "cross_conformal"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_the_prepared_files_pass(work):
    run_stage(work, SLUG, "validate")
    tables = (work / "data" / SLUG / "validated" / "validation.json").read_text()
    for table in ("simulation files", "simulation", "real table", "real splits file", "real splits"):
        assert f'"table": "{table}"' in tables


@pytest.mark.parametrize("column", ["target", "bmi"])
def test_a_deleted_real_column_fails_naming_it(work, column):
    real = main(work) / "real.csv"
    pd.read_csv(real).drop(columns=[column]).to_csv(real, index=False)
    assert f"real table.{column} (missing column)" in failure(work)


def test_text_in_a_numeric_column_fails_naming_it(work):
    real = main(work) / "real.csv"
    frame = pd.read_csv(real).astype({"bmi": object})
    frame.loc[7, "bmi"] = "unknown"
    frame.to_csv(real, index=False)
    assert "real table.bmi (expected number, found string, e.g. 'unknown')" in failure(work)


def test_an_array_dropped_or_turned_to_text_in_an_npz_fails_naming_it(work):
    rewrite_npz(main(work) / "sim_p005.npz", y=None)
    rewrite_npz(main(work) / "real_splits.npz", train=lambda a: a.astype(str))
    message = failure(work)
    assert (
        "simulation files.y (expect_column_values_to_be_in_set, 1 bad rows (file=sim_p005.npz), e.g. 'missing')"
        in message
    )
    assert (
        "real splits file.train (expect_column_values_to_be_in_set, 1 bad rows (file=real_splits.npz), e.g. 'string, "
        in message
    )


def test_a_user_csv_missing_a_feature_fails(tmp_path, root):
    """real_source: csv: the features are the user's, known by number (meta.json); the target must come last."""
    from tests.helpers import paper_params

    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.standard_normal((30, 3)), columns=["a", "b", "y"])
    (tmp_path / "data" / SLUG / "input").mkdir(parents=True)
    frame.to_csv(tmp_path / "data" / SLUG / "input" / "mine.csv", index=False)
    small = {"n": 20, "p_grid": [3], "replications": 2, "real_splits": 1, "real_test": 10, "real_folds": [5]}
    params = paper_params(root, SLUG, **small, real_source="csv", real_csv="mine.csv", real_target="y")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(tmp_path, SLUG, "prepare")
    real = main(tmp_path) / "real.csv"
    pd.read_csv(real).drop(columns=["b"]).to_csv(real, index=False)
    assert "real table.<table> (2 columns, expected 3 (target and 2 more))" in failure(tmp_path)
    pd.read_csv(real).assign(b=1.0)[["a", "target", "b"]].to_csv(real, index=False)  # target not last
    assert "real table layout.last_column" in failure(tmp_path)
