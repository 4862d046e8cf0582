"""`icml25 star fit|codes` (in process through the installed entry, once through the console for the exit
status) on a tiny LIBERO-style HDF5 file the test writes (data/demo_i/actions): a fit that prints per-depth
perplexity, active codes and the reconstruction MSE of the model it saves; codes every horizon steps (or every
--stride) that are the saved model's own; every bad input as one line naming the value, exit 2, no traceback and
nothing written. And the Python entry: ``from models.star import RaRSQ, CausalSkillTransformer``."""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest

from flows.cli import main as cli_main
from tests.helpers import assert_refused, forbid, icml25, run_tool

SLUG = "star"
DEMOS, STEPS, DIM = 6, 24, 3


def _actions(n: int = DEMOS, steps: int = STEPS, dim: int = DIM, seed: int = 0) -> dict[str, np.ndarray]:
    """Noisy straight moves with a gripper command: a little structure for the codes to find."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        a = np.zeros((steps, dim))
        a[:, 0] = 0.1 * np.sign(np.sin(np.arange(steps) / 4 + i))
        a[:, 1] = 0.05 * (i % 3 - 1)
        a[:, -1] = np.where(np.arange(steps) < steps // 2, -1.0, 1.0)
        out[f"demo_{i}"] = (a + 0.01 * rng.standard_normal(a.shape)).astype(np.float32)
    return out


def _write(path, demos: dict[str, np.ndarray | None]) -> None:
    import h5py

    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        for name, actions in demos.items():
            g = data.create_group(name)
            if actions is None:
                g.create_dataset("states", data=np.zeros((STEPS, 2)))
            else:
                g.create_dataset("actions", data=actions)


@pytest.fixture()
def files(tmp_path):
    _write(tmp_path / "demos.hdf5", _actions())
    return tmp_path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """`icml25 star fit` with --steps 30 on the fixture: (folder, model path, what it printed)."""
    d = tmp_path_factory.mktemp("star-tool")
    _write(d / "demos.hdf5", _actions())
    model = d / "skills.safetensors"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli_main([SLUG, "fit", str(d / "demos.hdf5"), "--steps", "30", "-o", str(model)])
    assert status == 0
    return d, model, out.getvalue()


# ------------------------------------------------------------------------------------------- the happy path
def test_fit_prints_the_usage_of_the_model_it_saves(fitted):
    from models.star.api import SkillModel, chunks_of

    d, model, printed = fitted
    lines = printed.strip().splitlines()
    assert lines[0] == f"RaRSQ: {DEMOS} demos, {DEMOS * (STEPS - 8 + 1)} chunks of 8 steps, 30 steps"
    assert lines[-1] == f"wrote {model}"
    loaded = SkillModel.load(model)
    cfg = loaded.config
    assert (cfg.horizon, cfg.action_dim, cfg.depths, cfg.codes, cfg.estimator) == (8, DIM, 2, 32, "rotation")
    chunks, _ = chunks_of(_actions(), 8)
    usage = loaded.usage(chunks)
    for depth in (1, 2):
        m = re.fullmatch(rf"depth {depth}: perplexity (\d+\.\d{{3}}), active codes (\d+) of 32", lines[depth])
        assert m, lines[depth]
        assert float(m.group(1)) == pytest.approx(usage[f"perplexity_{depth}"], abs=1e-3)
        assert int(m.group(2)) == usage[f"active_{depth}"]
        assert 1.0 <= float(m.group(1)) <= int(m.group(2)) <= 32  # exp(H) never exceeds the active codes
    m = re.fullmatch(r"reconstruction MSE \(standardised actions\): (\d+\.\d{5})", lines[3])
    assert m, lines[3]
    assert float(m.group(1)) == pytest.approx(usage["mse"], abs=1e-5)
    assert len(lines) == 5
    assert not [p.name for p in d.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_codes_writes_one_row_per_chunk_every_horizon_steps(fitted, tmp_path, capsys):
    import pandas as pd

    from models.star.api import SkillModel, chunks_of

    d, model, _ = fitted
    out = tmp_path / "codes.csv"
    assert cli_main([SLUG, "codes", str(model), str(d / "demos.hdf5"), "-o", str(out)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == f"{DEMOS * 3} chunks of 8 steps from {DEMOS} demos; wrote {out}"
    frame = pd.read_csv(out)
    assert list(frame.columns) == ["demo", "start", "code_1", "code_2", "mse"]
    assert frame.demo.tolist() == [f"demo_{i}" for i in range(DEMOS) for _ in range(3)]
    assert frame.start.tolist() == [0, 8, 16] * DEMOS
    codes = frame[["code_1", "code_2"]].to_numpy()
    assert codes.min() >= 0 and codes.max() < 32
    # the saved model's own codes of those chunks, and their reconstruction error (standardised units)
    loaded = SkillModel.load(model)
    chunks, where = chunks_of(_actions(), 8, 8)
    assert [(n, s) for n, s in where] == list(zip(frame.demo, frame.start, strict=True))
    assert np.array_equal(codes, loaded.codes(chunks))
    err = (loaded.decode(codes) - chunks).reshape(len(chunks), -1) / loaded.sd
    np.testing.assert_allclose(frame.mse, (err**2).mean(1), atol=2e-6)
    assert (frame.mse > 0).all()


def test_codes_stride_one_gives_every_window(fitted, tmp_path, capsys):
    import pandas as pd

    d, model, _ = fitted
    out = tmp_path / "codes.csv"
    assert cli_main([SLUG, "codes", str(model), str(d / "demos.hdf5"), "--stride", "1", "-o", str(out)]) == 0
    capsys.readouterr()
    frame = pd.read_csv(out)
    assert len(frame) == DEMOS * (STEPS - 8 + 1)
    assert frame.start.tolist() == list(range(STEPS - 8 + 1)) * DEMOS
    every8 = frame[frame.start % 8 == 0][["code_1", "code_2"]].to_numpy()
    out8 = tmp_path / "codes8.csv"
    assert cli_main([SLUG, "codes", str(model), str(d / "demos.hdf5"), "-o", str(out8)]) == 0
    assert np.array_equal(every8, pd.read_csv(out8)[["code_1", "code_2"]].to_numpy())
    assert frame[["code_1", "code_2"]].drop_duplicates().shape[0] > 3  # not one code for every chunk


def test_fit_ste_flag_fits_the_baseline(files, capsys):
    from models.star.api import SkillModel

    out = files / "ste.safetensors"
    argv = [SLUG, "fit", str(files / "demos.hdf5"), "--ste", "--steps", "2", "--codes", "4", "-o", str(out)]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("STE: 6 demos") and printed[1].endswith("of 4")
    assert SkillModel.load(out).config.estimator == "ste"


def test_read_hdf5_orders_demos_by_number(tmp_path):
    from models.star.api import read_hdf5

    names = ["demo_10", "demo_2", "demo_1"]
    _write(tmp_path / "d.hdf5", {n: np.full((9, 2), float(n[5:])) for n in names})
    demos = read_hdf5(tmp_path / "d.hdf5")
    assert list(demos) == ["demo_1", "demo_2", "demo_10"]
    assert all(a.dtype == np.float32 and a.shape == (9, 2) for a in demos.values())
    assert demos["demo_10"][0, 0] == 10.0


# -------------------------------------------------------------------------------------------- bad input
def _with(**changes):
    def edit(d):
        demos = _actions()
        for name, change in changes.items():
            demos[name] = change(demos[name]) if callable(change) else change
        _write(d / "demos.hdf5", demos)

    return edit


def _nan(a):
    a = a.copy()
    a[5, 1] = np.nan
    return a


@pytest.mark.parametrize(
    ("edit", "args", "message"),
    [
        (None, ["--horizon", "30"], "demos.hdf5: horizon 30 is longer than demo_0 (24 steps)"),
        (_with(demo_4=lambda a: a[:6]), [], "demos.hdf5: horizon 8 is longer than demo_4 (6 steps)"),
        (None, ["--depths", "0"], "depths = 0: need at least 1 codebook"),
        (None, ["--codes", "1"], "codes = 1: need at least 2 codes per codebook"),
        (None, ["--horizon", "0"], "horizon = 0: need at least 1 step per chunk"),
        (None, ["--steps", "0"], "steps = 0: need at least 1 training step"),
        (_with(demo_3=_nan), [], "demos.hdf5: demo_3/actions[5, 1] is nan (actions must be finite)"),
        (_with(demo_2=None), [], "demos.hdf5: data/demo_2 has no dataset 'actions'"),
        (_with(demo_1=lambda a: a[:, :2]), [], "demos.hdf5: demos have different action dimensions [2, 3]"),
        (
            lambda d: (d / "demos.hdf5").write_bytes(np.random.default_rng(0).bytes(300)),
            [],
            "demos.hdf5: not a readable HDF5 file",
        ),
        (lambda d: (d / "demos.hdf5").unlink(), [], "demos.hdf5: no such file"),
    ],
)
def test_fit_bad_input_is_one_line_exit_2_and_nothing_written(files, capsys, edit, args, message):
    if edit is not None:
        edit(files)
    before = sorted(p.name for p in files.iterdir())
    out = files / "m.safetensors"
    argv = [SLUG, "fit", str(files / "demos.hdf5"), "--steps", "2", *args, "-o", str(out)]
    assert cli_main(argv) == 2
    res = capsys.readouterr()
    assert message in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and res.err.startswith("icml25: error: ") and not res.out
    assert not out.exists() and sorted(p.name for p in files.iterdir()) == before


@pytest.mark.parametrize(
    ("edit", "args", "message"),
    [
        (
            _with(**{f"demo_{i}": np.zeros((STEPS, 4), np.float32) for i in range(DEMOS)}),
            [],
            "demos.hdf5: actions have 4 dimensions, the model was fitted on 3",
        ),
        (_with(demo_5=lambda a: a[:7]), [], "demos.hdf5: horizon 8 is longer than demo_5 (7 steps)"),
        (_with(demo_0=_nan), [], "demo_0/actions[5, 1] is nan"),
        (_with(demo_3=None), [], "data/demo_3 has no dataset 'actions'"),
        (None, ["--stride", "0"], "--stride must be >= 1, got 0"),
        (lambda d: (d / "demos.hdf5").write_text("not hdf5\n"), [], "demos.hdf5: not a readable HDF5 file"),
        (
            lambda d: (d / "model.safetensors").write_bytes(b"\x00garbage" * 40),
            [],
            "not a readable safetensors",
        ),
        (lambda d: (d / "model.safetensors").unlink(), [], "model.safetensors: no such file"),
    ],
)
def test_codes_bad_input_is_one_line_exit_2_and_nothing_written(fitted, files, capsys, edit, args, message):
    import shutil

    shutil.copy(fitted[1], files / "model.safetensors")
    if edit is not None:
        edit(files)
    before = sorted(p.name for p in files.iterdir())
    out = files / "codes.csv"
    argv = [SLUG, "codes", str(files / "model.safetensors"), str(files / "demos.hdf5"), *args, "-o", str(out)]
    assert cli_main(argv) == 2
    res = capsys.readouterr()
    assert message in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and res.err.startswith("icml25: error: ") and not res.out
    assert not out.exists() and sorted(p.name for p in files.iterdir()) == before


@pytest.mark.parametrize("command", ["fit", "codes"])
def test_unwritable_output_is_refused_before_any_work(files, capsys, command):
    out = files / "no_dir" / "out.file"
    first = {"fit": [str(files / "demos.hdf5")]}.get(
        command, [str(files / "missing.safetensors"), str(files / "demos.hdf5")]
    )
    assert cli_main([SLUG, command, *first, "-o", str(out)]) == 2
    res = capsys.readouterr()
    assert f"--output {out}: no such directory" in res.err and not res.out, res.err
    assert not (files / "no_dir").exists()


def test_console_exit_status_2_without_traceback(files, root):
    out = files / "m.safetensors"
    res = icml25(root, SLUG, "fit", str(files / "demos.hdf5"), "--depths", "0", "-o", str(out))
    assert res.returncode == 2 and not res.stdout
    assert res.stderr.strip() == "icml25: error: depths = 0: need at least 1 codebook"
    assert not out.exists()


# ------------------------------------------------------------------------------------------ the Python entry
def test_python_entry_rarsq_and_cst():
    import torch

    from models.star import CausalSkillTransformer, RaRSQ
    from models.star.cst import CSTConfig
    from models.star.quantizer import RaRSQ as direct

    assert RaRSQ is direct
    torch.manual_seed(0)
    rq = RaRSQ(16, 32, 2)
    z = torch.randn(10, 16, requires_grad=True)
    quantized, codes, loss = rq(z)
    assert quantized.shape == (10, 16) and codes.shape == (10, 2) and loss.shape == ()
    assert codes.dtype == torch.long and 0 <= int(codes.min()) and int(codes.max()) < 32
    quantized.sum().backward()
    assert z.grad is not None and torch.isfinite(z.grad).all()
    policy = CausalSkillTransformer(CSTConfig(tasks=2))
    logits, off = policy(
        torch.tensor([0, 1]), torch.zeros(2, 3), torch.zeros(2, 12, dtype=torch.long), torch.tensor([0, 4])
    )
    assert logits.shape == (2, 2, 32) and off.shape == (2, 24)
    import models.star

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = models.star.Nope


def test_python_entry_fit_save_load_roundtrip(tmp_path):
    from models.star.api import SkillModel, chunks_of, fit_skill_model

    demos = _actions()
    model = fit_skill_model(demos, horizon=4, depths=1, codes=8, steps=3, seed=1)
    assert model.config.horizon == 4 and model.config.depths == 1 and len(model.history) == 3
    path = model.save(tmp_path / "s.safetensors")
    loaded = SkillModel.load(path)
    chunks, _ = chunks_of(demos, 4)
    assert np.array_equal(model.codes(chunks), loaded.codes(chunks))
    np.testing.assert_array_equal(loaded.mean, model.mean)
    from icml25.errors import UserError

    with pytest.raises(UserError, match=r"chunks of shape \(8, 3\), the model takes \(4, 3\)"):
        loaded.codes(chunks_of(demos, 8)[0])


def test_fit_refuses_actions_without_dimensions(files, capsys):
    _write(files / "demos.hdf5", {f"demo_{i}": np.zeros((STEPS, 0), np.float32) for i in range(3)})
    out = files / "m.safetensors"
    assert cli_main([SLUG, "fit", str(files / "demos.hdf5"), "--steps", "2", "-o", str(out)]) == 2
    res = capsys.readouterr()
    assert "demo_0" in res.err and "Traceback" not in res.err and not out.exists()


def test_python_entry_refuses_a_one_dimensional_demo():
    from icml25.errors import UserError
    from models.star.api import fit_skill_model

    with pytest.raises(UserError, match=r"\ba\b"):
        fit_skill_model({"a": np.zeros(24, np.float32)}, steps=1)


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_fit_refuses_a_seed_lightning_cannot_take_before_training(files, monkeypatch, capsys, seed):
    """--seed -1 was a traceback from Lightning's seed_everything after the demos were read and the trainer built."""
    from models.star import skills

    forbid(monkeypatch, skills, "fit_skills")
    out = files / "m.safetensors"
    assert cli_main([SLUG, "fit", str(files / "demos.hdf5"), "--seed", seed, "-o", str(out)]) == 2
    res = capsys.readouterr()
    assert res.err.strip() == f"icml25: error: --seed {seed}: must be an integer in [0, 2^32)" and not res.out
    assert not out.exists()


def _foreign_model(d):
    import json

    from safetensors.numpy import save_file

    meta = {"icml25": json.dumps({"kind": "issm-model"})}
    save_file({"w": np.zeros(2, np.float32)}, str(d / "model.safetensors"), metadata=meta)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: (d / "demos.hdf5").unlink(), "demos.hdf5: no such file"),
        (lambda d: (d / "demos.hdf5").write_text("not hdf5\n"), "demos.hdf5: not a readable HDF5 file"),
        (_with(demo_0=_nan), "demo_0/actions[5, 1] is nan"),
        (_foreign_model, "model.safetensors: not a star-skills file"),
    ],
    ids=["demos-missing", "demos-not-hdf5", "demos-nan", "foreign-model"],
)
def test_codes_checks_the_demos_and_the_model_file_before_loading(
    fitted, files, monkeypatch, capsys, edit, message
):
    import shutil

    from models.star.api import SkillModel

    shutil.copy(fitted[1], files / "model.safetensors")
    edit(files)

    forbid(monkeypatch, SkillModel, "load")
    out = files / "codes.csv"
    argv = [SLUG, "codes", str(files / "model.safetensors"), str(files / "demos.hdf5"), "-o", str(out)]
    assert_refused(*run_tool(*argv), message)
    assert not out.exists()
