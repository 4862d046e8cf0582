"""Named random streams: every random draw of a stage comes from the paper's seed and a name, never from a
seed plus a magic offset.

``stream(seed, "folds", p)`` is ``numpy.random.SeedSequence([seed, h("folds"), p])`` where ``h`` maps a name to
a 64-bit integer (SHA-256), so streams with different names or keys are independent, and adding a stream never
shifts another. Libraries that take an integer seed (torch, Lightning, scikit-learn) get
``seed_for(seed, name, ...)``, a 32-bit integer drawn from the same sequence.
"""

from __future__ import annotations

import hashlib
from typing import Any


def _key(part: int | str) -> int:
    if isinstance(part, bool) or not isinstance(part, int | str):
        raise TypeError(f"stream keys are ints or strings, got {part!r}")
    if isinstance(part, int):
        if part < 0:
            raise ValueError(f"stream keys must be >= 0, got {part}")
        return part
    return int.from_bytes(hashlib.sha256(part.encode()).digest()[:8], "little")


def stream(seed: int, name: str, *keys: int | str) -> Any:
    """The ``SeedSequence`` of stream ``name`` (and ``keys``, e.g. a run or a replicate index)."""
    import numpy as np

    return np.random.SeedSequence([_key(seed), _key(name), *(_key(k) for k in keys)])


def rng(seed: int, name: str, *keys: int | str) -> Any:
    """A NumPy ``Generator`` on stream ``name``."""
    import numpy as np

    return np.random.default_rng(stream(seed, name, *keys))


def seed_for(seed: int, name: str, *keys: int | str) -> int:
    """An integer seed in [0, 2**32) on stream ``name``, for libraries that take one."""
    import numpy as np

    return int(stream(seed, name, *keys).generate_state(1, np.uint32)[0])
