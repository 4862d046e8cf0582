"""bundle_cbf's validate stage on tampered copies of the smoke profile's prepared files (layouts.csv,
obstacles.csv, trajectories.csv, heldout.npz, meta.json), and prepare's ``csv`` source.

The untouched files pass. Each tampering fails naming its table and column: a start outside the arena
(layouts.start_x), a gap wider than gap_max (layouts.gap_width), a duplicated layout row, a layout left without
obstacles and an obstacle naming a layout that does not exist (layout_keys.*), a radius of 0 or below
(obstacles.r), a NaN position (trajectories.px), a sigma <= 0 (trajectories.sigma), a step in t other than dt
(trajectory_steps.step_min / step_max), a trajectory of one row (trajectory_steps.rows), a NaN held-out velocity
(heldout.vy), an infinite one (heldout.vy), an infinite radius (obstacles.r), a passage without its gap
(layout_keys.passages_without_gap).
The csv source: a user's recorded trajectories (the fit command's columns, the id and sigma columns
renamed, string ids) become trajectories.csv with the user's rows split by id into train and heldout, no
heldout.npz, and run through validate, train and evaluate, whose held-out error is the observed one. A CSV
missing a column, with a NaN, or with a single trajectory id, and an empty ``csv`` name, are one UserError each.
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

SLUG = "bundle_cbf"
main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)
data = lazy("models.bundle_cbf.data")  # imports torch: not while collecting


def _meta(work) -> dict:
    return json.loads((main(work) / "meta.json").read_text())


def test_untouched_files_pass(work):
    names = {"layouts.csv", "obstacles.csv", "trajectories.csv", "heldout.npz", "meta.json"}
    assert {p.name for p in main(work).iterdir()} == names
    meta = _meta(work)
    assert meta["source"] == "simulate" and meta["dt"] == 0.02
    lay = pd.read_csv(main(work) / "layouts.csv")
    assert len(lay) == meta["seeds"] * (meta["layouts"] + meta["random_layouts"])
    traj = pd.read_csv(main(work) / "trajectories.csv")
    assert (traj.seed == 0).sum() == meta["trajectory_rows"] and set(traj.split) == {"train"}
    with np.load(main(work) / "heldout.npz") as z:
        assert z["v"].shape == z["u"].shape == (meta["heldout"], 2)
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


# ------------------------------------------------------------------------------------------ tamperings
def _set(column: str, value, row: int = 0):
    """A change of a prepared table: ``column`` of row ``row`` set to ``value``."""

    def change(d: pd.DataFrame) -> pd.DataFrame:
        d.loc[row, column] = value
        return d

    return change


def _append(row: int, **values):
    """A change of a prepared table: a copy of row ``row`` appended, with ``values`` changed."""
    return lambda d: pd.concat([d, d.iloc[[row]].assign(**values)], ignore_index=True)


def _shift_t(row: int, by: float):
    def change(d: pd.DataFrame) -> pd.DataFrame:
        d.loc[row, "t"] += by
        return d

    return change


def _tamper(work, name: str, change) -> None:
    if name == "heldout.npz":
        rewrite_npz(main(work) / name, v=change)
    else:
        path = main(work) / name
        change(pd.read_csv(path)).to_csv(path, index=False)


SLOW = pytest.mark.slow  # one more validate run (~0.5 s) of a case the default run already covers
TAMPERINGS = {
    "start-outside-arena": ("layouts.csv", _set("start_x", 4.5), {"layouts.start_x"}),
    "gap-above-gap_max": ("layouts.csv", _set("gap_width", 0.7), {"layouts.gap_width"}),
    "duplicated-layout": ("layouts.csv", _append(2), {"layout_keys.duplicate_layouts"}),
    "layout-without-obstacles": (
        "obstacles.csv",
        lambda d: d[~((d.family == "passage") & (d.layout == 3))],
        {"layout_keys.layouts_without_obstacles"},
    ),
    "radius-zero": ("obstacles.csv", _set("r", 0.0, 5), {"obstacles.r"}),
    "radius-negative": pytest.param("obstacles.csv", _set("r", -0.1, 5), {"obstacles.r"}, marks=SLOW),
    "orphan-obstacle": ("obstacles.csv", _append(0, layout=99), {"layout_keys.orphan_obstacles"}),
    "nan-px": ("trajectories.csv", _set("px", np.nan, 7), {"trajectories.px"}),
    "sigma-zero": ("trajectories.csv", _set("sigma", 0.0, 7), {"trajectories.sigma"}),
    "sigma-negative": pytest.param(
        "trajectories.csv", _set("sigma", -1.0, 7), {"trajectories.sigma"}, marks=SLOW
    ),
    "t-shifted": (
        "trajectories.csv",
        _shift_t(25, 0.005),  # one inner row of trajectory 1: one step of 0.025, the next of 0.015
        {"trajectory_steps.step_min", "trajectory_steps.step_max"},
    ),
    "single-row-trajectory": (
        "trajectories.csv",
        lambda d: d[(d.traj != 4) | (d.t == 0)],
        {"trajectory_steps.rows"},
    ),
    "nan-heldout-velocity": ("heldout.npz", set_item((3, 1), np.nan), {"heldout.vy"}),
    "infinite-radius": pytest.param("obstacles.csv", _set("r", np.inf, 5), {"obstacles.r"}, marks=SLOW),
    "passage-without-gap": (
        "layouts.csv",
        _set("gap_width", np.nan, 1),
        {"layout_keys.passages_without_gap"},
    ),
}


@pytest.mark.parametrize(("name", "change", "names"), TAMPERINGS.values(), ids=TAMPERINGS.keys())
def test_each_tampering_fails_naming_its_table_and_column(work, name, change, names):
    _tamper(work, name, change)
    parts = failure_parts(failure(work))
    assert set(parts) == names, parts


@pytest.mark.slow  # heldout.vy's bounds; the default run covers that column with a NaN
def test_an_infinite_heldout_velocity_fails(work):
    rewrite_npz(main(work) / "heldout.npz", v=set_item((3, 1), np.inf))
    assert set(failure_parts(failure(work))) == {"heldout.vy"}


# ------------------------------------------------------------------------------------------ the csv source
def _recorded(n: int = 6, steps: int = 8) -> pd.DataFrame:
    """A user's recorded trajectories: the fit command's columns, the id column ``run`` (strings), the
    uncertainty column ``unc``."""
    frame = data.rollouts(np.random.default_rng(3), n, steps, noise=0.02, floor=0.001)
    frame = frame.rename(columns={"traj": "run", "sigma": "unc"})
    frame["run"] = "flight-" + frame.run.astype(str)
    return frame


def _csv_root(work, table: pd.DataFrame | None, name: str = "runs.csv", **prepare) -> None:
    """``work`` with params reading data/bundle_cbf/input/``name`` (``table`` written there) as source csv."""
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    paper = params["papers"][SLUG]
    paper["prepare"].update(source="csv", csv=name, id_col="run", sigma_col="unc", **prepare)
    paper["train"].update(steps=5)
    paper["evaluate"].update(steps=100)
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    folder = work / "data" / SLUG / "input"
    folder.mkdir(parents=True, exist_ok=True)
    if table is not None:
        table.to_csv(folder / name, index=False)


def test_a_user_csv_runs_through_validate_train_and_evaluate(work):
    table = _recorded()
    _csv_root(work, table)
    run_stage(work, SLUG, "prepare")
    assert not (main(work) / "heldout.npz").exists()
    meta = _meta(work)
    traj = pd.read_csv(main(work) / "trajectories.csv")
    assert meta["source"] == "csv" and meta["data"] == "runs.csv: 6 recorded trajectories"
    assert meta["dt"] == 0.02 and meta["trajectory_rows"] == len(table)
    assert list(traj.columns) == ["seed", "traj", "t", "px", "py", "vx", "vy", "ux", "uy", "sigma", "split"]
    # the user's rows, in order, under ids 0, 1, ... in order of appearance; sigma is the user's column
    mine = traj[traj.seed == 0].reset_index(drop=True)
    cols = ["t", "px", "py", "vx", "vy", "ux", "uy"]
    np.testing.assert_allclose(mine[cols].to_numpy(), table[cols].to_numpy())
    np.testing.assert_allclose(mine.sigma.to_numpy(), table.unc.to_numpy())
    np.testing.assert_array_equal(mine.traj.to_numpy(), pd.factorize(table.run)[0])
    # split by trajectory: one of six ids (round(0.2 * 6)) held out, every row of an id on one side
    assert set(mine.split) == {"train", "heldout"}
    assert mine.groupby("traj").split.nunique().max() == 1
    held = mine[mine.split == "heldout"]
    assert held.traj.nunique() == 1 and meta["heldout"] == len(held) == 9
    run_stage(work, SLUG, "validate")
    run_stage(work, SLUG, "train")
    run_stage(work, SLUG, "evaluate")
    evaluated = work / "data" / SLUG / "evaluated" / "main"
    errors = pd.read_csv(evaluated / "errors.csv")
    assert set(errors.weighting) == {"weighted", "unweighted"} and len(errors) == 2 * meta["seeds"]
    assert set(errors.metric) == {"weighted one-step velocity error"}
    assert np.isfinite(errors.error).all() and (errors.error > 0).all()
    summary = json.loads((evaluated / "summary.json").read_text())
    assert summary["source"] == "csv" and summary["metric"] == "weighted one-step velocity error"


@pytest.mark.slow  # a prepare and a validate run (~0.7 s)
def test_a_user_csv_whose_step_is_not_dt_fails_validate_naming_the_steps(work):
    _csv_root(work, _recorded(), dt=0.05)
    run_stage(work, SLUG, "prepare")
    parts = failure_parts(failure(work))
    assert set(parts) == {"trajectory_steps.step_min", "trajectory_steps.step_max"}, parts


def _drop_vy(t: pd.DataFrame) -> pd.DataFrame:
    return t.drop(columns="vy")


def _nan_px(t: pd.DataFrame) -> pd.DataFrame:
    t.loc[4, "px"] = np.nan
    return t


def _one_id(t: pd.DataFrame) -> pd.DataFrame:
    return t.assign(run="flight-0")


def _no_id(t: pd.DataFrame) -> pd.DataFrame:
    return t.drop(columns="run")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_drop_vy, r"missing column\(s\) vy; the trajectories need t, px, py, vx, vy, ux, uy, run, unc"),
        (_no_id, r"missing column\(s\) run;"),
        (_nan_px, r"column px: 1 value\(s\) missing, NaN or not numeric \(first at row 4\)"),
        (_one_id, r"runs\.csv: 1 trajectory id\(s\); at least two are needed"),
    ],
    ids=["missing-column", "missing-id-column", "nan", "one-trajectory"],
)
def test_prepare_refuses_a_bad_csv_naming_it(work, change, message):
    _csv_root(work, change(_recorded(3, 4)))
    with pytest.raises(UserError, match=message):
        run_stage(work, SLUG, "prepare")
    assert _meta(work)["source"] == "simulate"  # the smoke files are left as they were


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "papers.bundle_cbf.prepare.csv: empty"),
        pytest.param("gone.csv", "gone.csv: not a readable CSV", marks=SLOW),
        pytest.param("../outside.csv", "must be a path inside data/bundle_cbf/input/", marks=SLOW),
    ],
    ids=["empty", "missing", "outside"],
)
def test_prepare_refuses_an_empty_missing_or_outside_csv_name(work, name, message):
    _csv_root(work, None, name=name)
    with pytest.raises(UserError, match=message):
        run_stage(work, SLUG, "prepare")
