"""lsmooth_gd's validate stage on tampered copies of the smoke profile's digits.npz: a split's labels deleted,
its images turned to text: each a clean ValidationFailed naming the array; the untouched file passes."""

from __future__ import annotations

import functools

from icml25.runner import run_stage
from tests.helpers import prepared_main, rewrite_npz, validation_failure

SLUG = "lsmooth_gd"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_the_prepared_files_pass(work):
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_deleted_labels_fail_naming_them(work):
    rewrite_npz(main(work) / "digits.npz", y_test=None)
    message = failure(work)
    assert (
        "digits.npz.y (expect_column_values_to_be_in_set, 1 bad rows (split=test), e.g. 'missing')" in message
    )


def test_images_as_text_fail_naming_them(work):
    rewrite_npz(main(work) / "digits.npz", x_train=lambda a: a.astype(str))
    message = failure(work)
    assert (
        "digits.npz.x (expect_column_values_to_be_in_set, 1 bad rows (split=train), e.g. 'string, expected float')"
        in message
    )


def test_a_lost_pixel_column_fails(work):
    rewrite_npz(main(work) / "digits.npz", x_train=lambda a: a[:, :63])
    assert "digits.npz.shapes" in failure(work)
