"""icml25.parallel.imap: every task's result, tagged with its index, whatever the number of workers; and a
worker that dies abruptly makes imap raise instead of waiting forever for the lost task."""

from __future__ import annotations

import os
import signal

import pytest

from icml25 import parallel


def _square(x: int) -> int:
    return x * x


def _die_on_three(x: int) -> int:
    if x == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


@pytest.mark.parametrize("workers", [1, 2])
def test_every_result_comes_back_tagged_with_its_index(workers):
    assert sorted(parallel.imap(_square, [3, 1, 2], workers)) == [(0, 9), (1, 1), (2, 4)]


def test_a_killed_worker_raises_instead_of_hanging():
    with pytest.raises(RuntimeError, match="died abruptly"):
        list(parallel.imap(_die_on_three, list(range(6)), 2))
