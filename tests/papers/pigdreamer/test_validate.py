"""pigdreamer's validate stage on tampered copies of the smoke profile's prepared layouts.csv.

The untouched files pass. Each tampering fails naming its column: a start off the left column, a goal off the
right one, a start row outside the grid, a layout with one hazard fewer, a hazard outside the band or on the
start, a map string one cell short or holding a character other than 0 and 1, a negative blind cost, a missing
episode row. Evaluate refuses layouts that its seed does not rebuild.
"""

from __future__ import annotations

import functools

import pandas as pd
import pytest

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import failure_parts, prepared_main, validation_failure

SLUG = "pigdreamer"
main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def _layouts(work) -> pd.DataFrame:
    return pd.read_csv(main(work) / "layouts.csv", dtype={"map": str})


def _write(work, frame: pd.DataFrame) -> None:
    frame.to_csv(main(work) / "layouts.csv", index=False)


def test_untouched_files_pass(work):
    assert {p.name for p in main(work).iterdir()} == {"layouts.csv", "env.json"}
    frame = _layouts(work)
    assert (frame.hazards == 5).all() and (frame["map"].str.count("1") == 5).all()
    assert (frame.start_col == 0).all() and (frame.goal_col == 6).all()
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def _set(column: str, value, row: int = 0):
    def change(d: pd.DataFrame) -> pd.DataFrame:
        d[column] = d[column].astype(object) if isinstance(value, str) else d[column]
        d.loc[row, column] = value
        return d

    return change


TAMPERINGS = {
    "start-off-the-left-column": (_set("start_col", 1), {"layouts.start_col"}),
    "goal-off-the-right-column": (_set("goal_col", 5, 3), {"layouts.goal_col"}),
    "start-row-outside": (_set("start_row", 7, 2), {"layouts.start_row"}),
    "one-hazard-fewer": (_set("hazards", 4, 1), {"layouts.hazards"}),
    "hazard-outside-band": (_set("outside_band", 1, 4), {"layouts.outside_band"}),
    "hazard-on-start": (_set("on_endpoints", 1, 4), {"layouts.on_endpoints"}),
    "map-short": (lambda d: _set("map", d.loc[0, "map"][:-1])(d), {"layouts.map_cells"}),
    "map-not-01": (lambda d: _set("map", "2" + d.loc[0, "map"][1:])(d), {"layouts.map_not_01"}),
    "negative-blind-cost": (_set("blind_cost", -0.1, 5), {"layouts.blind_cost"}),
    "missing-row": (lambda d: d.drop(index=7), {"layouts.<table>"}),
}


@pytest.mark.parametrize("change,columns", TAMPERINGS.values(), ids=TAMPERINGS.keys())
def test_a_tampered_layout_fails_naming_its_column(work, change, columns):
    _write(work, change(_layouts(work)))
    parts = failure_parts(failure(work))
    assert columns <= set(parts), parts


def test_evaluate_refuses_layouts_its_seed_does_not_rebuild(smoke, tmp_path):
    """Layouts that validate but are not the seed's (two episodes swapped) stop evaluate with one line."""
    import shutil

    root = smoke.root
    if not (root / "data" / SLUG / "trained" / "main").exists():
        smoke.run(SLUG)
    for name in ("params.yaml",):
        shutil.copy(root / name, tmp_path / name)
    for stage in ("prepared", "trained"):
        shutil.copytree(root / "data" / SLUG / stage, tmp_path / "data" / SLUG / stage)
    frame = pd.read_csv(tmp_path / "data" / SLUG / "prepared" / "main" / "layouts.csv", dtype={"map": str})
    first, second = frame.loc[0].copy(), frame.loc[1].copy()
    frame.loc[0, frame.columns[1:]], frame.loc[1, frame.columns[1:]] = second[1:].values, first[1:].values
    frame.to_csv(tmp_path / "data" / SLUG / "prepared" / "main" / "layouts.csv", index=False)
    with pytest.raises(UserError, match="differ from layouts.csv"):
        run_stage(tmp_path, SLUG, "evaluate")
