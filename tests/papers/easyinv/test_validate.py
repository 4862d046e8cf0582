"""easyinv's validate stage on tampered copies of the smoke profile's prepared images: a NaN, a value above 1, a
3-d train array: each a clean ValidationFailed naming it; the untouched files pass. And prepare with
`source: folder` on PNGs the test writes (the test set is then the folder's images, grayscale, 8x8)."""

from __future__ import annotations

import functools
import json
import shutil

import numpy as np
import pytest
import yaml

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import prepared_main, rewrite_npz, set_item, validation_failure

SLUG = "easyinv"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_untouched_files_pass(work):
    with np.load(main(work) / "images.npz") as z:
        assert sorted(z.files) == ["test", "train"]
        assert z["train"].ndim == z["test"].ndim == 4 and z["test"].shape[1:] == (1, 8, 8)
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_a_nan_in_test_fails_naming_finite(work):
    rewrite_npz(main(work) / "images.npz", test=set_item((2, 0, 3, 4), np.nan))
    message = failure(work)
    assert "images.finite" in message and "split=test" in message, message
    assert "split=train" not in message


def test_a_value_above_one_fails_naming_max(work):
    rewrite_npz(main(work) / "images.npz", train=set_item((0, 0, 1, 1), 2.0))
    message = failure(work)
    assert "images.max" in message and "split=train" in message, message
    assert "images.min" not in message and "finite" not in message


def test_a_3d_train_array_fails_naming_the_array(work):
    rewrite_npz(main(work) / "images.npz", train=lambda a: a[:, 0])
    message = failure(work)
    assert "image file.train" in message and "3-d, expected 4-d" in message, message


def test_fewer_test_images_than_recorded_fails_naming_the_count(work):
    rewrite_npz(main(work) / "images.npz", test=lambda a: a[:-1])
    message = failure(work)
    assert "image counts.test_as_recorded" in message, message


def _folder_root(prepared, tmp_path):
    params = yaml.safe_load((prepared / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"].update(source="folder", folder="images")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    folder = tmp_path / "data" / SLUG / "input" / "images"
    folder.mkdir(parents=True)
    return folder


def test_prepare_reads_a_folder_of_images_then_validate_passes(prepared, tmp_path):
    from PIL import Image

    from models.easyinv.data import read_image

    folder = _folder_root(prepared, tmp_path)
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (20, 20, 3), dtype=np.uint8)
    gray = rng.integers(0, 256, (16, 16), dtype=np.uint8)
    Image.fromarray(rgb, mode="RGB").save(folder / "b_colour.png")
    Image.fromarray(gray, mode="L").save(folder / "a_gray.png")
    (folder / "notes.txt").write_text("not an image")
    run_stage(tmp_path, SLUG, "prepare")
    run_stage(tmp_path, SLUG, "validate")
    with np.load(main(tmp_path) / "images.npz") as z:
        test, train = z["test"], z["train"]
    assert test.shape == (2, 1, 8, 8) and test.dtype == np.float32
    assert train.shape[1:] == (1, 8, 8)  # the digits still train the model
    # sorted by name; grayscale, resized to 8x8 bilinearly, scaled to [-1, 1]
    want_gray = (
        np.asarray(Image.fromarray(gray).resize((8, 8), Image.BILINEAR), dtype=np.float32) / 255 * 2 - 1
    )
    np.testing.assert_allclose(test[0, 0], want_gray, rtol=0, atol=1e-6)
    want_rgb = np.asarray(Image.fromarray(rgb).convert("L").resize((8, 8), Image.BILINEAR), dtype=np.float32)
    np.testing.assert_allclose(test[1, 0], want_rgb / 255 * 2 - 1, rtol=0, atol=1e-6)
    assert np.array_equal(test[1], read_image(folder / "b_colour.png", 8))
    meta = json.loads((main(tmp_path) / "meta.json").read_text())
    assert meta["source"] == "folder" and meta["test"] == 2 and meta["shape"] == [1, 8, 8]


def test_prepare_refuses_a_folder_without_images(prepared, tmp_path):
    folder = _folder_root(prepared, tmp_path)
    (folder / "notes.txt").write_text("not an image")
    with pytest.raises(UserError, match=r"papers\.easyinv\.prepare: .*input/images: no images"):
        run_stage(tmp_path, SLUG, "prepare")
    assert not main(tmp_path).exists()


def test_prepare_refuses_an_unreadable_image_naming_it(prepared, tmp_path):
    folder = _folder_root(prepared, tmp_path)
    (folder / "broken.png").write_bytes(np.random.default_rng(0).bytes(300))
    with pytest.raises(UserError, match=r"broken\.png: not a readable image"):
        run_stage(tmp_path, SLUG, "prepare")


def test_prepare_refuses_a_missing_folder_naming_it(prepared, tmp_path):
    folder = _folder_root(prepared, tmp_path)
    shutil.rmtree(folder)
    with pytest.raises(UserError, match=r"input/images"):
        run_stage(tmp_path, SLUG, "prepare")
