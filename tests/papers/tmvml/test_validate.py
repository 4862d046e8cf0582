"""tmvml's validate stage on tampered copies of the smoke profile's prepared files (real.npz, synthetic.npz,
planted.npz, meta.json), and prepare's ``mulan`` source.

The untouched files pass. Each tampering fails naming its table and column: a NaN in a real view
(real_views.nonfinite), a view shorter than the labels (real_views.rows), a label 2 (real_labels.label_values_not_01),
a label column never positive (real_labels.labels_never_positive), a fold index out of range
(real_labels.fold_out_of_range), an empty fold (real_labels.empty_folds), fold indices for fewer rows than the
labels (real_labels.fold_rows), a NaN or an inf in a synthetic view (synthetic.nonfinite), a synthetic label 2
(synthetic.label_values_not_01), a synthetic view shorter than its labels (synthetic.row_mismatch), an inf in a
planted tensor (planted.nonfinite), a noisy planted tensor of another shape (planted.shape_mismatch), a missing
array or a float fold index (the file's table: real.npz.x1, real.npz.fold, planted.npz.noisy_s0), a label column
dropped (real_labels.label_columns), a view narrower than meta.json records (real_views.width_mismatch), a
synthetic test view narrower than its training view (synthetic.width_mismatch).
The mulan source: a user's CSV (two views 5 and 7 columns wide, four labels, named columns) becomes real.npz with
the user's columns, passes validate and runs through train and evaluate, whose summary names the source; a CSV
whose label column is never positive passes prepare and fails validate. Overlapping views, a label 2, a NaN, a
range past the last column and empty ``mulan`` / ``mulan_views`` params are one UserError each, naming them, and
leave the smoke files as they were.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import failure_parts, lazy, prepared_main, rewrite_npz, set_item, validation_failure

SLUG = "tmvml"
main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)
data = lazy("models.tmvml.data")


def _meta(work) -> dict:
    return json.loads((main(work) / "meta.json").read_text())


def test_untouched_files_pass(work):
    assert {p.name for p in main(work).iterdir()} == {"real.npz", "synthetic.npz", "planted.npz", "meta.json"}
    meta = _meta(work)
    assert meta["source"] == "yeast" and meta["views"] == [79, 24] and meta["folds"] == 5
    with np.load(main(work) / "real.npz") as z:
        assert set(z.files) == {"x0", "x1", "y", "fold"}
        assert z["y"].shape == (meta["rows"], len(meta["labels"])) == (2417, 14)
        assert [z[f"x{v}"].shape for v in range(2)] == [(meta["rows"], w) for w in meta["views"]]
        assert set(np.unique(z["fold"])) == set(range(meta["folds"]))
    with np.load(main(work) / "synthetic.npz") as z:
        assert meta["synthetic"] == ["shared_s0_n60", "spec_s0_n60"] and meta["synthetic_views"] == 4
        parts = [
            f"{k}_{p}_{a}"
            for k in meta["synthetic"]
            for p in ("train", "test")
            for a in ("x0", "x1", "x2", "x3", "y")
        ]
        assert set(z.files) == set(parts)
        assert z["spec_s0_n60_train_y"].shape == (60, 8) and z["spec_s0_n60_test_x0"].shape == (100, 20)
        assert z["shared_s0_n60_test_x1"].shape == (100, 40)  # shared: no PCA
    with np.load(main(work) / "planted.npz") as z:
        k = range(meta["planted_seeds"])
        assert set(z.files) == {f"{a}_s{s}" for a in ("star", "noisy") for s in k}
        assert all(z[f"star_s{s}"].shape == z[f"noisy_s{s}"].shape == (20, 4, 8) for s in k)
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


# ------------------------------------------------------------------------------------------ tamperings
def _zero_column(j: int):
    def change(y):
        y = y.copy()
        y[:, j] = 0
        return y

    return change


def _empty_fold(fold):
    return np.where(fold == 1, 0, fold)


SLOW = pytest.mark.slow  # one more validate run (~0.5 s) of a case the default run already covers
TAMPERINGS = {
    "nan-real-x0": ("real.npz", {"x0": set_item((5, 3), np.nan)}, {"real_views.nonfinite"}),
    "inf-real-x1": pytest.param(
        "real.npz", {"x1": set_item((9, 0), -np.inf)}, {"real_views.nonfinite"}, marks=SLOW
    ),
    "view-shorter-than-y": ("real.npz", {"x1": lambda x: x[:-1]}, {"real_views.rows"}),
    "label-2": ("real.npz", {"y": set_item((4, 2), 2)}, {"real_labels.label_values_not_01"}),
    "label-never-positive": ("real.npz", {"y": _zero_column(3)}, {"real_labels.labels_never_positive"}),
    "fold-out-of-range": ("real.npz", {"fold": set_item(7, 5)}, {"real_labels.fold_out_of_range"}),
    "fold-negative": pytest.param(
        "real.npz", {"fold": set_item(7, -1)}, {"real_labels.fold_out_of_range"}, marks=SLOW
    ),
    "empty-fold": ("real.npz", {"fold": _empty_fold}, {"real_labels.empty_folds"}),
    "fold-shorter-than-y": ("real.npz", {"fold": lambda f: f[:-3]}, {"real_labels.fold_rows"}),
    "nan-synthetic-view": (
        "synthetic.npz",
        {"spec_s0_n60_train_x0": set_item((2, 1), np.nan)},
        {"synthetic.nonfinite"},
    ),
    "inf-synthetic-test-view": pytest.param(
        "synthetic.npz",
        {"shared_s0_n60_test_x3": set_item((0, 0), np.inf)},
        {"synthetic.nonfinite"},
        marks=SLOW,
    ),
    "synthetic-label-2": (
        "synthetic.npz",
        {"shared_s0_n60_test_y": set_item((3, 5), 2)},
        {"synthetic.label_values_not_01"},
    ),
    "synthetic-rows-mismatch": (
        "synthetic.npz",
        {"spec_s0_n60_test_x2": lambda x: x[:-1]},
        {"synthetic.row_mismatch"},
    ),
    "inf-planted": ("planted.npz", {"noisy_s1": set_item((0, 2, 3), np.inf)}, {"planted.nonfinite"}),
    "nan-planted-star": pytest.param(
        "planted.npz", {"star_s2": set_item((1, 1, 1), np.nan)}, {"planted.nonfinite"}, marks=SLOW
    ),
    "planted-shape": ("planted.npz", {"noisy_s0": lambda t: t[:, :3]}, {"planted.shape_mismatch"}),
    "real-view-missing": ("real.npz", {"x1": None}, {"real.npz.x1"}),
    "real-fold-float": ("real.npz", {"fold": lambda f: f.astype(float)}, {"real.npz.fold"}),
    "real-label-column-dropped": ("real.npz", {"y": lambda y: y[:, :-1]}, {"real_labels.label_columns"}),
    "real-view-narrower": ("real.npz", {"x0": lambda x: x[:, :-1]}, {"real_views.width_mismatch"}),
    "synthetic-test-narrower": (
        "synthetic.npz",
        {"spec_s0_n60_test_x0": lambda x: x[:, :-1]},
        {"synthetic.width_mismatch"},
    ),
    "planted-missing": ("planted.npz", {"noisy_s0": None}, {"planted.npz.noisy_s0"}),
}


@pytest.mark.parametrize(("name", "changes", "names"), TAMPERINGS.values(), ids=TAMPERINGS.keys())
def test_each_tampering_fails_naming_its_table_and_column(work, name, changes, names):
    rewrite_npz(main(work) / name, **changes)
    parts = failure_parts(failure(work))
    assert set(parts) == names, parts


# ------------------------------------------------------------------------------------------ the mulan source
VIEWS, LABELS = "1-5;6-12", "13-16"


def _table(n: int = 80) -> pd.DataFrame:
    """A user's multi-view multi-label CSV: views a1-a5 and b1-b7, labels L1-L4 (the spec's generator)."""
    views, y = data.synthetic(np.random.default_rng(5), n, q=4, dims=(5, 7), noise_view=False)
    cols = {f"a{i + 1}": views[0][:, i] for i in range(5)} | {f"b{i + 1}": views[1][:, i] for i in range(7)}
    return pd.DataFrame(cols | {f"L{j + 1}": y[:, j] for j in range(4)})


def _mulan_root(work, table: pd.DataFrame | None, name: str = "set.csv", **prepare) -> None:
    """``work`` with params reading data/tmvml/input/``name`` (``table`` written there) as source mulan."""
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    paper = params["papers"][SLUG]
    paper["prepare"].update(
        {"source": "mulan", "mulan": name, "mulan_views": VIEWS, "mulan_labels": LABELS} | prepare
    )
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    folder = work / "data" / SLUG / "input"
    folder.mkdir(parents=True, exist_ok=True)
    if table is not None:
        table.to_csv(folder / name, index=False)


def test_a_mulan_csv_runs_through_validate_train_and_evaluate(work):
    table = _table()
    _mulan_root(work, table, synthetic_seeds=0)  # no synthetic draws: train fits the real fold only (~1.5 s)
    run_stage(work, SLUG, "prepare")
    meta = _meta(work)
    assert meta["source"] == "mulan" and meta["data"] == f"set.csv: views {VIEWS}, labels {LABELS}"
    assert meta["rows"] == 80 and meta["views"] == [5, 7] and meta["labels"] == ["L1", "L2", "L3", "L4"]
    assert meta["synthetic"] == []
    with np.load(main(work) / "real.npz") as z:
        assert set(z.files) == {"x0", "x1", "y", "fold"}
        np.testing.assert_array_equal(z["x0"], table[[f"a{i}" for i in range(1, 6)]].to_numpy())
        np.testing.assert_array_equal(z["x1"], table[[f"b{i}" for i in range(1, 8)]].to_numpy())
        np.testing.assert_array_equal(z["y"], table[["L1", "L2", "L3", "L4"]].to_numpy())
        assert np.bincount(z["fold"]).tolist() == [16] * 5
    run_stage(work, SLUG, "validate")
    run_stage(work, SLUG, "train")
    run_stage(work, SLUG, "evaluate")
    summary = json.loads((work / "data" / SLUG / "evaluated" / "main" / "summary.json").read_text())
    assert summary["source"] == "mulan" and summary["data"] == meta["data"]
    assert 0 < summary["real_ltr_ap"] <= 1 and summary["real_folds"] == 1


def test_a_mulan_label_never_positive_passes_prepare_and_fails_validate(work):
    _mulan_root(work, _table().assign(L3=0))
    run_stage(work, SLUG, "prepare")
    assert _meta(work)["source"] == "mulan"
    parts = failure_parts(failure(work))
    assert set(parts) == {"real_labels.labels_never_positive"}, parts


def _label_2(t: pd.DataFrame) -> pd.DataFrame:
    t.loc[2, "L2"] = 2
    return t


def _nan(t: pd.DataFrame) -> pd.DataFrame:
    t.loc[3, "a4"] = np.nan
    return t


@pytest.mark.parametrize(
    ("change", "prepare", "message"),
    [
        (None, {"mulan_views": "1-6;6-12"}, r"views 1 and 2 overlap at column 'b1'"),
        (_label_2, {}, r"set\.csv: label column 'L2', row 3: 2 is not 0 or 1"),
        (_nan, {}, r"set\.csv: view 1, column 'a4', row 4: missing or not a number"),
        (None, {"mulan_labels": "13-17"}, r"labels '13-17': '13-17' runs past the last column \(16\)"),
        (None, {"mulan": ""}, r"papers\.tmvml\.prepare\.mulan: empty"),
        (None, {"mulan_views": ""}, r"papers\.tmvml\.prepare\.mulan_views and mulan_labels"),
    ],
    ids=["overlapping-views", "label-2", "nan", "past-last-column", "empty-mulan", "empty-mulan_views"],
)
def test_prepare_refuses_a_bad_mulan_csv_or_params_naming_them(work, change, prepare, message):
    table = _table(20)
    _mulan_root(work, change(table) if change else table, **prepare)
    with pytest.raises(UserError, match=message):
        run_stage(work, SLUG, "prepare")
    assert _meta(work)["source"] == "yeast"  # the smoke files are left as they were
    assert {p.name for p in main(work).iterdir()} == {"real.npz", "synthetic.npz", "planted.npz", "meta.json"}
