"""icml25.warm: a command run through the warm starter behaves as the same command started cold: its output,
its exit status, its working directory and environment; it stops when its client is stopped or killed; and with
no server the client starts cold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icml25.scratch import dvc_env
from icml25.warm import warm_starter
from tests.helpers import alive, dvc, wait_gone


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A warm starter for a scratch git+DVC repository whose one stage sleeps, then writes a file."""
    repo = tmp_path_factory.mktemp("warm")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    dvc(repo, "init", "-q")
    sleeper = "import os, time; open('sleeper.pid', 'w').write(str(os.getpid())); time.sleep(60); open('out.txt', 'w')"
    (repo / "dvc.yaml").write_text(
        f'stages:\n  slow:\n    cmd: python -c "{sleeper}"\n    outs: [out.txt]\n'
        '  probe:\n    cmd: echo "$ICML25_PROBE $PWD" > probe.txt\n    outs: [probe.txt]\n'
    )
    before = os.environ.pop("ICML25_WARM", None)  # the session's warm starter (tests/conftest.py) steps aside
    try:
        with warm_starter(repo, names=("dvc.cli",)) as address:  # the mechanics; the full preload takes ~10 s
            assert address and os.environ["ICML25_WARM"] == address
            yield repo, address
        assert "ICML25_WARM" not in os.environ and not Path(address).exists()
    finally:
        if before is not None:
            os.environ["ICML25_WARM"] = before


def _client(repo: Path, address: str, *argv: str, **kwargs) -> subprocess.Popen:
    env = dvc_env({"ICML25_WARM": address, "ICML25_PROBE": "seen by the child"})
    return subprocess.Popen([sys.executable, "-m", "icml25", *argv], cwd=repo, env=env, text=True, **kwargs)


def test_a_warm_command_prints_and_exits_as_a_cold_one(server):
    repo, address = server
    warm = _client(
        repo, address, "stage", "no_such_paper", "prepare", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = warm.communicate(timeout=60)
    cold = subprocess.run(
        [sys.executable, "-m", "icml25", "stage", "no_such_paper", "prepare"],
        cwd=repo, env=dvc_env({"ICML25_COLD": "1"}), capture_output=True, text=True,
    )  # fmt: skip
    assert (warm.returncode, out, err) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.returncode == 2 and err.startswith("icml25: error:") and "warm starter" not in err


def test_the_child_runs_in_the_clients_folder_with_its_environment(server):
    repo, address = server
    warm = _client(repo, address, "dvc", "repro", "probe", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = warm.communicate(timeout=60)
    assert warm.returncode == 0, out + err
    assert "Running stage 'probe'" in out  # DVC's output reached the client's stdout
    assert (repo / "probe.txt").read_text().split() == ["seen", "by", "the", "child", str(repo)]


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_stopping_the_client_stops_what_it_runs(server, how):
    """`dvc repro` of the sleeping stage through the warm starter: SIGTERM to the client is forwarded; a client
    killed outright (it cannot forward anything) leaves the server to stop its child."""
    repo, address = server
    pidfile = repo / "sleeper.pid"
    pidfile.unlink(missing_ok=True)
    client = _client(
        repo, address, "dvc", "repro", "slow", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline and client.poll() is None, "the stage never started"
        time.sleep(0.05)
    sleeper = int(pidfile.read_text())
    assert alive(sleeper)
    client.send_signal(how)
    client.wait(timeout=30)
    assert wait_gone([sleeper], timeout=20), "the stage outlived its client"
    assert not (repo / "out.txt").exists()


def test_with_no_server_the_client_starts_cold_and_says_so(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "icml25", "stage", "no_such_paper", "prepare"],
        cwd=tmp_path, env=dvc_env({"ICML25_WARM": str(tmp_path / "gone.sock")}), capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 2
    assert "did not answer" in out.stderr and "starting cold" in out.stderr and "icml25: error:" in out.stderr


def test_a_client_of_another_python_environment_starts_cold(server, tmp_path):
    """Another venv's client must not run on this server's libraries: refused, it starts cold (its own)."""
    _repo, address = server
    probe = (
        "import sys; sys.prefix = '/elsewhere'; from icml25.warm import delegate; "
        "print(delegate(['stage', 'no_such_paper', 'prepare']))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=dvc_env({"ICML25_WARM": address}),
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "None", out.stdout + out.stderr
