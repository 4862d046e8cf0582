"""The README's four Prefect commands, as written, against a real server (slow: about a minute).

server start -> `prefect work-pool create local --type process` -> `prefect deploy --all` -> `prefect worker
start --pool local`; then a run of the model_independence deployment executes its flow in the checkout (a
reproduced smoke clone, so every stage is skipped) and publishes the report artifact.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.helpers import clone_repo

pytestmark = pytest.mark.slow


def test_readme_prefect_commands(dvc_repo, tmp_path):
    from flows.server import prefect_env, prefect_server

    work = clone_repo(dvc_repo[0], tmp_path / "repo")
    home = tmp_path / "prefect-home"
    with prefect_server(home) as url:
        env = prefect_env(home, url) | {"PWD": str(work)}
        prefect = [sys.executable, "-m", "prefect"]

        def run(*args: str) -> str:
            out = subprocess.run(
                [*prefect, *args], cwd=work, env=env, capture_output=True, text=True, timeout=300
            )
            assert out.returncode == 0, out.stdout + out.stderr
            return out.stdout

        run("work-pool", "create", "local", "--type", "process")
        run("--no-prompt", "deploy", "--all")
        inspect = run("deployment", "inspect", "reproduce-paper/model-independence", "--output", "json")
        deployment = json.loads(inspect)
        assert deployment["parameters"] == {"slug": "model_independence", "force": False}
        (schedule,) = deployment["schedules"]
        assert schedule["active"] is False and schedule["parameters"] == {"force": True, "verify": True}
        assert deployment["pull_steps"][0]["prefect.deployments.steps.set_working_directory"][
            "directory"
        ] == str(work)
        worker = subprocess.Popen(
            [*prefect, "worker", "start", "--pool", "local"],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            out = run("deployment", "run", "reproduce-paper/model-independence", "--watch")
            assert "Completed" in out
        finally:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
