"""`icml25 bundle_cbf filter` / `icml25 bundle_cbf fit` (in process, through flows.cli), on 10 short noisy
rollouts of the plant written here (models.bundle_cbf.data.rollouts) and fits of 20 Adam steps.

``filter``: far from the obstacle u is u_nom and nothing is active; heading into it u changes, the obstacle is
reported active and its HOCBF half-plane holds at the printed u; the printed u, active set and infeasible flag
are safe_control's (random states, 1-3 obstacles, delta 0, other gains and box); a u_nom outside the box is
clipped with that face reported; an obstacle too close to avoid within the box is reported infeasible; a
negative value may follow its flag. ``fit``: writes a model that ``filter --model`` loads (the printed u is
safe_control's under load_model's model), prints the b_theta and the one-step error of the saved model
(observed_error on the trajectories with their sigma); without --sigma-col the weighted and the --unweighted
fits are the same fit, and the file records which it was. Each bad input (a state not of 4 numbers, a pair not
of 2, NaN, a negative radius or delta, u-max, k1 or k2 <= 0, a missing, non-safetensors or foreign model file,
or one of other tensors or a bad hidden size; dt <= 0 or NaN, steps or horizon 0, a missing file, column or
sigma column, a NaN, a sigma <= 0, a dt that is not the data's, a missing output folder, an output not
.safetensors) is one line naming the value, exit 2, nothing on stdout, nothing written.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from tests.helpers import assert_refused, forbid, printed_fields, run_tool

SLUG = "bundle_cbf"
FIT = ["--dt", "0.02", "--steps", "20"]


def _run(argv: list[str]) -> tuple[int, str, str]:
    return run_tool(SLUG, *argv)


def _call(capsys, argv: list[str]) -> tuple[int, str, str]:
    return run_tool(SLUG, *argv)


_lines = printed_fields


def _floats(text: str) -> np.ndarray:
    return np.array([float(x) for x in text.split()])


def _csv(values) -> str:
    return ",".join(f"{float(v):.17g}" for v in values)


def _filter_argv(state, measured, u_nom, radius=0.3, delta=0.05, **extra) -> list[str]:
    argv = ["filter", "--state", _csv(state), "--measured", ";".join(_csv(p) for p in measured)]
    argv += ["--radius", f"{radius:.17g}", "--delta", f"{delta:.17g}", "--u-nom", _csv(u_nom)]
    for k, v in extra.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return argv


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The trajectories (and broken copies of them) as CSV files, and a weighted fit by the CLI."""
    from models.bundle_cbf.data import rollouts

    d = tmp_path_factory.mktemp("bundle-cbf-tool")
    frame = rollouts(np.random.default_rng(0), 10, 15, noise=0.02, floor=0.005)
    paths = {"traj": d / "traj.csv"}
    frame.to_csv(paths["traj"], index=False)
    broken = {
        "no_vx": frame.drop(columns="vx"),
        "nan_px": frame.assign(px=np.where(np.arange(len(frame)) == 3, np.nan, frame.px)),
        "zero_sigma": frame.assign(sigma=np.where(np.arange(len(frame)) == 7, 0.0, frame.sigma)),
    }
    for name, f in broken.items():
        paths[name] = d / f"{name}.csv"
        f.to_csv(paths[name], index=False)
    model = d / "weighted.safetensors"
    status, printed, err = _run(["fit", str(paths["traj"]), *FIT, "--sigma-col", "sigma", "-o", str(model)])
    assert status == 0, err
    return SimpleNamespace(dir=d, frame=frame, paths=paths, model=model, printed=printed)


# ------------------------------------------------------------------------------------------------- filter
def test_filter_far_from_the_obstacle_returns_u_nom(capsys):
    status, printed, err = _call(capsys, _filter_argv([1.0, 1.0, 0.3, -0.2], [[3.0, 0.0]], [0.5, -0.5]))
    assert status == 0 and not err, err
    lines = _lines(printed)
    assert lines["u"] == "0.500000 -0.500000"
    assert lines["active"] == "none" and lines["infeasible"] == "no"
    assert lines["barriers"] == "obstacle 1 b = 2.650000"
    assert lines["model"].startswith("true plant")


def test_filter_heading_into_an_obstacle_changes_u_and_reports_it(capsys):
    from models.bundle_cbf.filter import hocbf_rows
    from models.bundle_cbf.system import TrueModel

    # velocity 0.5 along +x, the obstacle 0.8 ahead (y = p - o = (-0.8, 0)), a second one far away
    argv = "filter --state -1,0,0.5,0 --measured -0.8,0;3,3 --radius 0.3 --delta 0.05 --u-nom 2,0.3".split()
    status, printed, err = _call(capsys, argv)
    assert status == 0 and not err, err
    lines = _lines(printed)
    u = _floats(lines["u"])
    assert u[0] < 2.0 - 0.1 and u[1] == pytest.approx(0.3, abs=1e-6)  # braked along x only
    assert lines["active"] == "obstacle 1" and lines["infeasible"] == "no"
    y = np.array([[[-0.8, 0.0], [3.0, 3.0]]])
    g, c = hocbf_rows(y, np.array([[0.5, 0.0]]), np.full((1, 2), 0.3), np.full((1, 2), 0.05), TrueModel())
    assert g[0, 0] @ u == pytest.approx(c[0, 0], abs=1e-5)  # on the obstacle's half-plane
    assert g[0, 1] @ u > c[0, 1]  # the far one is slack


def test_filter_reports_box_faces_and_infeasible_steps(capsys):
    status, printed, _ = _call(capsys, _filter_argv([0, 0, 0, 0], [[3.0, 0.0]], [3.0, -0.5]))
    lines = _lines(printed)
    assert status == 0 and lines["active"] == "box u_x <= 2" and lines["u"] == "2.000000 -0.500000"
    status, printed, _ = _call(capsys, _filter_argv([0, 0, 0, 0], [[3.0, 0.0]], [0.0, -4.0], u_max=1.5))
    assert status == 0 and _lines(printed)["active"] == "box u_y >= -1.5"
    # 1 m/s straight at an obstacle 0.15 beyond its margin: no u in the box brakes hard enough
    status, printed, _ = _call(capsys, _filter_argv([0, 0, 1.0, 0], [[-0.5, 0.0]], [1.0, 0.0]))
    lines = _lines(printed)
    assert status == 0 and lines["infeasible"].startswith("yes") and _floats(lines["u"])[0] == -2.0


@pytest.mark.parametrize("seed", range(6))
def test_filter_prints_what_safe_control_returns(capsys, seed):
    from models.bundle_cbf.filter import safe_control

    g = np.random.default_rng(seed)
    state = np.concatenate([g.uniform(0, 4, 2), g.uniform(-1.5, 1.5, 2)])
    measured = g.uniform(-1.2, 1.2, (int(g.integers(1, 4)), 2))
    u_nom = g.uniform(-3, 3, 2)
    radius, delta = g.uniform(0.1, 0.4), [0.0, 0.05, 0.1][seed % 3]
    kw = {"k1": float(g.uniform(1, 5)), "k2": float(g.uniform(1, 5)), "u_max": float(g.uniform(1, 3))}
    status, printed, err = _call(capsys, _filter_argv(state, measured, u_nom, radius, delta, **kw))
    assert status == 0 and not err, err
    ref = safe_control(state, measured, radius, delta, u_nom, **kw)
    lines = _lines(printed)
    np.testing.assert_allclose(_floats(lines["u"]), ref.u, atol=2e-6)
    faces = [f"box u_x <= {kw['u_max']:g}", f"box u_x >= -{kw['u_max']:g}"]
    faces += [f"box u_y <= {kw['u_max']:g}", f"box u_y >= -{kw['u_max']:g}"]
    names = [f"obstacle {i + 1}" for i in range(len(measured))] + faces
    assert lines["active"] == (", ".join(n for n, a in zip(names, ref.active, strict=True) if a) or "none")
    assert lines["infeasible"].startswith("yes" if ref.infeasible else "no")


# ---------------------------------------------------------------------------------------------------- fit
def test_fit_writes_a_model_that_filter_loads(data, capsys):
    from models.bundle_cbf.experiment import observed_error
    from models.bundle_cbf.filter import safe_control
    from models.bundle_cbf.node import load_model

    model = load_model(data.model)
    lines = _lines(data.printed)
    assert lines["fit"] == "10 trajectories, 110 windows of 5 steps, 20 Adam steps, weighted by column sigma"
    assert [ln.split(":")[0] for ln in data.printed.splitlines()[:4]] == [
        f"step {s}/20" for s in (5, 10, 15, 20)
    ]
    np.testing.assert_allclose(_floats(lines["b_theta"]), model.gain(np.zeros(2)), atol=1e-6)
    error = float(lines["one-step velocity error"].split()[0])
    assert error == pytest.approx(observed_error(model, data.frame, 0.02), abs=1e-6)
    assert 0 < error < 1.5 and np.isfinite(float(lines["final training loss"]))
    assert data.printed.splitlines()[-1] == f"wrote {data.model}" and model.weighted
    assert not [p.name for p in data.dir.iterdir() if p.name.startswith(".")]  # no temporary file left

    argv = _filter_argv([0, 0, 0.5, 0], [[-0.8, 0.0]], [2.0, 0.3])
    status, printed, err = _call(capsys, [*argv, "--model", str(data.model)])
    assert status == 0 and not err, err
    ref = safe_control([0, 0, 0.5, 0], [[-0.8, 0.0]], 0.3, 0.05, [2.0, 0.3], model)
    np.testing.assert_allclose(_floats(_lines(printed)["u"]), ref.u, atol=2e-6)
    assert _lines(printed)["model"].startswith(f"{data.model} (fitted Neural ODE, b_theta = ")


def test_without_sigma_the_weighted_fit_is_the_unweighted_one(data, tmp_path, capsys):
    from models.bundle_cbf.node import load_model

    out = {}
    for name, flags in {"weighted": [], "unweighted": ["--unweighted"]}.items():
        path = tmp_path / f"{name}.safetensors"
        status, printed, err = _call(capsys, ["fit", str(data.paths["traj"]), *FIT, *flags, "-o", str(path)])
        assert status == 0 and not err, err
        out[name] = (_lines(printed), load_model(path))
    (lw, mw), (lu, mu) = out["weighted"], out["unweighted"]
    assert lw["fit"].endswith("weighted with sigma = 1 (the same as --unweighted)")
    assert lu["fit"].endswith(", unweighted")
    for key in ("b_theta", "final training loss", "one-step velocity error"):
        assert lw[key] == lu[key], key
    assert mw.weighted and not mu.weighted
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unweighted.safetensors", "weighted.safetensors"]


# ---------------------------------------------------------------------------------------------- bad input
GOOD_FILTER = {
    "--state": "1,1,0.5,0",
    "--measured": "-0.8,0",
    "--radius": "0.3",
    "--delta": "0.05",
    "--u-nom": "1,0",
}


@pytest.fixture(scope="module")
def bad_models(tmp_path_factory):
    """Files that are no model: text, a CSV, another paper's safetensors, bundle_cbf ones of other tensors or a
    hidden size that is not a positive int."""
    import torch

    from models.common.weights import save_weights

    d = tmp_path_factory.mktemp("bundle-cbf-bad-models")
    (d / "text.safetensors").write_text("not a safetensors file\n")
    (d / "traj.csv").write_text("traj,t,px,py,vx,vy,ux,uy\n0,0,0,0,0,0,0,0\n")
    save_weights(d / "other.safetensors", {"w": torch.zeros(2)}, {"kind": "other_paper"})
    save_weights(d / "shape.safetensors", {"w": torch.zeros(2)}, {"kind": "bundle_cbf_node", "hidden": 32})
    for name, hidden in (("hidden", "abc"), ("negative", -3)):
        save_weights(
            d / f"{name}.safetensors", {"w": torch.zeros(2)}, {"kind": "bundle_cbf_node", "hidden": hidden}
        )
    return d


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--state", "1,2,3", "--state '1,2,3': expected 4 comma-separated numbers"),
        ("--state", "1,2,3,4,5", "--state '1,2,3,4,5': expected 4"),
        ("--state", "1,a,0,0", "--state '1,a,0,0': expected 4"),
        ("--state", "nan,0,0,0", "--state 'nan,0,0,0': every value must be a finite number"),
        ("--measured", "-0.8", "pair 1 '-0.8' is not two finite numbers"),
        ("--measured", "-0.8,0;1,2,3", "pair 2 '1,2,3' is not two finite numbers"),
        ("--measured", "1,x", "pair 1 '1,x' is not two"),
        ("--measured", "1,0;", "pair 2 '' is not two"),
        ("--measured", "", "--measured '': give at least one DX,DY pair"),
        ("--u-nom", "1", "--u-nom '1': expected 2"),
        ("--radius", "-0.1", "--radius -0.1: must be a finite number >= 0"),
        ("--radius", "nan", "--radius nan: must be a finite number >= 0"),
        ("--delta", "-0.05", "--delta -0.05: must be a finite number >= 0"),
        ("--u-max", "0", "--u-max 0: must be a finite number > 0"),
        ("--u-max", "-2", "--u-max -2: must be a finite number > 0"),
        ("--k1", "0", "--k1 0: must be a finite number > 0"),
        ("--k2", "-1", "--k2 -1: must be a finite number > 0"),
        ("--radius", "abc", "argument --radius: invalid float value: 'abc'"),
        ("--model", "{d}/gone.safetensors", "--model {d}/gone.safetensors: no such file"),
        ("--model", "{d}/text.safetensors", "--model {d}/text.safetensors: not a readable safetensors file"),
        ("--model", "{d}/other.safetensors", "--model {d}/other.safetensors: not a bundle_cbf_node file"),
        ("--model", "{d}/shape.safetensors", "--model {d}/shape.safetensors: its tensors do not fit"),
        (
            "--model",
            "{d}/hidden.safetensors",
            "--model {d}/hidden.safetensors: hidden size 'abc' in its metadata is not an integer >= 1",
        ),
        (
            "--model",
            "{d}/negative.safetensors",
            "--model {d}/negative.safetensors: hidden size -3 in its metadata",
        ),
        ("--model", "{d}/traj.csv", "--model {d}/traj.csv: not a readable safetensors file"),
    ],
)
def test_filter_bad_input_is_one_line_exit_2(bad_models, capsys, flag, value, message):
    fmt = {"d": bad_models}
    given = {**GOOD_FILTER, flag: value.format(**fmt)}
    status, printed, err = _call(capsys, ["filter", *[x for kv in given.items() for x in kv]])
    assert_refused(status, printed, err, message.format(**fmt))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{traj}", "--dt", "0"], "--dt 0: must be a finite number > 0"),
        (["{traj}", "--dt", "-0.02"], "--dt -0.02: must be a finite number > 0"),
        (["{traj}", "--dt", "nan"], "--dt nan: must be a finite number > 0"),
        (["{traj}", "--dt", "0.02", "--steps", "0"], "--steps 0: must be >= 1"),
        (["{traj}", "--dt", "0.02", "--horizon", "0"], "--horizon 0: must be >= 1"),
        (["{d}/gone.csv", "--dt", "0.02"], "{d}/gone.csv: no such file"),
        (["{no_vx}", "--dt", "0.02"], "missing column(s) vx"),
        (["{traj}", "--dt", "0.02", "--id-col", "run"], "missing column(s) run"),
        (["{traj}", "--dt", "0.02", "--sigma-col", "noise"], "missing column(s) noise"),
        (["{nan_px}", "--dt", "0.02"], "column px: 1 value(s) missing, NaN or not numeric (first at row 3)"),
        (["{zero_sigma}", "--dt", "0.02", "--sigma-col", "sigma"], "column sigma: every sigma must be > 0"),
        (["{traj}", "--dt", "0.05"], "a step in t of 0.02, not dt 0.05"),
        (["{traj}", "--dt", "0.02", "--horizon", "16"], "no trajectory has more than 16 rows"),
        (["{traj}", "--dt", "0.02", "-o", "{out}/nowhere/m.safetensors"], "no such directory {out}/nowhere"),
        (
            ["{traj}", "--dt", "0.02", "-o", "{out}/m.csv"],
            "--output {out}/m.csv: expected a .safetensors file",
        ),
    ],
)
def test_fit_bad_input_is_one_line_exit_2_and_writes_nothing(data, tmp_path, capsys, argv, message):
    fmt = {**data.paths, "d": data.dir, "out": tmp_path}
    argv = [a.format(**fmt) for a in argv]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "m.safetensors")]
    before = sorted(p.name for p in data.dir.iterdir())
    if "--steps" not in argv:
        argv += ["--steps", "2"]
    status, printed, err = _call(capsys, ["fit", *argv])
    assert_refused(status, printed, err, message.format(**fmt))
    assert list(tmp_path.iterdir()) == [] and sorted(p.name for p in data.dir.iterdir()) == before


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_fit_refuses_a_seed_lightning_cannot_take_before_training(data, tmp_path, monkeypatch, capsys, seed):
    """--seed -1 was a traceback from Lightning's seed_everything after the trajectories were read."""
    from models.bundle_cbf import node

    forbid(monkeypatch, node, "fit_dynamics")
    out = tmp_path / "m.safetensors"
    argv = ["fit", str(data.paths["traj"]), "--dt", "0.02", "--steps", "2", "--seed", seed, "-o", str(out)]
    status, printed, err = _call(capsys, argv)
    assert_refused(status, printed, err, f"--seed {seed}: must be an integer in [0, 2^32)")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("other.safetensors", "not a bundle_cbf_node file"),
        ("text.safetensors", "not a readable safetensors file"),
        ("gone.safetensors", "no such file"),
    ],
)
def test_filter_checks_the_model_file_before_loading_it(bad_models, monkeypatch, capsys, name, message):
    from models.bundle_cbf import node

    forbid(monkeypatch, node, "load_model")
    given = {**GOOD_FILTER, "--model": str(bad_models / name)}
    status, printed, err = _call(capsys, ["filter", *[x for kv in given.items() for x in kv]])
    assert_refused(status, printed, err, f"--model {bad_models / name}: {message}")
