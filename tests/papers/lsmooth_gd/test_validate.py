"""lsmooth_gd's validate stage on tampered copies of the smoke profile's digits.npz: a split's labels deleted,
its images turned to text: each a clean ValidationFailed naming the array; the untouched file passes."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from icml25.errors import ValidationFailed
from icml25.runner import run_stage

SLUG = "lsmooth_gd"


@pytest.fixture(scope="module")
def prepared(smoke):
    """The smoke workspace (its prepared folder written once: by the pipeline, or here if it has not run)."""
    if not (smoke.root / "data" / SLUG / "prepared" / "main").exists():
        run_stage(smoke.root, SLUG, "prepare")
    return smoke.root


@pytest.fixture
def work(prepared, tmp_path):
    """A scratch root holding the smoke params and a copy of the prepared files (free to tamper with)."""
    shutil.copy(prepared / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(prepared / "data" / SLUG / "prepared", tmp_path / "data" / SLUG / "prepared")
    return tmp_path


def main(work):
    return work / "data" / SLUG / "prepared" / "main"


def failure(work) -> str:
    with pytest.raises(ValidationFailed) as info:
        run_stage(work, SLUG, "validate")
    assert not (work / "data" / SLUG / "validated" / "validation.json").exists()
    return str(info.value)


def test_the_prepared_files_pass(work):
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def rewrite(work, change) -> None:
    path = main(work) / "digits.npz"
    d = dict(np.load(path))
    change(d)
    np.savez(path, **d)


def test_deleted_labels_fail_naming_them(work):
    rewrite(work, lambda d: d.pop("y_test"))
    message = failure(work)
    assert (
        "digits.npz.y (expect_column_values_to_be_in_set, 1 bad rows (split=test), e.g. 'missing')" in message
    )


def test_images_as_text_fail_naming_them(work):
    rewrite(work, lambda d: d.update(x_train=d["x_train"].astype(str)))
    message = failure(work)
    assert (
        "digits.npz.x (expect_column_values_to_be_in_set, 1 bad rows (split=train), e.g. 'string, expected float')"
        in message
    )


def test_a_lost_pixel_column_fails(work):
    rewrite(work, lambda d: d.update(x_train=d["x_train"][:, :63]))
    assert "digits.npz.shapes" in failure(work)
