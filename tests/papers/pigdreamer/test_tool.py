"""`icml25 pigdreamer train` / `icml25 pigdreamer evaluate` (in process, through flows.cli) and the Python entry
models.pigdreamer.api (train_agent, evaluate_agent, Checkpoint), on agents of one PPO update (32 x 40 steps).

``train``: --steps is rounded up to whole updates (1000 steps are one update, the same agent as 1280 steps); it
prints the header line with its settings, one progress line per quarter (here: the one update) and ``wrote PATH
(lambda L)`` with the saved agent's lambda, writes the agent atomically (no temporary file left; a write that
fails leaves the old file as it was) and passes its settings (variant, steps, cost limit, seed, hazards,
visibility, boundary values included) to train_agent. ``evaluate`` prints the seven fields in order, finite,
success in [0, 1], cost >= 0, length within the horizon, leak 0, equal to evaluate_agent's. The same seed gives
the same file and output; the API's checkpoint evaluates as its saved-and-reloaded file. Each bad input (an
unknown variant, steps < 1, a negative or NaN cost limit, visibility outside [0, 1], hazards outside 0..47,
episodes < 1, a missing file, a CSV, a foreign or broken safetensors file, a missing output folder) is one line
naming the value, exit 2, nothing on stdout, nothing written; the API raises UserError for the same.
"""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import pytest

from tests.helpers import assert_refused, forbid, printed_fields, run_tool

SLUG = "pigdreamer"
FIELDS = ("return", "cost", "success", "length", "critic_error_cost", "critic_error_reward", "leak")
TRAIN = ["train", "--variant", "C", "--cost-limit", "0.5", "--seed", "0"]
PROGRESS = re.compile(
    r"update 1: return -?\d+\.\d{3}, cost \d+\.\d{2}, success [01]\.\d{2}, lambda \d+\.\d{2}"
)


def _run(argv: list[str]) -> tuple[int, str, str]:
    return run_tool(SLUG, *argv)


_lines = printed_fields


def _evaluated(printed: str) -> dict[str, float]:
    assert [ln.split(":")[0] for ln in printed.splitlines()] == list(FIELDS), printed
    return {k: float(v) for k, v in _lines(printed).items()}


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    """One agent of variant C trained by the CLI for 1000 steps (one update), and its evaluation on 20 episodes."""
    d = tmp_path_factory.mktemp("pigdreamer-tool")
    path = d / "agent.safetensors"
    status, printed, err = _run([*TRAIN, "--steps", "1000", "-o", str(path)])
    assert status == 0 and not err, err
    status, evaluated, err = _run(["evaluate", str(path), "--episodes", "20"])
    assert status == 0 and not err, err
    return SimpleNamespace(dir=d, path=path, printed=printed, evaluated=evaluated)


@pytest.fixture(scope="module")
def api_agent(tmp_path_factory):
    """train_agent(variant="B", steps=1280, seed=3), the progress records it reported, and its saved file."""
    from models.pigdreamer.api import train_agent

    records: list[dict] = []
    ckpt = train_agent(variant="B", steps=1280, seed=3, progress=records.append)
    path = ckpt.save(tmp_path_factory.mktemp("pigdreamer-api") / "b.safetensors")
    return SimpleNamespace(ckpt=ckpt, records=records, path=path)


# ---------------------------------------------------------------------------------------------------- train
def test_train_prints_its_settings_progress_and_writes_the_agent(agent):
    from models.pigdreamer.api import Checkpoint

    lines = agent.printed.splitlines()
    assert len(lines) == 3, agent.printed
    assert lines[0] == (
        "train: variant C, 1000 steps (1 update of 32 x 40), cost limit 0.5, seed 0, 5 hazards, visibility 0.25"
    )
    assert PROGRESS.fullmatch(lines[1]), lines[1]
    ckpt = Checkpoint.load(agent.path)
    assert lines[2] == f"wrote {agent.path} (lambda {ckpt.lam:.2f})"
    assert lines[1].endswith(f"lambda {ckpt.lam:.2f}")  # one update: its record holds the final lambda
    assert ckpt.variant == "C" and ckpt.updates == 1 and ckpt.lam >= 0
    assert ckpt.env.hazards == 5 and ckpt.env.visibility == 0.25 and ckpt.ppo.cost_limit == 0.5
    assert [p.name for p in agent.dir.iterdir()] == ["agent.safetensors"]  # no temporary file left
    assert agent.path.read_bytes()[8:9] == b"{"  # a safetensors header


def test_train_passes_its_settings_and_a_failed_write_keeps_the_old_file(agent, tmp_path, monkeypatch):
    """With train_agent replaced (no training): the boundary values pass, and a write that fails half-way leaves
    the file already there untouched and no temporary file."""
    import safetensors.torch

    import models.pigdreamer.api as api

    trained = api.Checkpoint.load(agent.path)
    calls = []

    def fake_train(variant, steps, cost_limit, seed, env, progress=None):
        calls.append((variant, steps, cost_limit, seed, env.hazards, env.visibility))
        return trained

    monkeypatch.setattr(api, "train_agent", fake_train)
    out = tmp_path / "n.safetensors"
    argv = "train --variant N --steps 2561 --cost-limit 0 --seed 7 --hazards 47 --visibility 1".split()
    status, printed, err = _run([*argv, "-o", str(out)])
    assert status == 0 and not err, err
    assert printed.splitlines()[0] == (
        "train: variant N, 2561 steps (3 updates of 32 x 40), cost limit 0, seed 7, 47 hazards, visibility 1"
    )
    assert calls == [("N", 2561, 0.0, 7, 47, 1.0)]
    assert printed.splitlines()[-1] == f"wrote {out} (lambda {trained.lam:.2f})"
    assert out.read_bytes() == agent.path.read_bytes()

    before = out.read_bytes()

    def broken_save(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safetensors.torch, "save_file", broken_save)
    try:
        status, printed, err = _run([*argv, "-o", str(out)])
    except OSError:
        status = None  # raised (a traceback) rather than one line: still atomic
    assert status in (None, 2)
    assert out.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["n.safetensors"]


# ------------------------------------------------------------------------------------------------- evaluate
def test_evaluate_prints_seven_finite_fields(agent):
    from models.pigdreamer.api import evaluate_agent

    res = _evaluated(agent.evaluated)
    assert all(math.isfinite(v) for v in res.values()), res
    assert 0 <= res["success"] <= 1 and res["cost"] >= 0 and 1 <= res["length"] <= 40
    assert res["critic_error_cost"] >= 0 and res["critic_error_reward"] >= 0
    assert res["leak"] == 0
    ref = evaluate_agent(agent.path, episodes=20, seed=0)
    assert agent.evaluated == "".join(f"{k}: {ref[k]:.6f}\n" for k in FIELDS)


def test_the_same_seed_gives_the_same_agent_and_output(agent, tmp_path):
    again = tmp_path / "again.safetensors"
    status, printed, err = _run([*TRAIN, "--steps", "1280", "-o", str(again)])  # rounds to the same update
    assert status == 0 and not err, err
    assert printed.splitlines()[1:2] == agent.printed.splitlines()[1:2]
    assert again.read_bytes() == agent.path.read_bytes()
    status, evaluated, err = _run(["evaluate", str(again), "--episodes", "20", "--seed", "0"])
    assert status == 0 and evaluated == agent.evaluated
    status, other, _ = _run(["evaluate", str(again), "--episodes", "20", "--seed", "1"])
    assert status == 0 and other != agent.evaluated  # the episodes follow --seed


# ------------------------------------------------------------------------------------------------------ API
def test_the_api_checkpoint_evaluates_as_its_saved_file(api_agent, capsys):
    from models.pigdreamer.api import Checkpoint, evaluate_agent

    ckpt = api_agent.ckpt
    assert ckpt.variant == "B" and ckpt.updates == 1 and len(ckpt.history) == 1
    assert api_agent.records == ckpt.history  # progress: each update's record (here the one)
    assert {"return", "cost", "success", "lambda"} <= set(api_agent.records[0])
    res = evaluate_agent(ckpt, episodes=20, seed=1)
    assert evaluate_agent(api_agent.path, episodes=20, seed=1) == res
    assert set(res) == set(FIELDS) and res["leak"] == 0 and 0 <= res["success"] <= 1
    loaded = Checkpoint.load(api_agent.path)
    assert loaded.variant == "B" and loaded.lam == ckpt.lam and loaded.updates == 1
    assert loaded.env == ckpt.env and loaded.ppo == ckpt.ppo
    status, printed, err = _run(["evaluate", str(api_agent.path), "--episodes", "20", "--seed", "1"])
    assert status == 0 and not err, err
    assert printed == "".join(f"{k}: {res[k]:.6f}\n" for k in FIELDS)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"variant": "Z"}, "variant 'Z': one of A, B, C, U, N"),
        ({"steps": 0}, "steps 0: must be an integer >= 1"),
        ({"steps": -5}, "steps -5: must be an integer >= 1"),
        ({"steps": 1.5}, "steps 1.5: must be an integer >= 1"),
        ({"steps": True}, "steps True: must be an integer >= 1"),
        ({"cost_limit": -1}, "cost limit -1: must be a finite number >= 0"),
        ({"cost_limit": float("nan")}, "cost limit nan: must be a finite number >= 0"),
        ({"cost_limit": float("inf")}, "cost limit inf: must be a finite number >= 0"),
        ({"env": "grid"}, "env 'grid': a HiddenHazard"),
        ({"env": {"hazards": 48}}, "hazards 48 must be between 0 and 47"),  # an EnvConfig of these
        ({"env": {"visibility": 1.5}}, "visibility 1.5 must lie in [0, 1]"),
    ],
)
def test_train_agent_rejects_bad_input(kwargs, message):
    from icml25.errors import UserError
    from models.pigdreamer.agent import EnvConfig
    from models.pigdreamer.api import train_agent

    if isinstance(kwargs.get("env"), dict):
        kwargs = {"env": EnvConfig(**kwargs["env"])}
    with pytest.raises(UserError) as info:
        train_agent(**{"steps": 1280, **kwargs})
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("episodes", "message"),
    [(0, "episodes 0: must be an integer >= 1"), (-2, "episodes -2"), (True, "episodes True"), (2.0, "2.0")],
)
def test_evaluate_agent_rejects_bad_episodes(agent, episodes, message):
    from icml25.errors import UserError
    from models.pigdreamer.api import evaluate_agent

    with pytest.raises(UserError) as info:
        evaluate_agent(agent.path, episodes=episodes)
    assert message in str(info.value)


def test_evaluate_agent_rejects_a_missing_file(tmp_path):
    from icml25.errors import UserError
    from models.pigdreamer.api import evaluate_agent

    with pytest.raises(UserError, match="no such file"):
        evaluate_agent(tmp_path / "gone.safetensors", episodes=5)


# ------------------------------------------------------------------------------------------------ bad input
@pytest.fixture(scope="module")
def bad_agents(agent, tmp_path_factory):
    """Files that are no pigdreamer agent: a CSV, text, another kind's safetensors, pigdreamer ones without its
    settings or with other tensors."""
    import json

    import torch
    from safetensors import safe_open

    from models.common.weights import save_weights

    d = tmp_path_factory.mktemp("pigdreamer-bad-agents")
    (d / "traj.csv").write_text("step,return,cost\n0,0.5,1\n")
    (d / "text.safetensors").write_text("not a safetensors file\n")
    save_weights(d / "other.safetensors", {"w": torch.zeros(2)}, {"kind": "other"})
    save_weights(d / "nosettings.safetensors", {"w": torch.zeros(2)}, {"kind": "pigdreamer-agent"})
    with safe_open(str(agent.path), framework="pt") as f:
        meta = json.loads(next(iter(f.metadata().values())))
    save_weights(d / "shape.safetensors", {"w": torch.zeros(2)}, meta)
    return d


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--variant", "Z"], "argument --variant: invalid choice: 'Z'"),
        (["--steps", "0"], "--steps 0: must be >= 1"),
        (["--steps", "-5"], "--steps -5: must be >= 1"),
        (["--steps", "ten"], "argument --steps: invalid int value: 'ten'"),
        (["--cost-limit", "-1"], "--cost-limit -1: must be a finite number >= 0"),
        (["--cost-limit", "nan"], "--cost-limit nan: must be a finite number >= 0"),
        (["--visibility", "1.5"], "--visibility 1.5: must lie in [0, 1]"),
        (["--visibility", "-0.1"], "--visibility -0.1: must lie in [0, 1]"),
        (["--visibility", "nan"], "--visibility nan: must lie in [0, 1]"),
        (["--hazards", "48"], "--hazards 48: hazards 48 must be between 0 and 47"),
        (["--hazards", "-1"], "--hazards -1: hazards -1 must be between 0 and 47"),
        (
            ["-o", "{out}/nowhere/a.safetensors"],
            "--output {out}/nowhere/a.safetensors: no such directory {out}/nowhere",
        ),
        (["-o", "{out}"], "--output {out}: is a directory, not a file"),
    ],
)
def test_train_bad_input_is_one_line_exit_2_and_writes_nothing(agent, tmp_path, argv, message):
    fmt = {"out": tmp_path}
    given = {
        "--variant": "C",
        "--steps": "1280",
        "--cost-limit": "0.5",
        "-o": str(tmp_path / "a.safetensors"),
    }
    given.update(zip(argv[::2], [a.format(**fmt) for a in argv[1::2]], strict=True))
    before = {p.name: p.stat().st_mtime_ns for p in agent.dir.iterdir()}
    status, printed, err = _run(["train", *[x for kv in given.items() for x in kv]])
    assert_refused(status, printed, err, message.format(**fmt))
    assert (
        list(tmp_path.iterdir()) == []
        and {p.name: p.stat().st_mtime_ns for p in agent.dir.iterdir()} == before
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{agent}", "--episodes", "0"], "--episodes 0: must be >= 1"),
        (["{agent}", "--episodes", "-3"], "--episodes -3: must be >= 1"),
        (["{agent}", "--episodes", "many"], "argument --episodes: invalid int value: 'many'"),
        (["{d}/gone.safetensors"], "{d}/gone.safetensors: no such file"),
        (["{d}/traj.csv"], "{d}/traj.csv: not a readable safetensors file"),
        (["{d}/text.safetensors"], "{d}/text.safetensors: not a readable safetensors file"),
        (["{d}/other.safetensors"], "{d}/other.safetensors: not a pigdreamer-agent file"),
        (
            ["{d}/nosettings.safetensors"],
            "{d}/nosettings.safetensors: a pigdreamer-agent file with unreadable",
        ),
        (["{d}/shape.safetensors"], "{d}/shape.safetensors: its tensors do not fit a pigdreamer-agent"),
    ],
)
def test_evaluate_bad_input_is_one_line_exit_2_and_writes_nothing(agent, bad_agents, argv, message):
    fmt = {"agent": agent.path, "d": bad_agents}
    before = {d: {p.name: p.stat().st_mtime_ns for p in d.iterdir()} for d in (agent.dir, bad_agents)}
    status, printed, err = _run(["evaluate", *[a.format(**fmt) for a in argv]])
    assert_refused(status, printed, err, message.format(**fmt))
    assert {d: {p.name: p.stat().st_mtime_ns for p in d.iterdir()} for d in (agent.dir, bad_agents)} == before


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("gone.safetensors", "no such file"),
        ("traj.csv", "not a readable safetensors file"),
        ("other.safetensors", "not a pigdreamer-agent file"),
    ],
)
def test_evaluate_checks_the_agent_file_before_loading_it(bad_agents, monkeypatch, name, message):
    """A foreign file was refused only once Lightning was imported and the file read (12 s on a busy machine)."""
    from models.pigdreamer import api, cli, ppo

    forbid(monkeypatch, api.Checkpoint, "load")
    status, printed, err = _run(["evaluate", str(bad_agents / name)])
    assert_refused(status, printed, err, f"{bad_agents / name}: {message}")
    assert cli.AGENT_KIND == ppo.KIND  # the kind the CLI checks is the one the agents are saved with
