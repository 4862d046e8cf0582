"""`icml25 autospeculative sample` (in process through the installed entry) and the Python entry ``asd_sample``.

The CLI on the mixture (K = L = 64, n = 100, --check) exits 0, prints the mean calls per sample (the npz's calls
mean) and the permutation p (the npz's p), and writes samples, calls, evaluations, rounds, sequential, energy and
p. Every bad input (K = 1, a window of 0 or K + 1, n = 0, an unknown model, a .safetensors file that is not the
network's, a garbage or missing file, a checkpoint of the right kind with wrongly shaped tensors, an output that is
not .npz, the digits network when it was not trained here) is one line naming the value, exit 2, no traceback and
nothing written. A tiny trained checkpoint samples (slow: Lightning). ``asd_sample`` returns (n, *shape) samples
and per-chain stats; an exact Gaussian x0 (or eps) predictor on a 1000-step linear-beta schedule gives the data's
K-step sampler's mean and spread (closed form); bad input is a UserError naming it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from flows.cli import main as cli_main
from tests.helpers import forbid, run_tool

SLUG = "autospeculative"
KIND = "autospeculative-x0net"


def _run(argv: list[str]) -> tuple[int, str, str]:
    return run_tool(SLUG, "sample", *argv)


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """`icml25 autospeculative sample --model gmm --steps 64 --window 64 --n 100 --check -o out.npz`."""
    d = tmp_path_factory.mktemp("asd-tool")
    out = d / "out.npz"
    status, printed, err = _run(
        ["--model", "gmm", "--steps", "64", "--window", "64", "--n", "100", "--check", "-o", str(out)]
    )
    return status, printed, err, out


def test_sample_prints_calls_and_p_and_writes_the_npz(sampled):
    status, printed, err, out = sampled
    assert status == 0 and not err, err
    lines = printed.strip().splitlines()
    assert len(lines) == 3 and lines[-1] == f"wrote {out}"
    m = re.match(
        r"gmm: K = 64, L = 64, n = 100: (\d+\.\d) sequential calls per sample \(max (\d+); sequential sampler 65, "
        r"speed-up (\d+\.\d)x\), (\d+) evaluations per sample, (\d\.\d{3}) of judged drafts accepted$",
        lines[0],
    )
    assert m, lines[0]
    p_line = re.fullmatch(
        r"check against the sequential sampler: energy distance (\d+\.\d{4}), permutation p = (\d\.\d{3})",
        lines[1],
    )
    assert p_line, lines[1]
    with np.load(out) as z:
        arrays = {k: z[k] for k in z.files}
    assert set(arrays) == {"samples", "calls", "evaluations", "rounds", "sequential", "energy", "p"}
    assert arrays["samples"].shape == (100, 2) and arrays["sequential"].shape == (100, 2)
    assert np.isfinite(arrays["samples"]).all()
    for key in ("calls", "evaluations", "rounds"):
        assert arrays[key].shape == (100,) and arrays[key].dtype.kind == "i", key
    calls = arrays["calls"]
    assert float(m.group(1)) == pytest.approx(calls.mean(), abs=0.05) and int(m.group(2)) == calls.max()
    assert float(m.group(3)) == pytest.approx(65 / calls.mean(), abs=0.05)
    assert int(m.group(4)) == pytest.approx(arrays["evaluations"].mean(), abs=0.5)
    assert float(p_line.group(1)) == pytest.approx(float(arrays["energy"]), abs=5e-5)
    assert float(p_line.group(2)) == pytest.approx(float(arrays["p"]), abs=5e-4)
    # ASD with L = K: far fewer calls than the sequential sampler's 65, and the test does not reject
    assert calls.max() < 65 and (calls == arrays["rounds"] + 2).all() and float(arrays["p"]) > 0.001
    # samples lie on the mixture's circle of radius 4
    assert np.median(np.abs(np.linalg.norm(arrays["samples"], axis=1) - 4.0)) < 0.5
    assert not [p.name for p in out.parent.iterdir() if p.name != "out.npz"]  # no temporary file left


def test_without_check_there_is_no_sequential_arm(tmp_path):
    out = tmp_path / "o.npz"
    status, printed, _ = _run(["--model", "gmm", "--steps", "8", "--window", "3", "--n", "4", "-o", str(out)])
    assert status == 0 and "permutation p" not in printed
    with np.load(out) as z:
        assert set(z.files) == {"samples", "calls", "evaluations", "rounds"}
        assert z["samples"].shape == (4, 2)
        assert (z["rounds"] >= 3).all()  # ceil(8 / 3) rounds at least


# -------------------------------------------------------------------------------------------- bad input
def _foreign(path):
    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(3)}, str(path))


def _garbage(path):
    path.write_bytes(b"not a safetensors file at all\n" * 10)


def _wrong_shape(path):
    import torch

    from models.common.weights import save_weights

    tensors = {"net.0.weight": torch.zeros(8, 3), "net.0.bias": torch.zeros(8)}
    save_weights(path, tensors, {"kind": KIND, "dim": 4, "hidden": 8, "depth": 1})


def _no_meta_dims(path):
    import torch

    from models.common.weights import save_weights

    save_weights(path, {"net.0.weight": torch.zeros(8, 3)}, {"kind": KIND})


# A checkpoint whose tensors reach the network module imports Lightning: ~9 s alone (free when the smoke pipeline
# ran first in the session), so those cases are slow; a foreign, garbled or missing file fails before that.
SLOW_LOAD = pytest.mark.slow


@pytest.mark.parametrize(
    ("args", "message", "make"),
    [
        (["--steps", "1", "--window", "1"], "K = 1: need at least 2 steps", None),
        (["--window", "0"], "L = 0: the window must lie in [1, K = 8]", None),
        (["--window", "9"], "L = 9: the window must lie in [1, K = 8]", None),
        (["--n", "0"], "n = 0: need at least 1 sample", None),
        (["--model", "nope"], "--model 'nope': must be gmm, digits or a .safetensors checkpoint", None),
        pytest.param(
            ["--model", "{d}/other.safetensors"],
            f"{{d}}/other.safetensors: not a {KIND} file",
            _foreign,
        ),
        pytest.param(
            ["--model", "{d}/junk.safetensors"],
            "{d}/junk.safetensors: not a readable safetensors file",
            _garbage,
        ),
        pytest.param(["--model", "{d}/gone.safetensors"], "{d}/gone.safetensors: no such file", None),
        pytest.param(
            ["--model", "{d}/shape.safetensors"],
            "{d}/shape.safetensors: tensors do not fit",
            _wrong_shape,
            marks=SLOW_LOAD,
        ),
        pytest.param(
            ["--model", "{d}/bare.safetensors"],
            "{d}/bare.safetensors: tensors do not fit",
            _no_meta_dims,
            marks=SLOW_LOAD,
        ),
        (["-o", "{d}/out.csv"], "--output {d}/out.csv: expected a .npz file", None),
        (["-o", "{d}/no_dir/out.npz"], "--output {d}/no_dir/out.npz: no such directory", None),
    ],
    ids=[
        "K-1",
        "window-0",
        "window-K+1",
        "n-0",
        "unknown-model",
        "foreign-safetensors",
        "garbage-file",
        "missing-file",
        "wrong-shapes",
        "no-dims",
        "suffix",
        "no-dir",
    ],  # fmt: skip
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, args, message, make):
    args = [a.format(d=tmp_path) for a in args]
    if make is not None:
        make(tmp_path / args[args.index("--model") + 1].rsplit("/", 1)[1])
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = {"--model": "gmm", "--steps": "8", "--window": "8", "--n": "5", "-o": str(tmp_path / "out.npz")}
    argv.update(zip(args[::2], args[1::2], strict=True))
    assert cli_main([SLUG, "sample", *[x for kv in argv.items() for x in kv]]) == 2
    res = capsys.readouterr()
    assert res.err.startswith("icml25: error: ") and len(res.err.strip().splitlines()) == 1, res.err
    assert message.format(d=tmp_path) in res.err and "Traceback" not in res.err, res.err
    assert not res.out
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_digits_without_a_trained_network_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["--model", "digits", "--steps", "8", "--window", "8", "--n", "5", "-o", "out.npz"]
    assert cli_main([SLUG, "sample", *argv]) == 2
    res = capsys.readouterr()
    assert res.err.strip() == (
        "icml25: error: data/autospeculative/trained/main/x0net.safetensors: no trained digits network here; "
        "run `dvc repro train@autospeculative` first"
    )
    assert not res.out and list(tmp_path.iterdir()) == []


@pytest.mark.slow  # Lightning's import (~9 s alone), then a 5-step fit and sampling (~0.1 s)
def test_a_tiny_trained_checkpoint_samples(tmp_path):
    from models.autospeculative import network

    data = np.random.default_rng(0).uniform(-1, 1, (50, 4))
    net, history = network.fit(data, steps=5, batch=16, hidden=8, depth=1)
    assert len(history) == 5 and np.isfinite(history).all()
    ckpt = network.save(net, tmp_path / "tiny.safetensors")
    loaded = network.load(ckpt)
    assert (loaded.dim, loaded.hidden, loaded.depth) == (4, 8, 1)
    out = tmp_path / "s.npz"
    status, printed, err = _run(
        ["--model", str(ckpt), "--steps", "8", "--window", "8", "--n", "5", "-o", str(out)]
    )
    assert status == 0 and not err, err
    assert printed.startswith(f"{ckpt}: K = 8, L = 8, n = 5: ")
    with np.load(out) as z:
        assert z["samples"].shape == (5, 4) and np.isfinite(z["samples"]).all()
        assert (z["calls"] <= 10).all() and (z["calls"] >= 3).all()


# ------------------------------------------------------------------------------------------ the Python entry
def _linear_schedule() -> np.ndarray:
    return np.cumprod(1.0 - np.linspace(1e-4, 0.02, 1000))


def _gaussian_x0(mu: float, s: float, abar_all: np.ndarray):
    """E[x0 | x_t] for data N(mu, s^2 I): mu + s^2 sqrt(abar) (x_t - sqrt(abar) mu) / (abar s^2 + 1 - abar)."""

    def x0(x_t, timesteps):
        a = abar_all[np.asarray(timesteps)].reshape((-1,) + (1,) * (np.ndim(x_t) - 1))
        return mu + s * s * np.sqrt(a) * (x_t - np.sqrt(a) * mu) / (a * s * s + 1 - a)

    return x0


def test_python_entry_returns_samples_of_the_shape_and_stats():
    from models.autospeculative import asd_sample

    seen = []

    def zero(x_t, timesteps):
        seen.append((x_t.shape, np.asarray(timesteps)))
        return np.zeros_like(x_t)

    samples, st = asd_sample(zero, _linear_schedule(), K=16, L=4, n=3, seed=1, shape=(2, 3))
    assert samples.shape == (3, 2, 3) and (samples == 0).all()
    assert set(st) == {"calls", "evaluations", "rounds", "judged", "accepted"}
    assert st["calls"].shape == (3,) and (st["calls"] == 16 // 4 + 2).all()  # m = 0: every draft accepted
    assert st["judged"].shape == (16,) and np.array_equal(st["judged"], st["accepted"])
    assert all(shape[1:] == (2, 3) for shape, _ in seen)
    used = np.unique(np.concatenate([ts for _, ts in seen]))
    assert used.dtype.kind == "i" and used.min() >= 0 and used.max() == 999 and 0 in used


def _k_step_law(mu: float, s: float, t: np.ndarray) -> tuple[float, float]:
    """Mean and std of the K-step sampler's output for data N(mu, s^2) from y_0 ~ N(0, t_0), in closed form: with
    m(y, t) = lam (mu / s^2 + y), lam = 1 / (1 / s^2 + t), each step is affine in y plus N(0, eta) noise. (K steps
    under-disperse: at K = 64 on the linear schedule the std is about 0.454 for s = 0.5.)"""
    mean, var = 0.0, t[0]
    for k in range(len(t) - 1):
        eta, lam = t[k + 1] - t[k], 1.0 / (1.0 / s**2 + t[k])
        mean = mean * (1 + eta * lam) + eta * lam * mu / s**2
        var = var * (1 + eta * lam) ** 2 + eta
    lam = 1.0 / (1.0 / s**2 + t[-1])
    return lam * (mu / s**2 + mean), lam * np.sqrt(var)


@pytest.mark.parametrize("prediction", ["x0", "eps"])
def test_an_exact_gaussian_predictor_samples_the_k_step_law(prediction):
    from models.autospeculative import asd_sample
    from models.autospeculative.sl import grid_from_alphas_cumprod

    mu, s, K = 1.5, 0.5, 64
    abar_all = _linear_schedule()
    x0 = _gaussian_x0(mu, s, abar_all)
    if prediction == "x0":
        denoiser = x0
    else:

        def denoiser(x_t, timesteps):
            a = abar_all[np.asarray(timesteps)].reshape((-1,) + (1,) * (np.ndim(x_t) - 1))
            return (x_t - np.sqrt(a) * x0(x_t, timesteps)) / np.sqrt(1 - a)

    samples, st = asd_sample(denoiser, abar_all, K=K, L=K, n=2000, seed=0, prediction=prediction, shape=(3,))
    assert samples.shape == (2000, 3)
    mean, std = _k_step_law(mu, s, grid_from_alphas_cumprod(abar_all, K)[0])
    assert mean == pytest.approx(mu, abs=1e-3) and std == pytest.approx(0.454, abs=0.002)
    assert samples.mean() == pytest.approx(mean, abs=0.03)  # 6000 draws: standard error 0.006
    np.testing.assert_allclose(samples.std(0), std, rtol=0.05)
    assert samples.std() == pytest.approx(std, rel=0.03)
    assert st["calls"].mean() < (K + 1) / 4
    if prediction == "eps":  # the same chains as with the x0 predictor, up to round-off
        ref, ref_st = asd_sample(x0, abar_all, K=K, L=K, n=2000, seed=0, shape=(3,))
        np.testing.assert_allclose(samples, ref, atol=1e-6)
        assert np.array_equal(st["calls"], ref_st["calls"])


def test_python_entry_seeds_reproduce():
    from models.autospeculative import asd_sample

    x0 = _gaussian_x0(0.0, 1.0, _linear_schedule())
    a = asd_sample(x0, _linear_schedule(), K=32, L=8, n=20, seed=5, shape=(2,))
    b = asd_sample(x0, _linear_schedule(), K=32, L=8, n=20, seed=5, shape=(2,))
    c = asd_sample(x0, _linear_schedule(), K=32, L=8, n=20, seed=6, shape=(2,))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1]["calls"], b[1]["calls"])
    assert not np.array_equal(a[0], c[0])


def _clipped_case():
    abar = np.minimum(_linear_schedule(), 0.5)
    K = 20
    steps = np.round(np.linspace(999, 0, K + 1)).astype(int)
    first = int(np.flatnonzero(np.diff(abar[steps]) <= 0)[0]) + 1
    return abar, K, first


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"K": 1, "L": 1}, "K = 1: need at least 2 steps"),
        ({"K": 8, "L": 9}, r"L = 9: the window must lie in \[1, K = 8\]"),
        ({"L": 0}, r"L = 0: the window must lie in \[1, K = 8\]"),
        ({"n": 0}, "n = 0: need at least 1 sample"),
        ({"prediction": "v"}, "prediction = 'v': must be 'x0' or 'eps'"),
        ({"frozen_mean": "warm"}, "frozen_mean = 'warm'"),
        ({"shape": ()}, r"shape = \(\): need positive sizes"),
        ({"shape": (2, 0)}, r"shape = \(2, 0\)"),
        ({"K": 1000}, "K = 1000: must lie in"),
        ({"alphas_cumprod": [0.9, 1.2, 0.1]}, "values in"),
        ("clipped", None),
    ],
)
def test_python_entry_refuses_bad_input(kwargs, message):
    from icml25.errors import UserError
    from models.autospeculative import asd_sample

    base = {"alphas_cumprod": _linear_schedule(), "K": 8, "L": 8, "n": 2, "shape": (2,)}
    if kwargs == "clipped":  # a schedule clipped at 0.5: the grid repeats t; the message names the index
        abar, K, first = _clipped_case()
        kwargs, message = {"alphas_cumprod": abar, "K": K, "L": K}, rf"t\[{first}\] = .* does not exceed"
    with pytest.raises(UserError, match=message):
        asd_sample(lambda x, ts: x, **{**base, **kwargs})


@pytest.mark.parametrize(
    ("args", "message", "make"),
    [
        (["--seed", "-1"], "--seed -1: must be an integer >= 0", None),
        (["--model", "{d}/other.safetensors"], f"{{d}}/other.safetensors: not a {KIND} file", _foreign),
        (
            ["--model", "{d}/junk.safetensors"],
            "{d}/junk.safetensors: not a readable safetensors file",
            _garbage,
        ),
    ],
    ids=["negative-seed", "foreign-safetensors", "garbage-file"],
)
def test_the_seed_and_a_checkpoint_file_are_checked_before_loading(
    tmp_path, monkeypatch, args, message, make
):
    """--seed -1 was a traceback from NumPy once sampling began (after the digits network loaded); a foreign
    checkpoint was read by safetensors and torch to be refused."""
    import models.common.weights as weights

    forbid(monkeypatch, weights, "load_weights")
    args = [a.format(d=tmp_path) for a in args]
    if make is not None:
        make(tmp_path / args[1].rsplit("/", 1)[1])
    argv = {"--model": "gmm", "--steps": "8", "--window": "8", "--n": "5", "-o": str(tmp_path / "out.npz")}
    argv.update(zip(args[::2], args[1::2], strict=True))
    status, printed, err = _run([x for kv in argv.items() for x in kv])
    assert status == 2 and not printed and message.format(d=tmp_path) in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out.npz").exists()
