"""Output files of the paper tools (`icml25 <slug> <verb> -o PATH`): checked before any work, written atomically.

:func:`check_output` refuses, with one line naming the path, what would otherwise fail after minutes of work
with a traceback: a missing or read-only folder, a path that is a directory, a read-only file.
:func:`atomic_output` gives a temporary sibling to write and moves it into place on success; the temporary
file is removed on every exit (an error, Ctrl-C), so nothing half-written is left behind.

Only the command-line tools import this module (the stages write through :mod:`icml25.io` and
:class:`icml25.stage.StageContext`), so changing it re-runs no stage.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from .errors import UserError


def _file_in_a_folder(path: Path, flag: str) -> tuple[Path, Path]:
    """(path, its folder) when ``path`` names a file in an existing folder, else a :class:`UserError`."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UserError(f"{flag} {path}: is a directory, not a file")
    if not parent.is_dir():
        raise UserError(f"{flag} {path}: no such directory {parent}")
    return path, parent


def check_output(path: Path, flag: str = "--output") -> Path:
    """``path`` if a file can be written there, else a :class:`UserError` naming it (call before any work)."""
    path, parent = _file_in_a_folder(path, flag)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {path}: the directory {parent} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"{flag} {path}: the file is not writable")
    return path


def check_append(path: Path, flag: str) -> Path:
    """``path`` if a tool can append to it (a file it reads back and extends, e.g. results kept across resumed
    runs): an existing file that is readable and writable (its folder may be read-only), or a new file in a
    writable folder; else a :class:`UserError` naming it (call before any work)."""
    path, parent = _file_in_a_folder(path, flag)
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise UserError(f"{flag} {path}: the file is not readable and writable")
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {path}: the directory {parent} is not writable")
    return path


@contextlib.contextmanager
def atomic_output(path: Path, flag: str = "--output") -> Iterator[Path]:
    """``with atomic_output(p) as tmp: write(tmp)``: ``tmp`` replaces ``p`` when the block succeeds; ``tmp`` is
    gone on every exit; an OS error while writing is a :class:`UserError` naming ``p``."""
    path = check_output(path, flag)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        yield tmp
        tmp.replace(path)
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
