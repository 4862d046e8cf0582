from __future__ import annotations

import os
import stat

import pytest

from icml25.errors import UserError
from models.common.weights import load_weights, save_weights

# torch is imported inside each test: collecting the suite imports neither torch nor lightning (test_layout)


def test_round_trip_keeps_tensors_and_metadata(tmp_path):
    import torch

    t = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([1.5])}
    path = save_weights(tmp_path / "sub" / "m.safetensors", t, {"kind": "demo", "d": 3})
    tensors, meta = load_weights(path, "demo")
    assert meta == {"kind": "demo", "d": 3}
    assert torch.equal(tensors["w"], t["w"]) and torch.equal(tensors["b"], t["b"])
    assert [p.name for p in path.parent.iterdir()] == ["m.safetensors"]  # no temporary sibling left


def test_file_mode_follows_the_umask_not_mkstemp(tmp_path):
    import torch

    old = os.umask(0o022)
    try:
        path = save_weights(tmp_path / "m.safetensors", {"w": torch.zeros(1)}, {"kind": "demo"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_wrong_kind_is_a_user_error_naming_the_file(tmp_path):
    import torch

    path = save_weights(tmp_path / "m.safetensors", {"w": torch.zeros(1)}, {"kind": "demo"})
    with pytest.raises(UserError, match="m.safetensors: not a other file"):
        load_weights(path, "other")
