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


def _square(x: int) -> int:
    return x * x


def test_run_groups_returns_each_groups_results_in_order_and_says_when_a_group_is_done(caplog):
    import logging

    from icml25.parallel import run_groups

    log = logging.getLogger("icml25.test.groups")
    groups = [("a", [3, 1, 2]), ("b", [5]), ("c", [4, 6])]
    with caplog.at_level(logging.INFO, logger=log.name):
        for workers in (1, 2):
            assert run_groups(_square, groups, workers, log, "fitted") == [[9, 1, 4], [25], [16, 36]]
    said = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith(("a fitted", "b fitted", "c fitted")) for m in said) == 6
    assert said[0] == "6 tasks (3 groups) on 1 worker(s)" and "6 tasks (3 groups) on 2 worker(s)" in said
