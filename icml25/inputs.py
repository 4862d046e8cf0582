"""Input checks of the paper tools (`icml25 <slug> ...`), made before any model is loaded or trained.

A tool that loads a model (Lightning, torch, transformers: seconds to a minute on a busy machine) or trains one
must refuse a bad argument first, in a fraction of a second, not after that work: a seed outside the range its
trainer accepts, a weights file that is missing or of the wrong kind, a path that holds no causal LM. These
checks read at most a file's first bytes (a safetensors header, a GGUF magic number) and import nothing heavy;
the loaders still check everything again, so a file that passes here and is broken further in is refused by them.

Only the command-line tools import this module (as :mod:`icml25.outputs`), so changing it re-runs no stage.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .errors import UserError

#: The seeds Lightning's ``seed_everything`` (every training loop of the project) and NumPy's legacy seeding accept.
SEED_BOUND = 2**32
#: The key of the JSON metadata that :mod:`models.common.weights` writes into a safetensors file.
WEIGHTS_META_KEY = "icml25"
#: A safetensors header larger than this is not one (the format's own limit is 100 MB).
MAX_HEADER = 100_000_000


def check_seed(seed: int, flag: str = "--seed", bound: int | None = SEED_BOUND) -> int:
    """``seed`` if it is an integer in [0, ``bound``) (``bound`` None: any integer >= 0), else a
    :class:`UserError` naming ``flag`` and the value."""
    if (
        isinstance(seed, bool)
        or not isinstance(seed, int)
        or seed < 0
        or (bound is not None and seed >= bound)
    ):
        if bound is None:
            rule = "an integer >= 0"
        else:
            rule = f"an integer in [0, {'2^32' if bound == SEED_BOUND else bound})"
        raise UserError(f"{flag} {seed!r}: must be {rule}")
    return seed


def check_file(path: Path, flag: str | None = None, what: str = "a file") -> Path:
    """``path`` if it is a readable file, else a :class:`UserError` naming it (and ``flag``)."""
    path = Path(path)
    name = f"{flag} {path}" if flag else str(path)
    if not path.exists():
        raise UserError(f"{name}: no such file")
    if path.is_dir():
        raise UserError(f"{name}: is a directory, not {what}")
    if not os.access(path, os.R_OK):
        raise UserError(f"{name}: the file is not readable")
    return path


def check_weights(path: Path, kind: str, flag: str | None = None) -> Path:
    """``path`` if it looks like a weights file of ``kind`` that :func:`models.common.weights.load_weights`
    reads (a safetensors file whose metadata says ``kind``), judged from its JSON header alone; else the
    :class:`UserError` that ``load_weights`` would raise, before torch is imported."""
    path = check_file(path, flag)
    name = f"{flag} {path}" if flag else str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            n = int.from_bytes(head, "little")
            if len(head) < 8 or not 2 <= n <= min(MAX_HEADER, size - 8):
                raise ValueError("no safetensors header")
            header = json.loads(fh.read(n))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"{name}: not a readable safetensors file ({detail})") from None
    meta = header.get("__metadata__")
    raw = meta.get(WEIGHTS_META_KEY) if isinstance(meta, dict) else None
    try:
        doc = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        raise UserError(f"{name}: not a {kind} file (its metadata does not say so)")
    return path


def check_causal_lm(path: Path, flag: str) -> Path:
    """``path`` if it can hold a causal LM that transformers loads the way
    :func:`models.common.smollm2.load_causal_lm` does: a folder with a ``config.json``, or a ``.gguf`` file that
    starts with the GGUF magic number; else a :class:`UserError` naming it, before transformers is imported."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{flag} {path}: no such file or folder")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"{flag} {path}: not a transformers model folder (it has no config.json)")
        return path
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot be read ({exc.strerror or exc})") from None
    if path.suffix != ".gguf" or magic != b"GGUF":
        raise UserError(f"{flag} {path}: not a GGUF file (*.gguf) or a transformers model folder")
    return path
