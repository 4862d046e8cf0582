"""`icml25 ferret simulate` (in process) and the Python entries ``simulate`` and ``FerretCodec``.

A tiny run on the digits (2 rounds of Ferret and FedAvg, 3 of 10 clients) exits 0, prints one line per round and
method and a final line per method (the CSV's numbers), and writes the documented columns: FedAvg sends d = 2,410
scalars per client, Ferret under a tenth of that (sum_l K_l + 1 over 4 blocks, 9 to 257). A user's CSV with a
class column works with --target (d follows its features and classes). Each bad input (K = 1, per-round above
clients, alpha = 0, rounds = 0, an unknown method, a missing file, a missing or unnamed target column, a
non-numeric feature, a split leaving a client under 10 rows, --target without DATA, an output that is not .csv or
in no folder) is one line naming the value, exit 2, no traceback, nothing written. ``simulate`` returns the same
history as the CLI and raises UserError on the same values (a target without data included). ``FerretCodec`` encodes a {name: tensor} update of any torch model (an MLP, a small CNN with a
frozen layer) and decodes tensors of its parameters' shapes; the mean over fresh round seeds nears the update.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from flows.cli import main as cli_main
from tests.helpers import forbid, run_tool

SLUG = "ferret"
COLUMNS = "method seed round accuracy loss uplink cumulative_uplink recon_error seconds".split()
D_DIGITS = 64 * 32 + 32 + 32 * 10 + 10  # the 64-32-10 network: 2,410 parameters in 4 blocks


def _run(argv: list[str]) -> tuple[int, str, str]:
    return run_tool(SLUG, "simulate", *argv)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """`icml25 ferret simulate --rounds 2 --methods ferret,fedavg --clients 10 --per-round 3 -o out.csv`."""
    d = tmp_path_factory.mktemp("ferret-tool")
    out = d / "out.csv"
    argv = [*"--rounds 2 --methods ferret,fedavg --clients 10 --per-round 3 -o".split(), str(out)]
    status, printed, err = _run(argv)
    return status, printed, err, out


ROUND_LINE = re.compile(
    r"^ *(ferret|fedavg) round +(\d+): accuracy (\d\.\d{3}), uplink (\d+) scalars per client$"
)
FINAL_LINE = re.compile(
    r"^(ferret|fedavg): final accuracy (\d\.\d{3}), mean uplink (\d+\.\d) scalars per client and round, "
    r"cumulative (\d+)$"
)


def test_a_tiny_digits_run_prints_rounds_and_writes_the_history(simulated):
    status, printed, err, out = simulated
    assert status == 0 and not err, err
    lines = printed.strip().splitlines()
    assert len(lines) == 7 and lines[-1] == f"wrote {out}", printed
    rounds = [ROUND_LINE.match(line) for line in lines[:4]]
    finals = [FINAL_LINE.match(line) for line in lines[4:6]]
    assert all(rounds) and all(finals), printed
    assert [(m.group(1), int(m.group(2))) for m in rounds] == [
        ("ferret", 1),
        ("ferret", 2),
        ("fedavg", 1),
        ("fedavg", 2),
    ]
    h = pd.read_csv(out)
    assert list(h.columns) == COLUMNS
    assert len(h) == 4 and (h.seed == 0).all() and list(h["round"]) == [1, 2, 1, 2]
    assert list(h.method) == ["ferret", "ferret", "fedavg", "fedavg"]
    for m, (_, row) in zip(rounds, h.iterrows(), strict=True):  # the printed lines are the CSV's numbers
        assert float(m.group(3)) == pytest.approx(row.accuracy, abs=5e-4)
        assert int(m.group(4)) == round(row.uplink)
    for m in finals:
        g = h[h.method == m.group(1)]
        assert float(m.group(2)) == pytest.approx(g.accuracy.iloc[-1], abs=5e-4)
        assert float(m.group(3)) == pytest.approx(g.uplink.mean(), abs=0.05)
        assert int(m.group(4)) == round(g.cumulative_uplink.iloc[-1])
    fedavg, ferret = h[h.method == "fedavg"], h[h.method == "ferret"]
    assert (fedavg.uplink == D_DIGITS).all() and fedavg.recon_error.isna().all()
    assert (ferret.uplink < 0.1 * D_DIGITS).all() and (ferret.uplink >= 4 * 2 + 1).all()
    for _, g in h.groupby("method"):
        np.testing.assert_allclose(g.cumulative_uplink, g.uplink.cumsum())
    assert (ferret.recon_error > 0).all() and np.isfinite(ferret.recon_error).all()
    assert h.accuracy.between(0, 1).all() and np.isfinite(h.loss).all() and (h.seconds > 0).all()
    assert [p.name for p in out.parent.iterdir()] == ["out.csv"]  # no temporary file left


def _table(path, rows: int = 400, seed: int = 0, extra: dict | None = None):
    """A user's table: 4 numeric features and a string class column ``species`` (3 classes) that they predict."""
    g = np.random.default_rng(seed)
    y = g.integers(0, 3, rows)
    x = g.standard_normal((rows, 4)) + 2.0 * np.eye(3, 4)[y]
    frame = pd.DataFrame(x, columns=["a", "b", "c", "d"]).assign(species=np.array(["ant", "bee", "cat"])[y])
    for name, values in (extra or {}).items():
        frame[name] = values
    frame.to_csv(path, index=False)
    return path


def test_a_user_csv_works_with_target(tmp_path):
    data, out = _table(tmp_path / "table.csv"), tmp_path / "h.csv"
    argv = [str(data), "--target", "species", "--methods", "fedavg,zo", "--clients", "5", "--per-round", "2"]
    status, printed, err = _run([*argv, "--rounds", "2", "-o", str(out)])
    assert status == 0 and not err, err
    assert printed.strip().splitlines()[-1] == f"wrote {out}"
    h = pd.read_csv(out)
    assert list(h.columns) == COLUMNS and len(h) == 4
    d = 4 * 32 + 32 + 32 * 3 + 3  # 4 features, 3 classes
    assert (h[h.method == "fedavg"].uplink == d).all()
    assert (h[h.method == "zo"].uplink == 64 + 1).all()  # 64 zeroth-order steps and the client seed


# -------------------------------------------------------------------------------------------- bad input
def _plain(path):
    _table(path, rows=200)


def _with_text_column(path):
    _table(path, rows=200, extra={"colour": ["red", "blue"] * 100})


def _sixty_rows(path):
    _table(path, rows=60)


@pytest.mark.parametrize(
    ("args", "message", "make"),
    [
        (["--K", "1"], "K = 1: Ferret needs at least 2", None),
        (
            ["--per-round", "30", "--clients", "20"],
            "per-round = 30: must be between 1 and the 20 clients",
            None,
        ),
        (["--alpha", "0"], "alpha = 0.0: the Dirichlet concentration must be a finite number > 0", None),
        (["--alpha", "inf"], "alpha = inf: the Dirichlet concentration must be a finite number > 0", None),
        (["--rounds", "0"], "rounds = 0: must be >= 1", None),
        (["--methods", "ferret,bogus"], "method 'bogus'", None),
        (["{d}/gone.csv", "--target", "species"], "{d}/gone.csv: no such file", None),
        (["{d}/t.csv", "--target", "label"], "{d}/t.csv: no column 'label'", _plain),
        (["{d}/t.csv"], "{d}/t.csv: name the target column (--target)", _plain),
        (
            ["{d}/t.csv", "--target", "species"],
            "{d}/t.csv: column 'colour' is not numeric",
            _with_text_column,
        ),
        (
            ["{d}/t.csv", "--target", "species", "--clients", "20", "--per-round", "5"],
            "clients 20: 47 training rows cannot give every client 10 rows",
            _sixty_rows,
        ),
        (["--target", "species"], "--target species: give a DATA.csv for it", None),
        (["-o", "{d}/out.txt"], "--output {d}/out.txt: expected a .csv file", None),
        (["-o", "{d}/no_dir/out.csv"], "--output {d}/no_dir/out.csv: no such directory", None),
    ],
    ids=[
        "K-1",
        "per-round-above-clients",
        "alpha-0",
        "alpha-inf",
        "rounds-0",
        "unknown-method",
        "missing-file",
        "missing-target-column",
        "no-target-named",
        "non-numeric-feature",
        "client-under-10-rows",
        "target-without-data",
        "not-csv",
        "no-dir",
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, args, message, make):
    args = [a.format(d=tmp_path) for a in args]
    if make is not None:
        make(tmp_path / "t.csv")
    before = sorted(p.name for p in tmp_path.iterdir())
    output = [] if "-o" in args else ["-o", str(tmp_path / "out.csv")]
    assert cli_main([SLUG, "simulate", "--rounds", "1", "--methods", "fedavg", *output, *args]) == 2
    res = capsys.readouterr()
    assert res.err.startswith("icml25: error: ") and len(res.err.strip().splitlines()) == 1, res.err
    assert message.format(d=tmp_path) in res.err and "Traceback" not in res.err, res.err
    assert not res.out
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# ------------------------------------------------------------------------------------------ the Python entry
def test_simulate_returns_the_history_the_cli_wrote(simulated):
    from models.ferret import simulate

    h = simulate(methods=["fedavg"], rounds=2, clients=10, per_round=3)
    assert isinstance(h, pd.DataFrame) and list(h.columns) == COLUMNS
    cli = pd.read_csv(simulated[3])
    cli = cli[cli.method == "fedavg"].reset_index(drop=True)
    # the same seed: the same selection, minibatches and start, whatever other methods ran alongside
    cols = ["method", "seed", "round", "accuracy", "loss", "uplink", "cumulative_uplink"]
    pd.testing.assert_frame_equal(h[cols], cli[cols], check_dtype=False, atol=1e-6)


def _bad_csv(tmp_path, make):
    path = tmp_path / "t.csv"
    make(path)
    return path


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"K": 1}, "K = 1"),
        ({"per_round": 30, "clients": 20}, "per-round = 30"),
        ({"alpha": 0.0}, "alpha = 0.0"),
        ({"alpha": -0.5}, "alpha = -0.5"),
        ({"rounds": 0}, "rounds = 0"),
        ({"methods": ["ferret", "bogus"]}, "method 'bogus'"),
        ({"data": "{d}/gone.csv", "target": "species"}, "gone.csv: no such file"),
        ({"data": _plain, "target": "label"}, "no column 'label'"),
        ({"data": _plain}, r"name the target column \(--target\)"),
        ({"data": _with_text_column, "target": "species"}, "column 'colour' is not numeric"),
        ({"data": _sixty_rows, "target": "species", "clients": 20}, "clients 20: 47 training rows"),
    ],
    ids=[
        "K-1",
        "per-round",
        "alpha-0",
        "alpha-negative",
        "rounds-0",
        "unknown-method",
        "missing-file",
        "missing-target",
        "no-target",
        "non-numeric",
        "client-under-10",
    ],
)
def test_simulate_refuses_bad_input(tmp_path, kwargs, message):
    from icml25.errors import UserError
    from models.ferret import simulate

    kwargs = dict(kwargs)
    if callable(kwargs.get("data")):
        kwargs["data"] = _bad_csv(tmp_path, kwargs["data"])
    elif "data" in kwargs:
        kwargs["data"] = kwargs["data"].format(d=tmp_path)
    base = {"methods": ["fedavg"], "rounds": 1, "clients": 5, "per_round": 2}
    with pytest.raises(UserError, match=message):
        simulate(**{**base, **kwargs})


def test_simulate_refuses_a_target_without_data():
    from icml25.errors import UserError
    from models.ferret import simulate

    with pytest.raises(UserError, match="target"):
        simulate(target="species", methods=["fedavg"], rounds=1, clients=5, per_round=2)


# ------------------------------------------------------------------------------------------ FerretCodec
def _models():
    import torch
    from torch import nn

    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
    cnn[0].bias.requires_grad_(False)  # a frozen block: not part of the update
    return {"mlp": (mlp, torch.randn(5, 6)), "cnn": (cnn, torch.randn(5, 1, 6, 6))}


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_ferret_codec_round_trips_any_torch_model(name):
    import torch

    from models.ferret import FerretCodec

    model, x = _models()[name]
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    codec = FerretCodec(model, K=16)
    assert codec.names == list(trainable) and codec.dim == sum(p.numel() for p in trainable.values())
    # one client's update: the gradient of a loss, as a {name: tensor} mapping (the frozen bias is absent)
    loss = model(x).square().mean()
    grads = dict(zip(trainable, torch.autograd.grad(loss, list(trainable.values())), strict=True))
    msg = codec.encode(grads, round_seed=3, client_seed=11)
    assert len(msg.ks) == len(trainable) and msg.scalars == sum(msg.ks) + 1 < codec.dim + 1
    decoded = codec.named(codec.decode([msg], round_seed=3))
    assert list(decoded) == list(trainable)
    for n, p in trainable.items():
        assert decoded[n].shape == p.shape and decoded[n].dtype == torch.float32, n
    # the decoded update plugs into the model (what a torch loop does with it)
    before = {n: p.detach().clone() for n, p in trainable.items()}
    with torch.no_grad():
        for n, p in trainable.items():
            p -= 0.1 * decoded[n]
    assert all(not torch.equal(before[n], p) for n, p in trainable.items())
    assert torch.isfinite(model(x)).all()
    # the mean of many rounds' reconstructions (fresh round seeds) approaches the true update
    flat = torch.cat([g.reshape(-1) for g in grads.values()])
    total = torch.zeros_like(flat)
    reps = 50
    for r in range(reps):
        m = codec.encode(grads, round_seed=100 + r, client_seed=r)
        total += torch.cat([b.reshape(-1) for b in codec.decode([m], round_seed=100 + r)])
    cos = float(torch.nn.functional.cosine_similarity(total / reps, flat, dim=0))
    single = torch.cat([b.reshape(-1) for b in decoded.values()])
    assert cos > 0.8 and cos > float(torch.nn.functional.cosine_similarity(single, flat, dim=0))
    assert math.isfinite(cos)


def test_ferret_codec_averages_clients():
    import torch

    from models.ferret import FerretCodec

    model, _ = _models()["mlp"]
    codec = FerretCodec(model, K=8)
    updates = [{n: torch.randn_like(p) for n, p in model.named_parameters()} for _ in range(3)]
    msgs = [codec.encode(u, 5, 20 + i) for i, u in enumerate(updates)]
    mean = codec.decode(msgs, 5)
    singles = [codec.decode([m], 5) for m in msgs]
    for b, block in enumerate(mean):
        assert block.shape == tuple(list(model.parameters())[b].shape)
        want = sum(s[b] for s in singles) / 3
        np.testing.assert_allclose(block.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_a_negative_seed_is_refused_before_the_data_load(tmp_path, monkeypatch, capsys):
    """--seed -1 was a traceback from the data's random stream, after the imports and the digits (18 s on a busy
    machine)."""
    import models.ferret.api as api

    forbid(monkeypatch, api, "load")
    out = tmp_path / "out.csv"
    assert cli_main([SLUG, "simulate", "--rounds", "1", "--seed", "-1", "-o", str(out)]) == 2
    res = capsys.readouterr()
    assert res.err.strip() == "icml25: error: --seed -1: must be an integer >= 0" and not res.out
    assert not out.exists()
