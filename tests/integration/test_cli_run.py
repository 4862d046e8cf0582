"""`icml25 run` end to end: it starts its own Prefect server, runs the flow, stops the server, and a
successful run prints no ERROR line and no traceback."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

import pytest

from tests.conftest import DVC_PAPER as SLUG
from tests.helpers import clone_repo


def test_icml25_run_up_to_date_paper(dvc_repo, tmp_path):
    from icml25.scratch import dvc_env

    work = clone_repo(dvc_repo[0], tmp_path / "repo")
    env = {k: v for k, v in dvc_env().items() if not k.startswith("PREFECT_")}
    out = subprocess.run(
        [sys.executable, "-m", "flows.cli", "run", SLUG],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "ERROR" not in text and "Traceback" not in text
    assert text.count("Finished in state Skipped") == 6  # code@ and the five stages
    assert re.search(rf"^{SLUG}: \d+/\d+ results? held\b", out.stdout, re.M), out.stdout
    assert (work / ".prefect" / "server.log").exists()
    port = int(re.search(r"View at http://127\.0\.0\.1:(\d+)/", text).group(1))
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", port))  # the server was stopped
