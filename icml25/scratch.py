"""Profiles: run a checkout's pipeline under another profile without touching the checkout.

:func:`make_scratch` copies the tracked and untracked-but-not-ignored files (``git ls-files -co
--exclude-standard``) into ``runs/<profile>/`` (gitignored), commits them in a fresh git repo, and writes the
merged params (params.yaml with ``profiles/<profile>.yaml`` over it, merged by OmegaConf in code). DVC's cache
there starts empty (``.dvc/cache`` is ignored, so it is never copied): every stage runs its code, nothing is
restored from a run cache. Tests, ``icml25 run --profile smoke`` and the benchmarks use it.

:func:`apply_profile` writes the merged params into the checkout itself, for users who then run
``dvc repro`` / ``dvc exp save`` there (e.g. the paper profile on a GPU machine).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .errors import UserError
from .params import merged_profile


def dvc_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment DVC runs in: this interpreter's bin first on PATH (a stage's ``python`` is whatever
    comes first), analytics off, quiet git."""
    import sys

    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["DVC_NO_ANALYTICS"] = "1"
    env["GX_ANALYTICS_ENABLED"] = "false"
    env.setdefault("GIT_AUTHOR_NAME", "icml25")
    env.setdefault("GIT_AUTHOR_EMAIL", "icml25@localhost")
    env.setdefault("GIT_COMMITTER_NAME", "icml25")
    env.setdefault("GIT_COMMITTER_EMAIL", "icml25@localhost")
    env.update(extra or {})
    return env


def _git(cwd: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env=dvc_env(), capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {out.stderr.strip()}")
    return out.stdout


def cache_dir(root: Path) -> Path:
    """The DVC cache directory of ``root`` (its ``cache.dir`` setting, else ``.dvc/cache``)."""
    from dvc.config import Config

    config = Config(dvc_dir=str(root / ".dvc"))
    configured = config["cache"].get("dir")
    return Path(configured).resolve() if configured else (root / ".dvc" / "cache").resolve()


#: The mode of a file that holds secrets (``.dvc/config.local``: a remote's endpoint and keys): its owner's only.
PRIVATE = 0o600


def private_file(path: Path) -> Path:
    """Make ``path`` readable and writable by its owner only (:data:`PRIVATE`), creating it empty if it is
    missing: created with that mode, so that it is never readable by others, not even before anything is
    written into it (DVC writes its config files in place, keeping their mode)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE)
    try:
        os.fchmod(fd, PRIVATE)
    finally:
        os.close(fd)
    return Path(path)


def copy_private(src: Path, dest: Path) -> Path:
    """Copy the file ``src`` that holds secrets to ``dest`` with mode :data:`PRIVATE`, whatever mode ``src``
    has (``shutil.copy2`` would keep a 0644)."""
    data = Path(src).read_bytes()
    private_file(dest)
    with open(dest, "wb") as fh:  # truncates in place: the mode stays
        fh.write(data)
    return Path(dest)


def write_params(path: Path, params: dict) -> None:
    import yaml

    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(yaml.safe_dump(params, sort_keys=False, default_flow_style=False))
    tmp.replace(path)


def make_scratch(
    root: Path,
    profile: str,
    dest: Path | None = None,
    papers: list[str] | None = None,
    local_config: bool = False,
) -> Path:
    """A committed copy of ``root`` with ``profile``'s params, ready for ``dvc repro``; returns its path.

    ``papers``: keep only these papers in its params.yaml (and regenerate its dvc.yaml and prefect.yaml), e.g. the
    one paper an integration test drives through DVC and Prefect. ``local_config``: also copy ``root``'s
    ``.dvc/config.local`` (the remote's endpoint and keys, never in git), for a copy that pulls and pushes; the
    copy is readable by its owner only (0600), whatever mode DVC gave the original."""
    params = merged_profile(root, profile)
    if papers is not None:
        unknown = [p for p in papers if p not in params["papers"]]
        if unknown:
            raise UserError(f"papers {unknown} are not in params.yaml")
        params["papers"] = {slug: params["papers"][slug] for slug in papers}
    dest = (dest or root / "runs" / profile).resolve()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    files = _git(root, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for rel in filter(None, files):
        src = root / rel
        if not src.is_file():  # deleted but still tracked
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    write_params(dest / "params.yaml", params)
    if papers is not None:  # the copy stays consistent: its profiles and derived files name only these papers
        from .params import load_yaml
        from .pipeline import sync

        for overlay in sorted((dest / "profiles").glob("*.yaml")):
            doc = load_yaml(overlay)
            doc["papers"] = {k: v for k, v in (doc.get("papers") or {}).items() if k in papers}
            write_params(overlay, doc)
        sync(dest)
    local = root / ".dvc" / "config.local"
    if local_config and local.exists():
        copy_private(local, dest / ".dvc" / "config.local")
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", f"scratch copy for profile {profile}")
    return dest


def apply_profile(root: Path, profile: str) -> Path:
    if not (root / "params.yaml").exists():
        raise UserError(f"{root}: no params.yaml")
    path = root / "params.yaml"
    write_params(path, merged_profile(root, profile))
    return path
