"""`icml25 hyper sweep` (in process through the installed entry; once through the console for the exit status,
slow) on FrozenLake-v1 without slipping: one line per agent and beta with the success rate and mean return of the
final greedy policies, a worst-beta line per agent, and ``-o`` writing one row per run that the printed numbers
are the means of. Every bad input (an unknown id, a non-Discrete environment, beta <= 0, a beta that is not a
number, p outside (0, 1], seeds or episodes < 1, an output that is not .csv, an unknown agent) is one line naming
the value, exit 2, no traceback and nothing written. And the Python entry ``from models.hyper import sweep``."""

from __future__ import annotations

import contextlib
import io
import re

import pandas as pd
import pytest

from flows.cli import main as cli_main
from tests.helpers import icml25

SLUG = "hyper"
AGENTS = ("hyper", "decouple", "curiosity")
BETAS = (0.01, 0.1, 1.0, 10.0, 100.0)
LINE = re.compile(r"  (\w+)\s+beta (\S+)\s+success (\d\.\d\d)  return (-?\d+\.\d{3})")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """`icml25 hyper sweep --env FrozenLake-v1 --seeds 2 --episodes 200 -o out.csv`: (status, printed, out)."""
    d = tmp_path_factory.mktemp("hyper-tool")
    out = d / "out.csv"
    printed = io.StringIO()
    argv = [SLUG, "sweep", "--env", "FrozenLake-v1", "--seeds", "2", "--episodes", "200", "-o", str(out)]
    with contextlib.redirect_stdout(printed):
        status = cli_main(argv)
    return status, printed.getvalue(), out


def test_sweep_prints_success_and_return_per_agent_and_beta(swept):
    status, printed, out = swept
    assert status == 0
    lines = printed.strip().splitlines()
    assert lines[0] == "FrozenLake-v1: 2 seeds, 200 episodes; success rate / mean return at the end"
    body = [LINE.fullmatch(x) for x in lines[1 : 1 + len(AGENTS) * len(BETAS)]]
    assert all(body), lines
    seen = {(m.group(1), float(m.group(2))): (float(m.group(3)), float(m.group(4))) for m in body}
    assert set(seen) == {(a, b) for a in AGENTS for b in BETAS}
    # the printed numbers are the per-(agent, beta) means of the rows -o wrote
    frame = pd.read_csv(out)
    for (agent, beta), (success, ret) in seen.items():
        rows = frame[(frame.agent == agent) & (frame.beta == beta)]
        assert len(rows) == 2
        assert success == pytest.approx(rows.success.mean(), abs=0.005)
        assert ret == pytest.approx(rows["return"].mean(), abs=0.0005)
    # one worst-beta line per agent: the beta of its smallest success rate, and the spread
    worst = lines[1 + len(AGENTS) * len(BETAS) : -1]
    assert len(worst) == len(AGENTS) and lines[-1] == f"wrote {out}"
    for line in worst:
        m = re.fullmatch(r"(\w+): worst beta (\S+) \(success (\d\.\d\d)\), spread (\d\.\d\d)", line)
        assert m, line
        rates = {b: s for (a, b), (s, _) in seen.items() if a == m.group(1)}
        assert float(m.group(3)) == min(rates.values()) == rates[float(m.group(2))]
        assert float(m.group(4)) == pytest.approx(max(rates.values()) - min(rates.values()), abs=0.011)
    assert {line.split(":")[0] for line in worst} == set(AGENTS)
    # 200 episodes are enough for some run to reach FrozenLake's goal
    assert frame.success.any()


def test_output_has_one_row_per_run(swept):
    _, _, out = swept
    frame = pd.read_csv(out)
    assert list(frame.columns) == ["episode", "agent", "beta", "seed", "success", "return"]
    assert len(frame) == len(AGENTS) * len(BETAS) * 2
    assert not frame.duplicated(["agent", "beta", "seed"]).any()
    assert (frame.episode == 200).all() and set(frame.seed) == {0, 1}
    # FrozenLake pays only at the goal: a positive return is a success, the best 0.98^5 (6 steps)
    assert (frame.success == (frame["return"] > 0)).all()
    assert frame["return"].max() <= 0.98**5 + 1e-12
    assert not [p.name for p in out.parent.iterdir() if p.name != "out.csv"]  # no temporary file left


# -------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "Nope-v0"], "unknown environment 'Nope-v0'"),
        (["--env", "CartPole-v1"], "CartPole-v1: needs Discrete observation and action spaces"),
        (["--betas", "0,1"], "beta = 0.0: must be > 0"),
        (["--betas", "1,x"], "--betas '1,x': expected numbers"),
        (["--p", "0"], "p = 0.0: must lie in (0, 1]"),
        (["--p", "1.5"], "p = 1.5: must lie in (0, 1]"),
        (["--seeds", "0"], "seeds = 0: need at least 1"),
        (["--episodes", "0"], "episodes = 0: need at least 1"),
        (["-o", "{d}/out.txt"], "--output {d}/out.txt: expected a .csv file"),
        (["--agents", "hyper,nope"], "unknown agent 'nope'"),
        (["-o", "{d}/no_dir/out.csv"], "--output {d}/no_dir/out.csv: no such directory"),
    ],
    ids=[
        "unknown-id",
        "non-discrete",
        "beta-0",
        "beta-x",
        "p-0",
        "p-1.5",
        "seeds-0",
        "episodes-0",
        "suffix",
        "agent",
        "no-dir",
    ],  # fmt: skip
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, args, message):
    args = [a.format(d=tmp_path) for a in args]
    argv = [SLUG, "sweep", "--env", "FrozenLake-v1", "--seeds", "1", "--episodes", "3"]
    argv += [] if "-o" in args else ["-o", str(tmp_path / "out.csv")]
    assert cli_main(argv + args) == 2
    res = capsys.readouterr()
    assert message.format(d=tmp_path) in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and res.err.startswith("icml25: error: ") and not res.out
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # a fresh interpreter (~0.6 s, more under load)
def test_console_exit_status_2_without_traceback(tmp_path, root):
    out = tmp_path / "out.csv"
    res = icml25(root, SLUG, "sweep", "--env", "grid", "--p", "0", "-o", str(out))
    assert res.returncode == 2 and not res.stdout
    assert res.stderr.strip() == "icml25: error: p = 0.0: must lie in (0, 1]"
    assert not out.exists()


# ------------------------------------------------------------------------------------------ the Python entry
def test_python_entry_returns_one_row_per_run_and_evaluation():
    from models.hyper import AGENTS as exported
    from models.hyper import Run, sweep

    assert set(exported) == {"curiosity", "decouple", "hyper", "baseline"}
    assert Run("hyper", 1.0, 0).agent == "hyper"
    df = sweep("FrozenLake-v1", ["hyper", "baseline"], [1.0, 10.0], seeds=2, episodes=20, every=10)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["episode", "agent", "beta", "seed", "success", "return"]
    # hyper: 2 betas x 2 seeds; the baseline ignores beta (once per seed, beta 0); evaluations at 10 and 20
    assert len(df) == 2 * (4 + 2) and sorted(set(df.episode)) == [10, 20]
    assert set(df[df.agent == "baseline"].beta) == {0.0}
    assert df.success.dtype == bool and df["return"].between(0, 1).all()
    again = sweep("FrozenLake-v1", ["hyper", "baseline"], [1.0, 10.0], seeds=2, episodes=20, every=10)
    pd.testing.assert_frame_equal(df, again)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env": "Nope-v0"}, "unknown environment 'Nope-v0'"),
        ({"agents": ["hyper:eval_pi"]}, "unknown agent 'hyper:eval_pi'"),
        ({"betas": [-1.0]}, "beta = -1.0: must be > 0"),
        ({"p": 0.0}, r"p = 0.0: must lie in \(0, 1\]"),
    ],
)
def test_python_entry_refuses_bad_input(kwargs, message):
    from icml25.errors import UserError
    from models.hyper import sweep

    with pytest.raises(UserError, match=message):
        sweep(**{"env": "grid", "seeds": 1, "episodes": 1, **kwargs})
