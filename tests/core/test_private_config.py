""".dvc/config.local holds a DVC remote's endpoint and keys: every copy of it the project makes is 0600 (a
scratch copy made with ``local_config``, a worker checkout's config written by ``share_cache``), whatever mode
the original has (DVC's own ``dvc remote modify --local`` writes it with the umask's mode, 0644 under 022).
Before, both copies were 0644: the keys readable by every user of the machine."""

from __future__ import annotations

import os
import stat
import subprocess

from icml25.scratch import copy_private, make_scratch, private_file

SECRET = "['remote \"storage\"']\n    secret_access_key = s3cr3t\n"


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _checkout(root):
    """A git checkout with the files make_scratch needs (params.yaml) and a 0644 .dvc/config.local that git
    ignores, as DVC leaves it."""
    root.mkdir()
    (root / "params.yaml").write_text("profile: quick\npapers: {}\n")
    (root / ".dvc").mkdir()
    (root / ".dvc" / ".gitignore").write_text("/config.local\n")
    (root / ".dvc" / "config").write_text("")
    local = root / ".dvc" / "config.local"
    local.write_text(SECRET)
    local.chmod(0o644)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def test_a_scratch_copy_of_the_local_config_is_readable_by_its_owner_only(tmp_path):
    root = _checkout(tmp_path / "main")
    work = make_scratch(root, "quick", dest=tmp_path / "scratch", local_config=True)
    copy = work / ".dvc" / "config.local"
    assert copy.read_text() == SECRET and _mode(copy) == 0o600
    assert _mode(root / ".dvc" / "config.local") == 0o644  # the user's own file is left as it is
    assert not (make_scratch(root, "quick", dest=tmp_path / "plain") / ".dvc" / "config.local").exists()


def test_a_worker_checkouts_local_config_is_readable_by_its_owner_only(tmp_path):
    from flows.worktrees import share_cache

    tree = tmp_path / "w1"
    (tree / ".dvc").mkdir(parents=True)
    (tree / ".dvc" / "config").write_text("")
    share_cache(tree, tmp_path / "cache")
    local = tree / ".dvc" / "config.local"
    assert f"dir = {tmp_path / 'cache'}" in local.read_text() and _mode(local) == 0o600
    local.chmod(0o644)  # left by an older version: tightened on the next refresh
    share_cache(tree, tmp_path / "cache")
    assert _mode(local) == 0o600 and "shared = group" in local.read_text()


def test_copy_private_and_private_file_set_0600_whatever_the_umask(tmp_path):
    src = tmp_path / "src"
    src.write_text(SECRET)
    src.chmod(0o666)
    old = os.umask(0)
    try:
        dest = copy_private(src, tmp_path / "dest")
        existing = tmp_path / "existing"
        existing.write_text("old, longer than the new content\n")
        existing.chmod(0o644)
        copy_private(src, existing)
        fresh = private_file(tmp_path / "fresh")
    finally:
        os.umask(old)
    assert dest.read_text() == existing.read_text() == SECRET and fresh.read_text() == ""
    assert _mode(dest) == _mode(existing) == _mode(fresh) == 0o600
