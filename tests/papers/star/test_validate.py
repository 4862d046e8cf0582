"""star's validate stage on tampered copies of the smoke profile's prepared files: a NaN action, a motion step
of 0.5, a half-open gripper command, a task id out of range, a dropped demo, a demo cut short, a missing array:
each a clean ValidationFailed naming the column and its demo (or split and task); the untouched files pass. And
prepare with ``source: hdf5`` on a LIBERO-style fixture the test writes (data/demo_i/actions): prepare and
validate run through; NaN actions, a demo without ``actions`` or a demo shorter than the horizon make prepare
refuse the file naming the demo."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import yaml

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import failure_parts, prepared_main, rewrite_npz, validation_failure

SLUG = "star"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def _set_action(work, name: str, demo: int, step: int, col: int, value: float) -> None:
    """Set component ``col`` of step ``step`` of demo ``demo``'s actions in prepared ``name``."""
    path = main(work) / name
    with np.load(path) as z:
        row = int(z["demo_offset"][demo]) + step

    def change(a):
        a = a.copy()
        a[row, col] = value
        return a

    rewrite_npz(path, actions=change)


def test_untouched_files_pass(work):
    assert {p.name for p in main(work).iterdir()} == {"meta.json", "tasks.json", "train.npz", "test.npz"}
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_a_nan_action_fails_naming_finite(work):
    _set_action(work, "train.npz", 3, 5, 0, np.nan)
    parts = failure_parts(failure(work))
    assert "split=train demo=3" in parts["demos.finite"], parts
    assert not any("split=test" in v for v in parts.values())


def test_a_big_step_and_a_half_gripper_command_fail_naming_motion_max_and_grip_error(work):
    _set_action(work, "test.npz", 2, 4, 0, 0.5)  # |dx| = 0.5 > 0.3
    _set_action(work, "train.npz", 7, 0, 2, 0.5)  # a command 0.5 away from +-1
    parts = failure_parts(failure(work))
    assert set(parts) == {"demos.motion_max", "demos.grip_error"}, parts
    assert "split=test demo=2" in parts["demos.motion_max"] and "split=train" not in parts["demos.motion_max"]
    assert "split=train demo=7" in parts["demos.grip_error"] and "split=test" not in parts["demos.grip_error"]


@pytest.mark.slow  # one more validate run (~1 s)
def test_a_task_id_out_of_range_fails_naming_task(work):
    def bad_task(t):
        t = t.copy()
        t[4] = 5  # the smoke profile has 2 tasks
        return t

    rewrite_npz(main(work) / "train.npz", demo_task=bad_task)
    parts = failure_parts(failure(work))
    assert "split=train demo=4" in parts["demos.task"], parts


def test_a_dropped_demo_fails_naming_the_demo_counts(work):
    def drop_last(d):
        keep = d["prim_demo"] != len(d["demo_task"]) - 1
        return {
            "actions": d["actions"][: d["demo_offset"][-2]],
            "demo_offset": d["demo_offset"][:-1],
            "demo_task": d["demo_task"][:-1],
            "demo_start": d["demo_start"][:-1],
            "prim_demo": d["prim_demo"][keep],
            "prim_index": d["prim_index"][keep],
            "prim_state": d["prim_state"][keep],
        }

    path = main(work) / "train.npz"
    with np.load(path) as z:
        d = {k: z[k] for k in z.files}
    last_task = int(d["demo_task"][-1])
    np.savez(path, **drop_last(d))
    parts = failure_parts(failure(work))
    assert set(parts) == {"demo counts.matches"}, parts  # every remaining demo is fine
    assert f"split=train task={last_task}" in parts["demo counts.matches"]


def test_a_missing_array_fails_naming_it(work):
    rewrite_npz(main(work) / "test.npz", prim_state=None)
    parts = failure_parts(failure(work))
    assert (
        "'missing'" in parts["data files.prim_state"] and "file=test.npz" in parts["data files.prim_state"]
    ), parts


@pytest.mark.slow  # one more validate run (~1 s): the alignment check on a demo cut short
def test_a_demo_cut_short_fails_naming_aligned(work):
    def cut(d):
        off = d["demo_offset"].copy()
        a = np.delete(d["actions"], off[1] - 1, axis=0)  # demo 0 loses its last step
        off[1:] -= 1
        return a, off

    path = main(work) / "train.npz"
    with np.load(path) as z:
        d = {k: z[k] for k in z.files}
    d["actions"], d["demo_offset"] = cut(d)
    np.savez(path, **d)
    parts = failure_parts(failure(work))
    assert "split=train demo=0" in parts["demos.aligned"], parts


# ------------------------------------------------------------------------------------ a user's HDF5 file
def _hdf5_root(prepared, tmp_path):
    params = yaml.safe_load((prepared / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"].update(source="hdf5", file="demos.hdf5")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    folder = tmp_path / "data" / SLUG / "input"
    folder.mkdir(parents=True)
    return folder / "demos.hdf5"


def _write_hdf5(path, demos: dict[str, np.ndarray | None]):
    import h5py

    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        for name, actions in demos.items():
            g = data.create_group(name)
            if actions is not None:
                g.create_dataset("actions", data=actions)
            else:
                g.create_dataset("obs", data=np.zeros((3, 2)))


def _actions(n: int = 5, steps: int = 20, dim: int = 7, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"demo_{i}": rng.standard_normal((steps + i, dim)).astype(np.float32) for i in range(n)}


def test_prepare_reads_a_user_hdf5_then_validate_passes(prepared, tmp_path):
    path = _hdf5_root(prepared, tmp_path)
    demos = _actions()
    _write_hdf5(path, demos)
    run_stage(tmp_path, SLUG, "prepare")
    run_stage(tmp_path, SLUG, "validate")
    assert (tmp_path / "data" / SLUG / "validated" / "validation.json").exists()
    meta = json.loads((main(tmp_path) / "meta.json").read_text())
    assert meta["source"] == "hdf5" and meta["action_dim"] == 7 and meta["tasks"] == 0
    assert meta["demos"] == {"train": 4, "test": 1} and meta["test_demos"] == ["demo_4"]
    with np.load(main(tmp_path) / "train.npz") as z:
        assert np.array_equal(z["demo_offset"], [0, 20, 41, 63, 86])
        assert np.array_equal(z["actions"], np.concatenate([demos[f"demo_{i}"] for i in range(4)]))
        assert np.array_equal(z["demo_task"], np.zeros(4))
    with np.load(main(tmp_path) / "test.npz") as z:
        assert np.array_equal(z["actions"], demos["demo_4"]) and z["demo_offset"].tolist() == [0, 24]


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda d: d["demo_2"].__setitem__((3, 1), np.nan),
            r"demos\.hdf5: demo_2/actions\[3, 1\] is nan \(actions must be finite\)",
        ),
        (lambda d: d.__setitem__("demo_1", None), r"demos\.hdf5: data/demo_1 has no dataset 'actions'"),
    ],
)
def test_prepare_refuses_a_bad_hdf5_naming_it(prepared, tmp_path, edit, match):
    path = _hdf5_root(prepared, tmp_path)
    demos = _actions()
    edit(demos)
    _write_hdf5(path, demos)
    with pytest.raises(UserError, match=match):
        run_stage(tmp_path, SLUG, "prepare")
    assert not main(tmp_path).exists()


def test_prepare_refuses_a_horizon_longer_than_a_demo(prepared, tmp_path):
    path = _hdf5_root(prepared, tmp_path)
    demos = _actions()
    demos["demo_3"] = demos["demo_3"][:5]
    _write_hdf5(path, demos)
    with pytest.raises(UserError, match=r"horizon 8 is longer than demo_3 \(5 steps\)"):
        run_stage(tmp_path, SLUG, "prepare")
