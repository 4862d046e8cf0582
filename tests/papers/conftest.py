"""Fixtures the papers' validate tests share: the smoke workspace with the module's paper (its ``SLUG``)
prepared, and a scratch copy of its prepared files to tamper with."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="module")
def prepared(smoke, request):
    """The smoke workspace (its prepared folder written once: by the pipeline, or here if it has not run)."""
    from icml25.runner import run_stage

    slug = request.module.SLUG
    if not (smoke.root / "data" / slug / "prepared" / "main").exists():
        run_stage(smoke.root, slug, "prepare")
    return smoke.root


@pytest.fixture
def work(prepared, tmp_path, request):
    """A scratch root holding the smoke params and a copy of the prepared files (free to tamper with)."""
    slug = request.module.SLUG
    shutil.copy(prepared / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(prepared / "data" / slug / "prepared", tmp_path / "data" / slug / "prepared")
    return tmp_path
