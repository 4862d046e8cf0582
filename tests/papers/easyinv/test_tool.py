"""`icml25 easyinv invert` (in process through the installed entry, once through the console for the exit status):
an image inverted and reconstructed by a small eps-model the test trains and saves, and every bad input as one
line naming the value, exit 2, no traceback and nothing written."""

from __future__ import annotations

import re

import numpy as np
import pytest

from flows.cli import main as cli_main
from tests.helpers import assert_refused, forbid, icml25, run_tool

SLUG = "easyinv"


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """An eps-MLP trained for 10 steps on random 8x8 images, saved as the train stage saves it."""
    import torch

    from models.easyinv.experiment import save_model
    from models.easyinv.net import train_eps

    x = torch.rand(32, 1, 8, 8, generator=torch.Generator().manual_seed(0)) * 2 - 1
    model, _ = train_eps(x, 10, seed=0, hidden=32, batch=32)
    path = tmp_path_factory.mktemp("easyinv-model") / "eps.safetensors"
    save_model(model, path)
    return path


@pytest.fixture()
def files(tmp_path):
    """A 12x12 grayscale PNG (resized to the model's 8x8 by the tool)."""
    from PIL import Image

    yy, xx = np.mgrid[0:12, 0:12]
    pixels = ((xx * 17 + yy * 5) % 256).astype(np.uint8)
    Image.fromarray(pixels, mode="L").save(tmp_path / "digit.png")
    return tmp_path


def _argv(files, model, *extra, out="out.npz"):
    return [SLUG, "invert", str(files / "digit.png"), "--model", str(model), *extra, "-o", str(files / out)]


def test_invert_happy_path_writes_z_T_and_the_reconstruction(files, model_file, capsys):
    import torch

    from models.easyinv import api
    from models.easyinv.data import read_image
    from models.easyinv.experiment import load_model, psnr

    assert cli_main(_argv(files, model_file, "--steps", "20")) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert re.fullmatch(r"PSNR -?\d+\.\d{3} dB", printed[-1]), printed
    assert printed[0].startswith(f"inverted {files / 'digit.png'} in 20 steps (20 network calls), eta 0.5")
    with np.load(files / "out.npz") as z:
        assert sorted(z.files) == ["image", "reconstruction", "z_T"]
        z_T, rec, image = z["z_T"], z["reconstruction"], z["image"]
    assert z_T.shape == rec.shape == image.shape == (1, 8, 8)
    assert np.array_equal(image, read_image(files / "digit.png", 8))
    assert image.min() >= -1 and image.max() <= 1 and image.std() > 0.1
    # what the Python entry computes with the same settings
    model = load_model(model_file)
    x = torch.tensor(image[None])
    want = api.invert(model, x, steps=20, eta=0.5, window=(0.05, 0.2))
    assert np.array_equal(z_T, want.z_T.numpy()[0])
    want_rec, _ = api.reconstruct(model, want.z_T, steps=20)
    assert np.array_equal(rec, want_rec.numpy()[0])
    assert printed[-1] == f"PSNR {float(psnr(want_rec, x)[0]):.3f} dB"
    assert not [p.name for p in files.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_invert_eta_one_is_ddim_inversion(files, model_file, capsys):
    import torch

    from models.easyinv import ddim
    from models.easyinv.experiment import load_model

    assert cli_main(_argv(files, model_file, "--eta", "1", "--steps", "10", out="ddim.npz")) == 0
    assert cli_main(_argv(files, model_file, "--steps", "10", out="easy.npz")) == 0
    out = capsys.readouterr().out
    assert "eta 1;" in out and out.strip().splitlines()[-1].endswith(" dB")
    with np.load(files / "ddim.npz") as z:
        z_ddim, image = z["z_T"], z["image"]
    with np.load(files / "easy.npz") as z:
        z_easy = z["z_T"]
    model = load_model(model_file)
    hand = torch.tensor(image[None])
    with torch.no_grad():
        for t in ddim.timesteps(10):
            hand = ddim.next_step(model(hand, t), t, hand, ddim.alphas_cumprod(), 10)
    assert np.array_equal(z_ddim, hand.numpy()[0])
    assert not np.array_equal(z_ddim, z_easy)  # eta 0.5 mixes at i = 1, 2


def _random_bytes(d):
    (d / "digit.png").write_bytes(np.random.default_rng(0).bytes(300))


@pytest.mark.parametrize(
    ("edit", "args", "message"),
    [
        (None, ["--eta", "1.5"], "eta must be in [0, 1], got 1.5"),
        (None, ["--window", "0.9,0.2"], "window (s, l) must lie in [0, 1] with s + l <= 1, got (0.9, 0.2)"),
        (None, ["--window", "abc"], "--window 'abc': expected two numbers s,l"),
        (None, ["--window", "0.1"], "got (0.1,)"),
        (None, ["--steps", "1"], "steps must be an integer >= 2 that divides 1000, got 1"),
        (None, ["--steps", "3"], "steps must be an integer >= 2 that divides 1000, got 3"),
        (_random_bytes, [], "digit.png: not a readable image"),
        (lambda d: (d / "digit.png").unlink(), [], "digit.png: no such file"),
        (
            lambda d: (d / "model.safetensors").write_bytes(b"\x00garbage" * 40),
            [],
            "model.safetensors: not a readable safetensors file",
        ),
        (lambda d: (d / "model.safetensors").unlink(), [], "model.safetensors: no such file"),
    ],
)
def test_invert_bad_input_is_one_line_exit_2_and_nothing_written(
    files, model_file, capsys, edit, args, message
):
    import shutil

    shutil.copy(model_file, files / "model.safetensors")
    if edit is not None:
        edit(files)
    before = sorted(p.name for p in files.iterdir())
    assert cli_main(_argv(files, files / "model.safetensors", *args)) == 2
    res = capsys.readouterr()
    assert message in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and res.err.startswith("icml25: error: ") and not res.out
    assert sorted(p.name for p in files.iterdir()) == before  # no OUT.npz, no temporary file


def test_unwritable_output_is_refused_before_any_work(files, capsys):
    out = files / "no_dir" / "out.npz"
    argv = [
        SLUG,
        "invert",
        str(files / "digit.png"),
        "--model",
        str(files / "missing.safetensors"),
        "-o",
        str(out),
    ]
    assert cli_main(argv) == 2
    res = capsys.readouterr()
    assert f"--output {out}: no such directory" in res.err and not res.out, res.err
    assert not (files / "no_dir").exists()


@pytest.mark.slow  # a fresh interpreter imports torch: a few seconds
def test_console_exit_status_2_without_traceback(files, root, model_file):
    out = files / "out.npz"
    res = icml25(
        root,
        SLUG,
        "invert",
        str(files / "digit.png"),
        "--model",
        str(model_file),
        "--eta",
        "1.5",
        "-o",
        str(out),
    )
    assert res.returncode == 2 and not res.stdout
    assert res.stderr.strip() == "icml25: error: eta must be in [0, 1], got 1.5"
    assert not out.exists()


def _foreign_safetensors(d):
    """A safetensors file of another kind (an issm model's metadata)."""
    import json

    from safetensors.numpy import save_file

    meta = {"icml25": json.dumps({"kind": "issm-model"})}
    save_file({"w": np.zeros(2, np.float32)}, str(d / "model.safetensors"), metadata=meta)


@pytest.mark.parametrize(
    ("edit", "model", "message"),
    [
        (_random_bytes, "model.safetensors", "digit.png: not a readable image"),
        (lambda d: (d / "digit.png").unlink(), "model.safetensors", "digit.png: no such file"),
        (
            lambda d: (d / "digit.png").unlink() or (d / "digit.png").mkdir(),
            "model.safetensors",
            "is a directory",
        ),
        # the bug report's case: a bad image and no trained model; the image is named, not the model
        (_random_bytes, None, "digit.png: not a readable image"),
        (None, None, "run `dvc repro train@easyinv` first"),
        (_foreign_safetensors, "model.safetensors", "model.safetensors: not a easyinv-eps file"),
    ],
    ids=[
        "bad-image",
        "missing-image",
        "image-is-a-folder",
        "bad-image-no-model",
        "no-model",
        "foreign-model",
    ],
)
def test_the_image_and_the_model_file_are_checked_before_the_model_loads(
    files, model_file, monkeypatch, capsys, edit, model, message
):
    """Issue: `easyinv invert` on a bad image reported the missing model after 72 s (Lightning's import and the
    model load came first): now the loader is never called on bad input."""
    import shutil

    from models.easyinv import experiment

    shutil.copy(model_file, files / "model.safetensors")
    if edit is not None:
        edit(files)

    forbid(monkeypatch, experiment, "load_model")
    monkeypatch.chdir(files)  # the default --model (data/easyinv/trained/main/...) is missing here
    argv = [SLUG, "invert", str(files / "digit.png"), "-o", str(files / "out.npz")]
    if model is not None:
        argv[3:3] = ["--model", str(files / model)]
    before = sorted(p.name for p in files.iterdir())
    status, printed, err = run_tool(*argv)
    assert_refused(status, printed, err, message)
    assert sorted(p.name for p in files.iterdir()) == before
