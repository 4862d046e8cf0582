"""pigdreamer: the smoke pipeline, in process (the same runner and outputs as `dvc repro`)."""

from __future__ import annotations

from tests.helpers import check_report

SLUG = "pigdreamer"


def test_smoke_pipeline_writes_a_well_formed_report(smoke):
    work = smoke.run(SLUG)
    readme = check_report(work, SLUG, "smoke")
    assert "## What we measured" in readme
