"""One module's weights in one safetensors file, with what rebuilds it (a JSON object) in the file's metadata.

No pickle anywhere. The file is written to a temporary sibling and renamed into place, so a killed writer never
leaves a half-written file; a missing, truncated or foreign file raises :class:`~icml25.errors.UserError` naming
it (one line, no traceback)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from icml25.errors import UserError

META_KEY = "icml25"


def _umask() -> int:
    """The process's umask, read without setting it where Linux tells it (os.umask both sets and returns it, which
    another thread creating a file in between would feel)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    old = os.umask(0o077)
    os.umask(old)
    return old


def save_weights(path: str | Path, tensors: dict[str, Any], meta: dict[str, Any]) -> Path:
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        save_file(
            {k: v.detach().cpu().contiguous() for k, v in tensors.items()},
            tmp,
            metadata={META_KEY: json.dumps(meta, sort_keys=True)},
        )
        # mkstemp and safetensors both leave the file owner-only (0600), and os.replace keeps that mode: give it
        # the mode an ordinary open() would, so that weights in a shared DVC cache or checkout read as any file.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def load_weights(path: str | Path, kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tensors and the metadata object of a file that :func:`save_weights` wrote with ``meta["kind"] ==
    kind``."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        with safe_open(str(path), framework="pt") as f:
            raw = (f.metadata() or {}).get(META_KEY)
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    except (SafetensorError, OSError, ValueError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"{path}: not a readable safetensors file ({detail})") from None
    try:
        meta = json.loads(raw) if raw else None
    except json.JSONDecodeError:
        meta = None
    if not isinstance(meta, dict) or meta.get("kind") != kind:
        raise UserError(f"{path}: not a {kind} file (its metadata does not say so)")
    return tensors, meta
