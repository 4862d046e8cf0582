"""The README's Prefect commands, as written, against a real server (slow: about a minute).

server start -> `prefect work-pool create local --type process` -> `prefect deploy --all` -> `icml25 worker --pool
local`; then a run of the model_independence deployment executes its flow in the *worker's* checkout (a reproduced
smoke clone, so every stage is skipped) and publishes the report artifact. The deployments are registered from
another clone, gone by the time the run starts: the pull step enters the worker's clone (ICML25_CHECKOUT, set by
`icml25 worker`), never the folder `prefect deploy` ran in. Before that, a plain `prefect worker start` that names
no checkout takes a run: it fails at once, its log saying how to name one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import clone_repo

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def _worker(cmd: list[str], cwd: Path, env: dict[str, str]) -> Iterator[None]:
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        yield
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_readme_prefect_commands(dvc_repo, tmp_path):
    from flows.checkout import CHECKOUT_ENV, PULL_STEPS
    from flows.server import prefect_env, prefect_server

    deployer = clone_repo(dvc_repo[0], tmp_path / "deployer")
    work = clone_repo(dvc_repo[0], tmp_path / "repo")
    home = tmp_path / "prefect-home"
    with prefect_server(home) as url:
        env = prefect_env(home, url) | {"PWD": str(work)}
        env.pop(CHECKOUT_ENV, None)
        prefect = [sys.executable, "-m", "prefect"]

        def run(*args: str, cwd: Path = work, ok: bool = True) -> str:
            out = subprocess.run(
                [*prefect, *args],
                cwd=cwd,
                env=env | {"PWD": str(cwd)},
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert (out.returncode == 0) == ok, out.stdout + out.stderr
            return out.stdout

        run("work-pool", "create", "local", "--type", "process")
        run("--no-prompt", "deploy", "--all", cwd=deployer)
        inspect = run("deployment", "inspect", "reproduce-paper/model-independence", "--output", "json")
        deployment = json.loads(inspect)
        assert deployment["parameters"] == {"slug": "model_independence", "force": False}
        (schedule,) = deployment["schedules"]
        assert schedule["active"] is False and schedule["parameters"] == {"force": True, "verify": True}
        # nothing of the deploying folder, which is gone before any run starts: the worker's checkout is read then
        assert deployment["pull_steps"] == PULL_STEPS
        shutil.rmtree(deployer)

        # a plain worker that names no checkout: the run fails at once, its log saying how to name one
        plain = [*prefect, "worker", "start", "--pool", "local", "--limit", "1"]
        with _worker(plain, work, env | {"PREFECT_WORKER_QUERY_SECONDS": "1"}):
            out = run("deployment", "run", "reproduce-paper/model-independence", "--watch", ok=False)
        assert "Crashed" in out or "Failed" in out, out
        (run_id,) = re.findall(r"UUID: ([0-9a-f-]{36})", out)
        logs = run("flow-run", "logs", run_id)
        assert f"worker names no checkout ({CHECKOUT_ENV} is not set" in logs, logs

        # the README's worker (`icml25 worker` sets ICML25_CHECKOUT to its clone)
        with _worker([sys.executable, "-m", "flows.cli", "worker", "--pool", "local"], work, env):
            out = run("deployment", "run", "reproduce-paper/model-independence", "--watch")
        assert "Completed" in out, out
        artifact = run("artifact", "inspect", "model-independence-report", "--output", "json")
        assert "reports/model_independence/README.md" in artifact, artifact
