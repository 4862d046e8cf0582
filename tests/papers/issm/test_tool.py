"""`fit_issm` (the Python entry) and `icml25 issm fit|predict` (in process through the installed entry, once
through the console for the exit status): a tiny fit and its prediction, and every bad input as one line
naming the value, exit 2, no traceback and nothing written."""

from __future__ import annotations

import numpy as np
import pytest

from flows.cli import main as cli_main
from icml25.errors import UserError
from models.issm import simulate
from tests.helpers import assert_refused, forbid, icml25, run_tool

SLUG = "issm"
K, T, N = 3, 30, 4


def _recordings(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = simulate.pulse_protocol(rng, K, T, 2, 3, 2)
    x = simulate.linear_latents(u, rng, simulate.LINEAR_A, simulate.DT)
    emission = simulate.TanhEmission.draw(np.random.default_rng(1), neurons=N)
    return emission(x) + 0.05 * rng.standard_normal((K, T, N)), u


def _nan(y):
    y = y.copy()
    y[1, 2, 3] = np.nan
    return y


@pytest.fixture()
def files(tmp_path):
    y, u = _recordings()
    np.savez(tmp_path / "data.npz", y=y, u=u)
    np.savez(tmp_path / "stim.npz", u=u[0])
    return tmp_path


@pytest.fixture(scope="module")
def fitted():
    from models.issm import fit_issm

    y, u = _recordings()
    return fit_issm(y, u, latent_dim=2, iters=5, seed=0)


# ------------------------------------------------------------------------------------------ the Python API
def test_fit_issm_returns_a_fitted_model_that_predicts(fitted):
    from models.issm import FittedISSM

    y, u = _recordings()
    assert isinstance(fitted, FittedISSM) and fitted.A.shape == (2, 2) and len(fitted.history) == 5
    assert fitted.final_elbo == fitted.history[-1]["elbo"] and np.isfinite(fitted.final_elbo)
    np.testing.assert_allclose(fitted.eigenvalues, np.linalg.eigvals(fitted.A))
    x_hat = fitted.posterior(y, u)
    assert x_hat.shape == (K, T, 2)
    on = u != 0
    assert np.array_equal(x_hat[on], u[on])  # the clamp (B = I)
    pred = fitted.predict(u[1], n_trials=3)
    assert pred.shape == (3, T, N)
    assert np.array_equal(pred[0], pred[1]) and np.array_equal(pred[0], pred[2])
    assert np.array_equal(pred[0], fitted.predict(u[1:2])[0])
    assert not np.array_equal(pred[0], fitted.predict(u[0:1])[0])  # another protocol, another prediction
    rollout = fitted.rollout(u[1], n_trials=1)[0]
    assert np.array_equal(rollout[u[1] != 0], u[1][u[1] != 0])


def test_fit_issm_ssm_does_not_clamp():
    from models.issm import fit_issm

    y, u = _recordings()
    fit = fit_issm(y, u, latent_dim=2, interventional=False, iters=2, seed=0)
    assert not fit.config.interventional
    x_hat = fit.posterior(y, u)
    assert not np.allclose(x_hat[u != 0], u[u != 0])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"iters": 0}, "iters must be an integer >= 1, got 0"),
        ({"latent_dim": 0}, "latent_dim must be an integer >= 1, got 0"),
        ({"latent_dim": 2.0}, "latent_dim must be an integer >= 1, got 2.0"),
        ({"dt": 0.0}, "dt must be > 0, got 0.0"),
        ({"gamma": -1.0}, "gamma must be >= 0, got -1.0"),
        ({"B": np.eye(3)}, "B must be a finite 2 x inputs matrix, got shape (3, 3)"),
        ({"y": lambda y: y[:, :, 0]}, "y must be 3-D (trials x bins x neurons), got shape (3, 30)"),
        ({"y": _nan}, "y has a non-finite value at index (1, 2, 3)"),
        ({"u": lambda u: u[:, :29]}, "u has 3 trials x 29 bins but y has 3 x 30: they must match"),
        (
            {"u": lambda u: np.concatenate([u, u[..., :1]], axis=2)},
            "u has 3 inputs but they must match the 2 latents (B = I)",
        ),
    ],
)
def test_fit_issm_bad_input_is_a_user_error(change, message):
    from models.issm import fit_issm

    y, u = _recordings()
    kwargs = {"y": y, "u": u, "latent_dim": 2, "iters": 1, **change}
    for name, value in (("y", y), ("u", u)):
        if callable(kwargs[name]):
            kwargs[name] = kwargs[name](value)
    with pytest.raises(UserError) as info:
        fit_issm(**kwargs)
    assert str(info.value) == message


def test_predict_refuses_a_protocol_that_does_not_fit(fitted):
    _, u = _recordings()
    with pytest.raises(UserError, match=r"n_trials = 2 but u_new holds 3 trials"):
        fitted.predict(u, n_trials=2)
    with pytest.raises(UserError, match=r"u has 1 inputs but the model's B has 2 columns"):
        fitted.predict(u[0, :, :1])
    y, _ = _recordings()
    with pytest.raises(UserError, match=r"y has 3 neurons but the model was fitted to 4"):
        fitted.posterior(y[..., :3], u)


# ------------------------------------------------------------------------------------------------ the CLI
def _stim3(d):
    np.savez(d / "stim.npz", u=np.zeros((T, 3)))


def _write(d, **arrays):
    y, u = _recordings()
    base = {"y": y, "u": u}
    for k, v in arrays.items():
        if v is None:
            base.pop(k)
        else:
            base[k] = v(base[k])
    np.savez(d / "data.npz", **base)


@pytest.mark.parametrize(
    ("edit", "args", "message"),
    [
        (
            lambda d: _write(d, y=lambda y: y[:, :, 0]),
            [],
            "y must be 3-D (trials x bins x neurons), got shape (3, 30)",
        ),
        (
            lambda d: _write(d, u=lambda u: u[:2]),
            [],
            "u has 2 trials x 30 bins but y has 3 x 30: they must match",
        ),
        (
            lambda d: _write(d, u=lambda u: u[:, :20]),
            [],
            "u has 3 trials x 20 bins but y has 3 x 30: they must match",
        ),
        (
            lambda d: _write(d, u=lambda u: np.concatenate([u, u[..., :1]], axis=2)),
            [],
            "u has 3 inputs but they must match the 2 latents (B = I)",
        ),
        (lambda d: _write(d, y=_nan), [], "y has a non-finite value at index (1, 2, 3)"),
        (None, ["--iters", "0"], "--iters must be >= 1, got 0"),
        (None, ["--latents", "0"], "--latents must be >= 1, got 0"),
        (
            lambda d: (d / "data.npz").write_bytes(np.random.default_rng(0).bytes(300)),
            [],
            "data.npz: this is not an .npz archive (no zip header)",
        ),
        (
            lambda d: (d / "data.npz").write_bytes((d / "data.npz").read_bytes()[:200]),
            [],
            "data.npz: this .npz file is truncated or corrupt",
        ),
        (lambda d: _write(d, u=None), [], "data.npz: no array u (it holds: y)"),
        (lambda d: (d / "data.npz").unlink(), [], "data.npz: no such file"),
    ],
)
def test_fit_bad_input_is_one_line_exit_2_and_nothing_written(files, capsys, edit, args, message):
    if edit is not None:
        edit(files)
    out = files / "m.safetensors"
    argv = [SLUG, "fit", str(files / "data.npz"), "--latents", "2", "--iters", "2", *args, "-o", str(out)]
    assert cli_main(argv) == 2
    res = capsys.readouterr()
    assert message in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and not res.out
    assert not out.exists() and not list(files.glob(".*"))


@pytest.fixture(scope="module")
def model_file(fitted, tmp_path_factory):
    return fitted.save(tmp_path_factory.mktemp("issm-model") / "m.safetensors")


def _foreign_safetensors(d):
    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2)}, str(d / "model.safetensors"), metadata={"other": "x"})


def _issm_kind_wrong_tensors(d):
    import torch

    from models.common.weights import save_weights
    from models.issm.model import Config

    meta = {
        "kind": "issm-model",
        "config": Config(latents=2, inputs=2, neurons=4).to_dict(),
        "final_elbo": 0.0,
    }
    save_weights(d / "model.safetensors", {"A": torch.eye(2), "B": torch.eye(2)}, meta)


@pytest.mark.parametrize(
    ("edit", "args", "message"),
    [
        (
            lambda d: (d / "model.safetensors").write_bytes(b"\x00garbage" * 40),
            [],
            "not a readable safetensors file",
        ),
        (_foreign_safetensors, [], "not a issm-model file (its metadata does not say so)"),
        (_issm_kind_wrong_tensors, [], "the weights do not match an iSSM"),
        (lambda d: (d / "model.safetensors").unlink(), [], "model.safetensors: no such file"),
        (_stim3, [], "u has 3 inputs but the model's B has 2 columns"),
        (lambda d: np.savez(d / "stim.npz", v=np.zeros((T, 2))), [], "stim.npz: no array u (it holds: v)"),
        (lambda d: np.savez(d / "stim.npz", u=np.zeros(T)), [], "u must be 2-D (bins x inputs) or 3-D"),
        (lambda d: np.savez(d / "stim.npz", u=np.zeros((3, T, 2))), ["--trials", "2"], "--trials 2 but"),
        (None, ["--trials", "0"], "--trials must be >= 1, got 0"),
        (
            lambda d: np.savez(d / "stim.npz", u=np.full((T, 2), np.inf)),
            [],
            "u has a non-finite value at index (0, 0, 0)",
        ),
    ],
)
def test_predict_bad_input_is_one_line_exit_2_and_nothing_written(
    files, model_file, capsys, edit, args, message
):
    import shutil

    shutil.copy(model_file, files / "model.safetensors")
    if edit is not None:
        edit(files)
    out = files / "p.npz"
    argv = [SLUG, "predict", str(files / "model.safetensors"), str(files / "stim.npz"), *args, "-o", str(out)]
    assert cli_main(argv) == 2
    res = capsys.readouterr()
    assert message in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and not res.out
    assert not out.exists() and not list(files.glob(".*"))


def test_fit_then_predict_happy_path(files, capsys):
    from models.issm import FittedISSM, fit_issm

    model = files / "m.safetensors"
    argv = [SLUG, "fit", str(files / "data.npz"), "--latents", "2", "--iters", "5", "-o", str(model)]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    loaded = FittedISSM.load(model)
    assert printed[0] == f"iSSM: 5 steps, final ELBO {loaded.final_elbo:.6g}"
    assert printed[1].startswith("eigenvalues of A: ")
    shown = [complex(s.replace("i", "j")) for s in printed[1].split(": ", 1)[1].split(", ")]
    want = sorted(loaded.eigenvalues, key=lambda v: (v.real, v.imag))
    got = sorted(shown, key=lambda v: (v.real, v.imag))
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    # the CLI fits what the Python entry fits with the same seed
    y, u = _recordings()
    assert np.array_equal(loaded.A, fit_issm(y, u, 2, iters=5, seed=0).A)

    pred = files / "p.npz"
    argv = [SLUG, "predict", str(model), str(files / "stim.npz"), "--trials", "2", "-o", str(pred)]
    assert cli_main(argv) == 0
    assert "predicted 2 trials x 30 bins x 4 neurons" in capsys.readouterr().out
    with np.load(pred) as z:
        yp, xp = z["y"], z["x"]
    assert yp.shape == (2, T, N) and xp.shape == (2, T, 2)
    assert np.array_equal(yp[0], yp[1])
    np.testing.assert_allclose(yp, loaded.predict(u[0], 2), rtol=1e-6)
    on = u[0] != 0
    assert np.array_equal(xp[0][on], u[0][on])


def test_fit_ssm_flag_fits_the_baseline(files, capsys):
    from models.issm import FittedISSM

    model = files / "m.safetensors"
    argv = [SLUG, "fit", str(files / "data.npz"), "--latents", "2", "--iters", "2", "--ssm", "-o", str(model)]
    assert cli_main(argv) == 0
    assert capsys.readouterr().out.startswith("SSM: 2 steps, final ELBO ")
    assert not FittedISSM.load(model).config.interventional


def test_console_exit_status_2_without_traceback(files, root):
    out = files / "m.safetensors"
    res = icml25(root, SLUG, "fit", str(files / "data.npz"), "--latents", "2", "--iters", "0", "-o", str(out))
    assert res.returncode == 2 and not res.stdout
    assert res.stderr.strip() == "icml25: error: --iters must be >= 1, got 0"
    assert not out.exists()


@pytest.mark.parametrize("command", ["fit", "predict"])
def test_unwritable_output_is_refused_before_any_work(files, capsys, command):
    out = files / "no_dir" / "out.file"
    (files / "model.safetensors").write_bytes(b"not a model")  # predict would fail on it if it got that far
    first = {"fit": [str(files / "data.npz"), "--latents", "2", "--iters", "2"]}.get(
        command, [str(files / "model.safetensors"), str(files / "stim.npz")]
    )
    assert cli_main([SLUG, command, *first, "-o", str(out)]) == 2
    res = capsys.readouterr()
    assert f"--output {out}: no such directory" in res.err and not res.out, res.err
    assert not (files / "no_dir").exists()


def test_fit_issm_reports_progress_to_a_callback():
    """``progress(step, terms)`` is called every 100 steps and at the last (a callback attribute named ``log``
    once shadowed Lightning's own and crashed the fit)."""
    import numpy as np

    from models.issm import fit_issm

    rng = np.random.default_rng(0)
    seen = []
    fit_issm(
        rng.normal(size=(2, 20, 2)),
        np.zeros((2, 20, 2)),
        2,
        iters=150,
        progress=lambda s, t: seen.append((s, t)),
    )
    assert [s for s, _ in seen] == [100, 150] and all("elbo" in t for _, t in seen)


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_fit_refuses_a_seed_lightning_cannot_take_before_training(files, monkeypatch, capsys, seed):
    """--seed -1 was a traceback from Lightning's seed_everything after the data were read and the trainer built
    (18 s on a busy machine)."""
    from models.issm import lit

    forbid(monkeypatch, lit, "fit_model")
    out = files / "m.safetensors"
    argv = [SLUG, "fit", str(files / "data.npz"), "--latents", "2", "--seed", seed, "-o", str(out)]
    assert cli_main(argv) == 2
    res = capsys.readouterr()
    assert res.err.strip() == f"icml25: error: --seed {seed}: must be an integer in [0, 2^32)" and not res.out
    assert not out.exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: np.savez(d / "stim.npz", u=np.zeros(T)), "u must be 2-D (bins x inputs) or 3-D"),
        (lambda d: (d / "stim.npz").unlink(), "stim.npz: no such file"),
        (_foreign_safetensors, "not a issm-model file (its metadata does not say so)"),
        (
            lambda d: (d / "model.safetensors").write_bytes(b"\x00garbage" * 40),
            "not a readable safetensors file",
        ),
    ],
    ids=["stim-1d", "stim-missing", "foreign-model", "garbage-model"],
)
def test_predict_checks_the_protocol_and_the_model_file_before_loading(
    files, model_file, monkeypatch, capsys, edit, message
):
    import shutil

    from models.issm import FittedISSM

    shutil.copy(model_file, files / "model.safetensors")
    edit(files)

    forbid(monkeypatch, FittedISSM, "load")
    out = files / "p.npz"
    argv = [SLUG, "predict", str(files / "model.safetensors"), str(files / "stim.npz"), "-o", str(out)]
    assert_refused(*run_tool(*argv), message)
    assert not out.exists()
