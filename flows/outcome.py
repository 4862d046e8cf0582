"""How a worker's results reach the checkout that asked for them: an *outcome* per paper, through an outbox.

A worker runs a paper's stale stages in its own checkout (a worktree, or a clone on another machine). What the
asking checkout needs afterwards is small and exact:

* the paper's ``dvc.lock`` entries, as the worker's DVC wrote them (every dependency's and output's hash);
* the paper's outputs that DVC does not cache (``cache: false``: the reports and the code fingerprints, which
  git tracks), as files;
* the cached outputs themselves travel through DVC: through the shared cache of a machine's worktrees, or
  through the S3 remote between machines (the worker pushes them, the asking checkout pulls them).

:func:`collect` writes an outcome into an *outbox* folder: ``lock.json``, ``files/<path>`` and, last, as the
mark that it is complete, ``outcome.json``. The outbox is a local folder (workers on this machine) or a prefix
beside the DVC remote's objects (``<remote>/icml25-outbox/<run>/<slug>/``, reached with the remote's own
endpoint and credentials from DVC's config), see :func:`outbox_fs`. :func:`apply` writes an outcome into a
checkout: the lock entries into its ``dvc.lock`` (DVC's own YAML round trip), the uncached outputs in place of
the old ones, then ``dvc checkout`` (or ``dvc pull`` from the remote) of the paper's stages; afterwards ``dvc
status`` of those stages is clean unless the worker ran other code or params than the checkout holds, which
:func:`apply` reports instead of hiding.
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.dvcgraph import inside

OUTBOX_PREFIX = "icml25-outbox"
DONE = "outcome.json"


@dataclass(frozen=True)
class Outbox:
    """Where outcomes go: ``dir`` (a local folder) or ``remote`` (a DVC remote's name), and a run's ``key``."""

    key: str
    dir: str | None = None
    remote: str | None = None

    def to_param(self) -> dict[str, str | None]:
        return {"key": self.key, "dir": self.dir, "remote": self.remote}

    @classmethod
    def from_param(cls, value: dict[str, Any]) -> Outbox:
        return cls(key=str(value["key"]), dir=value.get("dir"), remote=value.get("remote"))


def outbox_fs(root: Path, outbox: Outbox) -> tuple[Any, str]:
    """An fsspec file system and the base path of ``outbox`` (the remote's endpoint and keys come from DVC's
    config of checkout ``root``, ``.dvc/config.local`` included)."""
    if outbox.remote:
        from dvc.config import Config
        from dvc.fs import get_cloud_fs

        cls, config, path = get_cloud_fs(Config(dvc_dir=str(root / ".dvc")), name=outbox.remote)
        return cls(**config).fs, posixpath.join(path, OUTBOX_PREFIX, outbox.key)
    from fsspec.implementations.local import LocalFileSystem

    return LocalFileSystem(), str(Path(outbox.dir or ".", outbox.key))


def paper_stages(root: Path, slug: str) -> list[Any]:
    """The DVC stages of one paper (``<stage>@<slug>``) in ``root``."""
    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    from dvc.repo import Repo

    with inside(root):
        repo = Repo(str(root))
        try:
            return [s for s in repo.index.stages if s.addressing.endswith(f"@{slug}")]
        finally:
            repo.close()


def _uncached(stages: list[Any]) -> list[str]:
    return [str(out.def_path) for s in stages for out in s.outs if not out.use_cache]


def _lock_entries(root: Path, names: list[str]) -> dict[str, Any]:
    from dvc.utils.serialize import load_yaml

    lock = load_yaml(str(root / "dvc.lock")) if (root / "dvc.lock").exists() else {}
    stages = lock.get("stages", {}) or {}
    return {name: stages[name] for name in names if name in stages}


def collect(root: Path, slug: str, outbox: Outbox, meta: dict[str, Any]) -> str:
    """Write ``slug``'s outcome from checkout ``root`` into the outbox; returns where it went."""
    stages = paper_stages(root, slug)
    names = [s.addressing for s in stages]
    fs, base = outbox_fs(root, outbox)
    dest = posixpath.join(base, slug)
    if fs.exists(dest):
        fs.rm(dest, recursive=True)
    fs.makedirs(dest, exist_ok=True)
    files = []
    for out in _uncached(stages):
        path = root / out
        found = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for f in found:
            if f.is_file():
                rel = f.relative_to(root).as_posix()
                fs.makedirs(posixpath.dirname(posixpath.join(dest, "files", rel)), exist_ok=True)
                fs.put_file(str(f), posixpath.join(dest, "files", rel))
                files.append(rel)
    fs.pipe_file(posixpath.join(dest, "lock.json"), json.dumps(_lock_entries(root, names), indent=1).encode())
    done = {
        "slug": slug,
        "stages": names,
        "uncached": _uncached(stages),
        "files": files,
        "host": socket.gethostname(),
        "checkout": str(root),
        **meta,
    }
    fs.pipe_file(posixpath.join(dest, DONE), json.dumps(done, indent=1).encode())
    return dest


@dataclass
class Fetched:
    """An outcome read from the outbox into a local temporary folder."""

    meta: dict[str, Any]
    lock: dict[str, Any]
    folder: Path


def fetch(root: Path, outbox: Outbox, slug: str, into: Path) -> Fetched:
    fs, base = outbox_fs(root, outbox)
    src = posixpath.join(base, slug)
    if not fs.exists(posixpath.join(src, DONE)):
        raise RuntimeError(
            f"no complete outcome of {slug} in the outbox ({src}): the worker did not finish it"
        )
    meta = json.loads(fs.cat_file(posixpath.join(src, DONE)))
    lock = json.loads(fs.cat_file(posixpath.join(src, "lock.json")))
    folder = Path(tempfile.mkdtemp(prefix=f"{slug}-", dir=into))
    for rel in meta["files"]:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(posixpath.join(src, "files", rel), str(target))
    return Fetched(meta, lock, folder)


def discard(root: Path, outbox: Outbox) -> None:
    """Remove a run's outbox (every paper's outcome in it)."""
    fs, base = outbox_fs(root, outbox)
    if fs.exists(base):
        fs.rm(base, recursive=True)


def write_lock_entries(root: Path, entries: dict[str, Any]) -> None:
    """Replace these stages' entries in ``root``'s dvc.lock (the way DVC updates it: a YAML round trip that keeps
    the other entries, their order and layout)."""
    from dvc.utils.serialize import modify_yaml

    with modify_yaml(str(root / "dvc.lock")) as data:
        if not data:
            data.update({"schema": "2.0"})
        data["stages"] = data.get("stages", {}) or {}
        for name, entry in entries.items():
            data["stages"][name] = entry


def _replace(src: Path | None, dst: Path) -> None:
    """``dst`` (a file or a folder) becomes ``src`` (None: removed), through a temporary sibling."""
    if src is not None:
        tmp = dst.with_name(f".{dst.name}.tmp-outcome")
        if tmp.is_dir():
            shutil.rmtree(tmp)
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp)
    if dst.is_dir() and not dst.is_symlink():
        shutil.rmtree(dst)
    elif dst.exists() or dst.is_symlink():
        dst.unlink()
    if src is not None:
        tmp.replace(dst)


def apply(root: Path, got: Fetched, remote: str | None = None) -> None:
    """Write a fetched outcome into checkout ``root``: the uncached outputs, the lock entries, then the cached
    outputs from the (shared) cache, or pulled from ``remote``. :func:`status` tells whether it is up to date."""
    names = got.meta["stages"]
    for out in got.meta["uncached"]:
        src = got.folder / out
        _replace(src if src.exists() else None, root / out)
    write_lock_entries(root, got.lock)
    fetch_outputs(root, names, remote)


def fetch_outputs(
    root: Path, names: list[str], remote: str | None = None, allow_missing: bool = False
) -> None:
    """The stages' cached outputs into ``root``'s workspace: ``dvc checkout`` from its cache, or ``dvc pull``
    (and the run cache) from ``remote``; in this process, DVC being imported already."""
    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    from dvc.repo import Repo

    with inside(root):
        repo = Repo(str(root))
        try:
            if remote:
                repo.pull(
                    targets=names, remote=remote, force=True, run_cache=True, allow_missing=allow_missing
                )
            else:
                repo.checkout(targets=names, force=True, allow_missing=allow_missing)
        finally:
            repo.close()


def status(root: Path, names: list[str] | None = None) -> dict[str, Any]:
    """``dvc status`` of these stages (None: all) in ``root``: empty when up to date."""
    os.environ.setdefault("DVC_NO_ANALYTICS", "1")
    from dvc.repo import Repo

    with inside(root):
        repo = Repo(str(root))
        try:
            return repo.status(targets=names)
        finally:
            repo.close()
