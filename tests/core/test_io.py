"""icml25.io: a damaged .npz is one clear line naming the file, never a traceback from zipfile or numpy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import yaml

from icml25.errors import UserError
from icml25.io import load_npz


@pytest.fixture
def npz(tmp_path):
    folder = tmp_path / "data" / "paper" / "prepared" / "main"
    folder.mkdir(parents=True)
    path = folder / "arrays.npz"
    rng = np.random.default_rng(0)
    np.savez_compressed(path, x=rng.random((200, 30)), y=np.arange(200))
    return path


def test_load_npz_reads_every_array(npz):
    d = load_npz(npz)
    assert set(d) == {"x", "y"} and d["x"].shape == (200, 30) and d["y"][-1] == 199


@pytest.mark.parametrize("keep", [0, 0.3, 0.99])
def test_truncated_npz_is_a_one_line_user_error(npz, keep):
    data = npz.read_bytes()
    npz.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(UserError) as info:
        load_npz(npz)
    msg = str(info.value)
    assert str(npz) in msg and "truncated or corrupt" in msg and "\n" not in msg
    assert msg.endswith("re-run the prepare stage that writes it")


def test_corrupt_member_is_a_user_error(npz):
    data = bytearray(npz.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = bytes(64)  # the archive's directory is intact, a member's bytes are not
    npz.write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"arrays\.npz: this \.npz file is truncated or corrupt \("):
        load_npz(npz)


def test_missing_npy_and_pickled_npz_are_user_errors(tmp_path):
    with pytest.raises(UserError, match=r"nowhere\.npz: no such file"):
        load_npz(tmp_path / "nowhere.npz")
    single = tmp_path / "single.npz"
    with single.open("wb") as f:
        np.save(f, np.arange(3))
    with pytest.raises(UserError, match=r"single\.npz: .*not an \.npz archive"):
        load_npz(single)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, a=np.array([{"a": 1}], dtype=object))
    with pytest.raises(UserError, match=r"pickled\.npz: this \.npz file holds pickled objects"):
        load_npz(pickled)
    noise = tmp_path / "noise.npz"  # random bytes: np.load would read them as a pickle
    noise.write_bytes(np.random.default_rng(0).bytes(300))
    with pytest.raises(UserError, match=r"noise\.npz: this is not an \.npz archive \(no zip header\)"):
        load_npz(noise)


def test_stage_on_a_truncated_npz_exits_with_one_line(tmp_path, root):
    """`python -m icml25 stage cross_conformal train` (what dvc.yaml runs) on a prepared file cut short: exit 2
    and one line on stderr naming the file, no traceback."""
    from icml25.runner import run_stage
    from tests.helpers import paper_params

    params = paper_params(root, "cross_conformal", p_grid=[5], replications=3, real_splits=2)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(tmp_path, "cross_conformal", "prepare")
    sim = tmp_path / "data" / "cross_conformal" / "prepared" / "main" / "sim_p005.npz"
    sim.write_bytes(sim.read_bytes()[:-100])
    out = subprocess.run(
        [sys.executable, "-m", "icml25", "stage", "cross_conformal", "train"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("icml25: error:")]
    assert errors == [
        f"icml25: error: {sim}: this .npz file is truncated or corrupt (BadZipFile: File is not a zip file); "
        "re-run the prepare stage that writes it"
    ], out.stderr


def test_validate_on_a_truncated_npz_fails_naming_the_file(tmp_path, root):
    """The validate stage reads prepared arrays itself (icml25.validation.npz_arrays): a file cut short fails
    validation naming it, not a zipfile traceback."""
    from icml25.errors import ValidationFailed
    from icml25.runner import run_stage
    from tests.helpers import paper_params

    params = paper_params(root, "cross_conformal", p_grid=[5], replications=3, real_splits=2)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(tmp_path, "cross_conformal", "prepare")
    sim = tmp_path / "data" / "cross_conformal" / "prepared" / "main" / "sim_p005.npz"
    sim.write_bytes(sim.read_bytes()[:-100])
    with pytest.raises(ValidationFailed) as info:
        run_stage(tmp_path, "cross_conformal", "validate")
    msg = str(info.value)
    assert (
        "file=sim_p005.npz" in msg
        and "unreadable file (BadZipFile); re-run prepare" in msg
        and "\n" not in msg
    )
