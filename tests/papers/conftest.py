"""Fixtures the papers' tests share: one BLAS and one torch thread for every paper's tests; the smoke workspace
with the module's paper (its ``SLUG``) prepared, and a scratch copy of its prepared files to tamper with."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

#: Read by OpenBLAS, MKL and OpenMP (torch's intra-op pool) when they are loaded, and by the processes a stage forks.
_ONE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@pytest.fixture(scope="package", autouse=True)
def _one_blas_thread():
    """One BLAS/OpenMP thread for the papers' tests, restored after them.

    The papers' tests run many small matrix products and tiny models; on a busy 2-core machine a second BLAS or
    torch thread only spins against the first (measured: a 64x200 @ 200x64 product 9.6 ms on two OpenBLAS
    threads against 0.31 ms on one; hyper's default tests 40 s -> 13 s, model_independence's 37 s -> 10 s).
    The environment covers the libraries loaded later (torch is imported only when a test first needs it, never
    while collecting); threadpoolctl the ones already loaded (numpy's OpenBLAS, imported by the test modules)."""
    from threadpoolctl import threadpool_limits

    saved = {k: os.environ.get(k) for k in _ONE_THREAD_ENV}
    os.environ.update(_ONE_THREAD_ENV)
    try:
        with threadpool_limits(1):
            yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One torch intra-op thread for each test, whatever an earlier test or library call left set (cheap: torch
    is not imported here, only set where a test or fixture has imported it)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


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
