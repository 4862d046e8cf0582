"""ucb_ogd's validate stage on tampered copies of the smoke profile's prepared files: a deleted column, text in a
numeric column, a pool array turned to text, a label outside its source's class set: each a clean
ValidationFailed naming it; the untouched files pass. And prepare with `source: csv` on a fixture folder."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import yaml

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import prepared_main, validation_failure

SLUG = "ucb_ogd"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_untouched_files_pass(work):
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_a_deleted_column_and_text_in_a_numeric_column_fail_naming_them(work):
    import pandas as pd

    sources = pd.read_csv(main(work) / "sources.csv")
    sources.drop(columns=["noise"]).to_csv(main(work) / "sources.csv", index=False)
    planted = pd.read_csv(main(work) / "planted.csv")
    planted["mu_x"] = planted.mu_x.astype(object)
    planted.loc[0, "mu_x"] = "left"
    planted.to_csv(main(work) / "planted.csv", index=False)
    message = failure(work)
    assert "sources.noise (missing column)" in message
    assert "planted.mu_x (expected number, found string, e.g. 'left')" in message


def test_a_pool_as_text_and_a_foreign_label_fail_naming_them(work):
    path = main(work) / "pools_s0.npz"
    d = dict(np.load(path))
    d["train_X_1"] = d["train_X_1"].astype(str)
    d["test_y_0"] = d["test_y_0"].copy()
    d["test_y_0"][0] = 9  # source S1 holds the digits 0 and 1 only
    np.savez_compressed(path, **d)
    message = failure(work)
    assert "pool files.train_X_1" in message and "(seed=0)" in message and "string, expected float" in message
    assert "pools.labels_ok" in message and "seed=0 source=0 split=test" in message


def test_prepare_reads_a_folder_of_csv_sources(prepared, tmp_path):
    params = yaml.safe_load((prepared / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"].update(source="csv", csv_folder="cams", label="y", seeds=1)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    folder = tmp_path / "data" / SLUG / "input" / "cams"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for k in range(3):
        x = rng.normal(size=(12, 2)) + k
        lines = ["a,b,y"] + [f"{r[0]:.3f},{r[1]:.3f},{(i + k) % 2}" for i, r in enumerate(x)]
        (folder / f"cam{k}.csv").write_text("\n".join(lines) + "\n")
    run_stage(tmp_path, SLUG, "prepare")
    run_stage(tmp_path, SLUG, "validate")
    import pandas as pd

    sources = pd.read_csv(main(tmp_path) / "sources.csv")
    assert list(sources.name) == ["cam0", "cam1", "cam2"] and set(sources.n_train + sources.n_test) == {12}
    (folder / "cam1.csv").write_text("a,b\n1,2\n3,4\n")  # no label column
    with pytest.raises(UserError, match=r"csv_folder: .*cam1\.csv.*'y'"):
        run_stage(tmp_path, SLUG, "prepare")
