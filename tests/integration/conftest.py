"""The integration tests' own fixture: a warm starter for their stage processes."""

from __future__ import annotations

import os

import pytest

from tests.helpers import ROOT


@pytest.fixture(scope="session", autouse=True)
def warm_starter():
    """One warm starter for the integration tests (icml25/warm.py), as `icml25 run` has one per run: every stage
    and DVC command they start through `python -m icml25` is forked from it, instead of importing torch,
    Lightning and Great Expectations again (tests/core/test_warm.py covers the starter itself and the cold
    path). Only here: its import of those libraries costs the tests elsewhere more than it saves them."""
    from icml25.warm import warm_starter as start

    if os.environ.get("ICML25_COLD") == "1":
        yield None
        return
    with start(ROOT) as address:
        yield address
