"""issm's validate stage on tampered copies of the smoke profile's prepared files: a clamped latent moved off
its input, a NaN, a 2-d y, a u with too few trials, a missing held-out array: each a clean ValidationFailed
naming it; the untouched files pass. And prepare with `source: npz` on a fixture recording."""

from __future__ import annotations

import functools
import shutil

import numpy as np
import pytest
import yaml

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import prepared_main, rewrite_npz, validation_failure

SLUG = "issm"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_untouched_files_pass(work):
    assert {"attractor_s0.npz", "linear_s0.npz"} <= {p.name for p in main(work).glob("*.npz")}
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_a_clamped_latent_off_its_input_fails_naming_clamp_error(work):
    def move(x, u):
        x = x.copy()
        k, t, dim = np.argwhere(u != 0)[0]
        x[k, t, dim] += 1e-3  # x != u where u != 0
        return x

    with np.load(main(work) / "linear_s0.npz") as z:
        u = z["u"]
    rewrite_npz(main(work) / "linear_s0.npz", x=lambda x: move(x, u))
    message = failure(work)
    assert "arrays.clamp_error" in message and "file=linear_s0.npz split=train" in message, message
    assert "attractor_s0.npz" not in message and "finite" not in message


def test_a_nan_in_y_fails_naming_finite(work):
    def nan(y):
        y = y.copy()
        y[0, 3, 1] = np.nan
        return y

    rewrite_npz(main(work) / "attractor_s0.npz", y=nan)
    message = failure(work)
    assert "arrays.finite" in message and "file=attractor_s0.npz split=train" in message, message


def test_a_2d_y_fails_naming_the_array(work):
    rewrite_npz(main(work) / "attractor_s0.npz", y=lambda y: y[:, :, 0])
    message = failure(work)
    assert (
        "data files.y " in message and "2-d, expected 3-d" in message and "file=attractor_s0.npz" in message
    )


def test_u_with_fewer_trials_than_y_fails_naming_shapes_agree(work):
    rewrite_npz(main(work) / "linear_s0.npz", u=lambda u: u[:-1])
    message = failure(work)
    assert "arrays.shapes_agree" in message and "file=linear_s0.npz split=train" in message, message


def test_a_missing_held_out_array_fails_naming_it(work):
    rewrite_npz(main(work) / "linear_s0.npz", x_test=None)
    message = failure(work)
    assert "data files.x_test " in message and "'missing'" in message and "file=linear_s0.npz" in message, (
        message
    )


def _npz_root(prepared, tmp_path):
    params = yaml.safe_load((prepared / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"].update(source="npz", file="recordings.npz")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    folder = tmp_path / "data" / SLUG / "input"
    folder.mkdir(parents=True)
    return folder / "recordings.npz"


def test_prepare_reads_user_recordings_then_validate_passes(prepared, tmp_path):
    import json

    path = _npz_root(prepared, tmp_path)
    rng = np.random.default_rng(0)
    y = rng.standard_normal((3, 20, 4))
    u = np.zeros((3, 20, 2))
    u[:, 5:7, 0], u[:, 12:14, 1] = 1.0, -1.0
    np.savez(path, y=y, u=u)
    run_stage(tmp_path, SLUG, "prepare")
    run_stage(tmp_path, SLUG, "validate")
    assert sorted(p.name for p in main(tmp_path).iterdir()) == ["meta.json", "npz_s0.npz"]
    with np.load(main(tmp_path) / "npz_s0.npz") as z:
        assert sorted(z.files) == ["u", "y"]
        assert np.array_equal(z["y"], y) and np.array_equal(z["u"], u)
    meta = json.loads((main(tmp_path) / "meta.json").read_text())
    assert meta["source"] == "npz" and meta["sets"] == ["npz"] and meta["seeds"] == 1
    # the same recordings with a NaN: validate fails naming it (no truth, so the clamp is not checked)
    y[2, 0, 0] = np.nan
    np.savez(path, y=y, u=u)
    run_stage(tmp_path, SLUG, "prepare")
    shutil.rmtree(tmp_path / "data" / SLUG / "validated")  # the passing run's output
    message = failure(tmp_path)
    assert "arrays.finite" in message and "npz_s0.npz" in message


def test_prepare_refuses_recordings_without_u(prepared, tmp_path):
    path = _npz_root(prepared, tmp_path)
    np.savez(path, y=np.zeros((3, 20, 4)))
    with pytest.raises(UserError, match=r"recordings\.npz: no array u"):
        run_stage(tmp_path, SLUG, "prepare")
