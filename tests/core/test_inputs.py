"""icml25.inputs: the checks the paper tools make before loading or training a model, without torch. A weights
file is judged from its safetensors header as models.common.weights.load_weights would judge it (missing, not
safetensors, of another kind), a causal LM path by its config.json or GGUF magic, a seed by its range."""

from __future__ import annotations

import json

import numpy as np
import pytest

from icml25.errors import UserError
from icml25.inputs import check_causal_lm, check_file, check_seed, check_weights


def _weights(path, meta: dict | None):
    from safetensors.numpy import save_file

    metadata = None if meta is None else {"icml25": json.dumps(meta)}
    save_file({"w": np.zeros(3, np.float32)}, str(path), metadata=metadata)
    return path


def test_the_metadata_key_is_the_one_the_weights_are_saved_under():
    """icml25 cannot import models.common.weights (the layering), so the key is written twice: kept equal here."""
    from icml25.inputs import WEIGHTS_META_KEY
    from models.common.weights import META_KEY

    assert WEIGHTS_META_KEY == META_KEY


def test_check_weights_accepts_the_kind_it_was_saved_with(tmp_path):
    path = _weights(tmp_path / "m.safetensors", {"kind": "demo", "d": 3})
    assert check_weights(path, "demo") == path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p, "m.safetensors: no such file"),
        (lambda p: p.mkdir(), "m.safetensors: is a directory"),
        (lambda p: p.write_bytes(b""), "not a readable safetensors file"),
        (lambda p: p.write_bytes(b"\x00garbage" * 40), "not a readable safetensors file"),
        (
            lambda p: p.write_bytes((10).to_bytes(8, "little") + b"[1, 2, 3]\n"),
            "not a readable safetensors file",
        ),
        (lambda p: p.write_bytes((99).to_bytes(8, "little") + b"{}"), "not a readable safetensors file"),
        (lambda p: _weights(p, None), "not a demo file (its metadata does not say so)"),
        (lambda p: _weights(p, {"kind": "other"}), "not a demo file (its metadata does not say so)"),
    ],
    ids=[
        "missing",
        "folder",
        "empty",
        "garbage",
        "header-not-an-object",
        "header-past-the-end",
        "no-meta",
        "other",
    ],
)
def test_check_weights_refuses_what_load_weights_refuses(tmp_path, make, message):
    path = tmp_path / "m.safetensors"
    make(path)
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_weights(path, "demo", "--model")


def test_check_seed_bounds():
    assert (
        check_seed(0) == 0 and check_seed(2**32 - 1) == 2**32 - 1 and check_seed(2**40, bound=None) == 2**40
    )
    for seed, bound, message in [
        (-1, 2**32, "--seed -1: must be an integer in [0, 2^32)"),
        (2**32, 2**32, "--seed 4294967296: must be an integer in [0, 2^32)"),
        (-1, None, "--seed -1: must be an integer >= 0"),
        (True, 2**32, "--seed True: must be an integer in [0, 2^32)"),
    ]:
        with pytest.raises(UserError) as info:
            check_seed(seed, bound=bound)
        assert str(info.value) == message


def test_check_causal_lm_and_check_file(tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + b"\0" * 16)
    assert check_causal_lm(tmp_path / "hf", "--lm") == tmp_path / "hf"
    assert check_causal_lm(tmp_path / "m.gguf", "--lm") == tmp_path / "m.gguf"
    with pytest.raises(UserError, match="--lm .*empty: not a transformers model folder"):
        (tmp_path / "empty").mkdir()
        check_causal_lm(tmp_path / "empty", "--lm")
    with pytest.raises(UserError, match=r"--rm .*m.bin: not a GGUF file \(\*.gguf\)"):
        (tmp_path / "m.bin").write_bytes(b"GGUF")
        check_causal_lm(tmp_path / "m.bin", "--rm")
    with pytest.raises(UserError, match="--image .*hf: is a directory, not an image"):
        check_file(tmp_path / "hf", "--image", what="an image")
