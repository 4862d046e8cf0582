"""cross_conformal's train and evaluate stages give the same files on one process as on two (every fit and every
draw is seeded from its own stream in the parent; the parent writes in the serial order)."""

from __future__ import annotations

import shutil

import pytest
import yaml

SLUG = "cross_conformal"


def _files(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.filterwarnings("ignore")
def test_workers_do_not_change_the_trained_and_evaluated_artifacts(root, tmp_path, monkeypatch):
    from icml25.runner import run_stage
    from stages.cross_conformal import evaluate, train
    from tests.helpers import paper_params

    # chunks smaller than the groups, so that a file is stacked from several tasks
    monkeypatch.setattr(train, "SIM_CHUNK", 3)
    monkeypatch.setattr(train, "REAL_CHUNK", 2)
    monkeypatch.setattr(evaluate, "SIM_CHUNK", 3)
    monkeypatch.setattr(evaluate, "REAL_CHUNK", 2)
    params = paper_params(
        root, SLUG, n=20, p_grid=[3, 30], replications=5, real_splits=3, real_test=30, real_folds=[4]
    )
    section = params["papers"][SLUG]
    section["train"].update(real_models=["linear", "rf"], rf_trees=2)
    section["evaluate"].update(
        grid_points=20,
        unstable_p=[25, 35],
        unstable_grid_points=50,
        full_conformal=True,
        mapie=True,
        mapie_p=[3],
    )
    data = tmp_path / "data" / SLUG
    found: dict[int, dict] = {}
    for workers in (1, 2):
        section["train"]["workers"] = section["evaluate"]["workers"] = workers
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        if workers == 1:
            run_stage(tmp_path, SLUG, "prepare")
        run_stage(tmp_path, SLUG, "train")
        run_stage(tmp_path, SLUG, "evaluate")
        found[workers] = {stage: _files(data / stage / "main") for stage in ("trained", "evaluated")}
        for stage in ("trained", "evaluated"):
            shutil.rmtree(data / stage)
    trained = found[1]["trained"]
    assert len(trained) == 1 + 2 + 2  # meta.json, a file per p and per (model, K)
    assert {"sets.csv.gz", "checks.json", "summary_simulation.csv"} <= {p.name for p in found[1]["evaluated"]}
    assert found[1] == found[2]
