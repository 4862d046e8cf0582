"""neuroalgebraic's validate stage on tampered copies of the smoke profile's prepared files (architectures.csv,
targets.npz, meta.json): the untouched files pass; an architecture with a width 0 fails naming
architectures.min_width, an ambient dimension above the rank's cap (40,3,1 with k = 4) naming
architectures.ambient, a linear family with degree 3 naming architectures.family_matches_degree and an asymmetric
target T naming targets.asymmetry (each cleanly: ValidationFailed, no validation.json)."""

from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pytest

from icml25.runner import run_stage
from tests.helpers import failure_parts, prepared_main, rewrite_npz, validation_failure

SLUG = "neuroalgebraic"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def _edit_row(work, where, **values) -> pd.DataFrame:
    """Set ``values`` in the first row of architectures.csv where ``where(frame)`` holds."""
    path = main(work) / "architectures.csv"
    frame = pd.read_csv(path, dtype={"widths": str})
    i = frame.index[where(frame)][0]
    for column, value in values.items():
        frame[column] = frame[column].astype(object)
        frame.loc[i, column] = value
    frame.to_csv(path, index=False)
    return frame


def test_untouched_files_pass(work):
    assert {p.name for p in main(work).iterdir()} == {"architectures.csv", "targets.npz", "meta.json"}
    meta = json.loads((main(work) / "meta.json").read_text())
    archs = pd.read_csv(main(work) / "architectures.csv", dtype={"widths": str})
    assert meta == {"trials": 40, "size": 6, "rank": 4, "architectures": len(archs)}
    assert set(archs.family) == {"shallow", "linear", "deep"}
    assert ((archs.family == "linear") == (archs.degree == 1)).all()
    assert not archs.duplicated(["widths", "degree"]).any()
    with np.load(main(work) / "targets.npz") as z:
        assert {k: z[k].shape for k in z.files} == {
            "T": (40, 6, 6),
            "W0": (40, 6, 4),
            "A0": (40, 6, 4),
            "B0": (40, 4, 6),
        }
        assert np.array_equal(z["T"], z["T"].transpose(0, 2, 1))
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_a_width_of_zero_fails_naming_min_width(work):
    _edit_row(work, lambda f: f.widths == "3,2,1", widths="3,0,1")
    parts = failure_parts(failure(work))
    between = "expect_column_values_to_be_between, 1 bad rows (widths=3,0,1 degree=2), e.g. {})"
    assert parts["architectures.min_width"] == between.format(0), parts
    # the ambient dimension of a network with an empty layer is not read (-1): it fails beside min_width
    assert parts == {
        "architectures.min_width": between.format(0),
        "architectures.ambient": between.format(-1),
    }


@pytest.mark.slow  # one more validate run (~1 s)
def test_an_ambient_above_the_cap_fails_naming_ambient(work):
    _edit_row(work, lambda f: f.widths == "4,2,1", widths="40,3,1", degree=4)
    parts = failure_parts(failure(work))
    assert set(parts) == {"architectures.ambient"}, parts
    detail = "expect_column_values_to_be_between, 1 bad rows (widths=40,3,1 degree=4), e.g. 123410)"
    assert parts["architectures.ambient"] == detail, parts  # 1 * C(43, 4) > 5000


@pytest.mark.slow  # one more validate run (~1 s)
def test_a_cubic_linear_network_fails_naming_family_matches_degree(work):
    _edit_row(work, lambda f: (f.family == "linear") & (f.widths == "2,3,2"), degree=3)
    parts = failure_parts(failure(work))
    assert set(parts) == {"architectures.family_matches_degree"}, parts
    detail = "expect_column_values_to_be_in_set, 1 bad rows (widths=2,3,2 degree=3), e.g. False)"
    assert parts["architectures.family_matches_degree"] == detail, parts


def test_an_asymmetric_target_fails_naming_asymmetry(work):
    def tilt(T):
        T = T.copy()
        T[3, 0, 1] += 0.5
        return T

    rewrite_npz(main(work) / "targets.npz", T=tilt)
    parts = failure_parts(failure(work))
    assert set(parts) == {"targets.asymmetry"}, parts
    detail = "expect_column_values_to_be_between, 1 bad rows (trial=3), e.g. 0.5)"
    assert parts["targets.asymmetry"] == detail, parts
