"""hyper's validate stage on tampered copies of the smoke profile's prepared files (grid.csv, grid-trap.csv,
runs.csv, deep_runs.csv, meta.json): the untouched files pass; a second start cell, a goal worth 0.5, the distractor made
terminal on the non-trap grid, an unknown agent (in either run list) and a negative beta each fail cleanly (ValidationFailed, no
validation.json) naming the check, and the grid's checks name the grid they failed on."""

from __future__ import annotations

import functools

import pandas as pd
import pytest

from icml25.runner import run_stage
from tests.helpers import failure_parts, prepared_main, validation_failure

SLUG = "hyper"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def _edit(work, name: str, change) -> pd.DataFrame:
    """Rewrite prepared ``name`` (a csv) through ``change(frame) -> frame``."""
    path = main(work) / name
    frame = change(pd.read_csv(path))
    frame.to_csv(path, index=False)
    return frame


def _set(column: str, value, where):
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame.copy()
        frame[column] = frame[column].astype(object)
        frame.loc[where(frame), column] = value
        return frame

    return change


def test_untouched_files_pass(work):
    assert {p.name for p in main(work).iterdir()} == {
        "grid.csv",
        "grid-trap.csv",
        "runs.csv",
        "deep_runs.csv",
        "meta.json",
    }
    grid = pd.read_csv(main(work) / "grid.csv")
    assert len(grid) == 121 and (grid.kind == "start").sum() == 1
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_two_start_cells_fail_naming_starts(work):
    _edit(work, "grid.csv", _set("kind", "start", lambda f: f.state == 0))
    parts = failure_parts(failure(work))
    assert set(parts) == {"grids.starts"}, parts
    assert "env=grid)" in parts["grids.starts"] and "e.g. 2" in parts["grids.starts"]


@pytest.mark.slow  # one more validate run (~0.6 s)
def test_a_goal_worth_half_fails_naming_goal_reward(work):
    _edit(work, "grid-trap.csv", _set("reward", 0.5, lambda f: f.kind == "goal"))
    parts = failure_parts(failure(work))
    assert set(parts) == {"grids.goal_reward"}, parts
    assert "env=grid-trap" in parts["grids.goal_reward"] and "0.5" in parts["grids.goal_reward"]


@pytest.mark.slow  # one more validate run (~1 s)
def test_a_terminal_distractor_on_the_grid_fails_naming_distractor_terminal_as_set(work):
    _edit(work, "grid.csv", _set("terminal", True, lambda f: f.kind == "distractor"))
    parts = failure_parts(failure(work))
    assert set(parts) == {"grids.distractor_terminal_as_set"}, parts
    assert "env=grid)" in parts["grids.distractor_terminal_as_set"]


@pytest.mark.slow  # one more validate run (~1 s)
def test_an_unknown_agent_fails_naming_agent(work):
    _edit(work, "runs.csv", _set("agent", "random", lambda f: f.index == 3))
    parts = failure_parts(failure(work))
    assert set(parts) == {"runs.agent"}, parts
    assert "'random'" in parts["runs.agent"]


@pytest.mark.slow  # one more validate run (~0.6 s)
def test_a_negative_beta_fails_naming_beta(work):
    _edit(work, "runs.csv", _set("beta", -1.0, lambda f: f.index == 4))
    parts = failure_parts(failure(work))
    assert set(parts) == {"runs.beta"}, parts
    assert "-1.0" in parts["runs.beta"]


def test_an_unknown_agent_in_the_deep_runs_fails_naming_deep_runs_agent(work):
    assert len(pd.read_csv(main(work) / "deep_runs.csv"))  # the smoke profile runs the deep variant
    _edit(work, "deep_runs.csv", _set("agent", "oracle", lambda f: f.index == 0))
    parts = failure_parts(failure(work))
    assert set(parts) == {"deep runs.agent"}, parts
