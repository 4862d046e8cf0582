"""Reading and writing artifacts: JSON (always the same layout, NaN/inf spelled out), JSON lines, text written
atomically, and ``.npz`` read once. Stages write through :class:`icml25.stage.StageContext`, which uses these."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary sibling and a rename: readers never see half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def json_safe(obj: Any) -> Any:
    """JSON has no NaN or infinity: a non-finite float becomes the string "nan", "inf" or "-inf"."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """The project's JSON layout: two-space indent, a final newline, non-finite floats as strings."""
    return json.dumps(json_safe(obj), indent=2, allow_nan=False) + "\n"


def write_json(path: Path, obj: Any) -> None:
    write_text_atomic(path, dumps(obj))


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def write_jsonl(path: Path, rows: Any) -> int:
    """One JSON object per line; returns the number of lines."""
    n = 0
    with Path(path).open("w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
            n += 1
    return n


def read_jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _rewrite_hint(path: Path) -> str:
    """Which stage to re-run for a damaged artifact: the one whose folder (``prepared``, ...) holds it."""
    from icml25.paths import STAGE_DIRS

    for part in reversed(Path(path).parts):
        for stage, folder in STAGE_DIRS.items():
            if part == folder:
                return f"re-run the {stage} stage that writes it"
    return "write it again"


def load_npz(path: Path) -> dict[str, Any]:
    """Every array of an .npz, read once (indexing an NpzFile re-reads the member each time).

    Pickled objects are never loaded. A missing, truncated or corrupt file (a copy cut short, a half-written
    output, a damaged member) raises :class:`~icml25.errors.UserError` naming the file, not a traceback from
    zipfile or numpy."""
    import zipfile
    import zlib

    import numpy as np

    from icml25.errors import UserError

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file; {_rewrite_hint(path)}")
    with path.open("rb") as fh:
        head = fh.read(6)
    if len(head) < 6:
        raise UserError(
            f"{path}: this .npz file is truncated or corrupt ({len(head)} bytes); {_rewrite_hint(path)}"
        )
    if not head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY")):
        # np.load would take any other bytes for a pickle and say so
        raise UserError(f"{path}: this is not an .npz archive (no zip header); {_rewrite_hint(path)}")
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("a single .npy array, not an .npz archive")
        with z:
            return {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, zlib.error, ValueError, EOFError, OSError) as exc:
        if isinstance(exc, ValueError) and "allow_pickle" in str(exc):
            problem = "holds pickled objects, which are never loaded"
        else:
            detail = str(exc).splitlines()[0] if str(exc) else ""
            problem = f"is truncated or corrupt ({type(exc).__name__}{': ' + detail if detail else ''})"
        raise UserError(f"{path}: this .npz file {problem}; {_rewrite_hint(path)}") from None
