"""Torch on one thread for a block of many tiny operations.

Small tensors (a few hundred to a few thousand entries) gain nothing from a second intra-op thread, and on a
shared 2-core machine the two threads spin against each other: measured for Ferret's basis generation, 1,000
reconstructions took 1.4 s on one thread and 12.9 s on two. :func:`one_thread` sets one thread for the block and
restores the caller's count after it, so a library call does not change its caller's settings.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
