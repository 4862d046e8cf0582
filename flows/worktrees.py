"""The checkouts of local workers: git worktrees under ``runs/workers/``, one per worker, sharing one DVC cache.

``icml25 run all --workers N`` gives each of its N Prefect workers a checkout of its own, because DVC runs one
pipeline at a time per checkout (its repo lock, and ours, :mod:`icml25.lock`). A checkout here is a ``git worktree``
of the main checkout (the same repository, no second clone), refreshed before every run to exactly the main
checkout's state: ``HEAD`` checked out, then every file that is modified, untracked (not ignored) or deleted in the
main checkout copied over (so uncommitted params, code and ``dvc.lock`` travel too).

Every worktree's ``.dvc/config.local`` (mode 0600, as every such file the project writes: a remote's keys live
there) points DVC at the main checkout's cache, with DVC's settings for a cache that several checkouts share:
``cache.dir`` (the main checkout's cache directory), ``cache.shared = group`` (files and folders group-writable, so
that workers under other users of the group can use it too) and ``cache.type = reflink,hardlink,copy`` (outputs
linked from the cache, not copied, where the file system allows). A stage run by one worker lands in that cache,
run cache included, so no other worker and no later run computes it again; the main checkout gets the results
through the same cache (``dvc checkout``, see :mod:`flows.outcome`).

:func:`digest` names the state a checkout holds (everything git sees, outputs aside), so that a worker can refuse
a run meant for another state instead of computing the wrong thing.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from pathlib import Path

from icml25.errors import UserError
from icml25.scratch import cache_dir, dvc_env, private_file

WORKERS_DIR = Path("runs") / "workers"
#: git-tracked files that a run rewrites: left out of :func:`digest` (they are results, not inputs)
RESULT_PREFIXES = ("reports/", "dvc.lock")
RESULT_PARTS = ("/code/",)  # data/<slug>/code/<stage>.json, the code fingerprints (outputs of code@<slug>)
SHARED_CACHE = (("cache.shared", "group"), ("cache.type", "reflink,hardlink,copy"))


def git(cwd: Path, *args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, env=dvc_env(), capture_output=True, text=True)
    if check and out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {out.stderr.strip()}")
    return out.stdout


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def _listed(root: Path, *flags: str) -> list[str]:
    return [p for p in git(root, "ls-files", "-z", *flags).split("\0") if p]


def _is_result(rel: str) -> bool:
    return rel.startswith(RESULT_PREFIXES) or (
        rel.startswith("data/") and any(p in rel for p in RESULT_PARTS)
    )


def digest(root: Path) -> str:
    """A short hash of everything git sees in ``root`` (tracked and untracked-not-ignored files, their content),
    except the results a run rewrites (reports/, dvc.lock, the code fingerprints): two checkouts with the same
    digest run the same code on the same params and inputs."""
    files = sorted(rel for rel in _listed(root, "-c", "-o", "--exclude-standard") if not _is_result(rel))
    files = [rel for rel in files if (root / rel).is_file()]
    h = hashlib.sha256()
    if files:
        blobs = subprocess.run(
            ["git", "hash-object", "--stdin-paths"],
            cwd=root,
            input="\n".join(files) + "\n",
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for rel, blob in zip(files, blobs, strict=True):
            h.update(f"{rel}\0{blob}\n".encode())
    return h.hexdigest()[:16]


def share_cache(tree: Path, cache: Path) -> None:
    """Point ``tree``'s DVC at ``cache``, with the settings of a shared cache (its ``.dvc/config.local``)."""
    from dvc.config import Config

    private_file(tree / ".dvc" / "config.local")  # 0600 before DVC writes it (in place: the mode stays)
    with Config(dvc_dir=str(tree / ".dvc")).edit("local") as conf:
        conf["cache"]["dir"] = str(cache)
        for key, value in SHARED_CACHE:
            conf["cache"][key.split(".", 1)[1]] = value


def sync(root: Path, tree: Path) -> None:
    """Make worktree ``tree`` hold exactly what ``root`` holds (git's view: ``HEAD`` plus the uncommitted
    changes, untracked files included; ignored files such as DVC outputs are left to DVC)."""
    git(tree, "checkout", "-q", "--detach", "--force", head(root))
    git(tree, "clean", "-q", "-d", "--force")
    for rel in _listed(root, "-m", "-o", "--exclude-standard"):
        src, dst = root / rel, tree / rel
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_name(f".{dst.name}.tmp-sync")
            shutil.copy2(src, tmp)
            tmp.replace(dst)
    for rel in _listed(root, "-d"):
        (tree / rel).unlink(missing_ok=True)


def prepare(root: Path, n: int, say=print) -> list[Path]:
    """``n`` worktrees of ``root`` under runs/workers/w1..wn, each synced to ``root`` and on ``root``'s cache.
    Returns their paths; the time each took is what the pipeline benchmark reports as set-up overhead."""
    if n < 1:
        raise UserError(f"--workers must be at least 1, not {n}")
    root = root.resolve()
    cache = cache_dir(root)
    cache.mkdir(parents=True, exist_ok=True)
    git(root, "worktree", "prune")
    known = git(root, "worktree", "list", "--porcelain")
    trees = []
    for i in range(1, n + 1):
        start = time.monotonic()
        tree = root / WORKERS_DIR / f"w{i}"
        if f"worktree {tree}\n" not in known:
            if tree.exists():
                shutil.rmtree(tree)
            tree.parent.mkdir(parents=True, exist_ok=True)
            git(root, "worktree", "add", "-q", "--detach", str(tree), "HEAD")
        sync(root, tree)
        share_cache(tree, cache)
        say(f"worker checkout {tree.relative_to(root)} ready ({time.monotonic() - start:.1f} s)")
        trees.append(tree)
    return trees
