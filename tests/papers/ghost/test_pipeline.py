"""GHOST's smoke pipeline in process (the runner DVC calls): the report, its figures and the trained artifacts.
(The S3 round trip of the proxy models lives in tests/integration.)"""

from __future__ import annotations

import json

import pytest

from tests.helpers import check_report

SLUG = "ghost"
pytestmark = pytest.mark.filterwarnings("ignore")


def test_smoke_pipeline_writes_ghost_report_and_artifacts(smoke):
    work = smoke.run(SLUG)
    readme = check_report(work, SLUG, "smoke")
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())
    assert set(claims["claims"]) == {"beats_baselines", "above_chance", "proxy_fidelity"}
    for fig in ("accuracy.png", "label_distribution.png"):
        assert f"figures/{fig}" in readme
        assert (work / "reports" / SLUG / "figures" / fig).stat().st_size > 1000
    trained = work / "data" / SLUG / "trained" / "main"
    for graph in ("sbm", "digits"):
        run = trained / graph / "run0"
        for structure in ("identity", "knn"):  # GHOST's proxies and the ablation's kNN-structure ones
            assert (run / "generators" / structure / "client00.safetensors").exists()
        assert (run / "models" / "ghost.safetensors").exists()
        assert (run / "models" / "ghost_flip_server_labels.safetensors").exists()
    acc = (work / "data" / SLUG / "evaluated" / "main" / "accuracy.csv").read_text()
    for graph in ("sbm", "digits"):
        for method in ("ghost", "ghost_flip_all", "ghost_noret", "fedavg", "local", "central"):
            assert f"{graph},0,{method}," in acc
    assert "### One switch at a time" in readme and "GHOST minus GHOST without retention" in readme


def test_workers_do_not_change_the_trained_artifacts(root, tmp_path):
    """The train stage gives the same files with one process as with two (each training seeds itself)."""
    import shutil

    import yaml

    from icml25.runner import run_stage
    from tests.helpers import paper_params

    params = paper_params(root, SLUG, graphs=["sbm"], num_nodes=120, num_clients=3, runs=2)
    params["papers"][SLUG]["train"].update(
        hidden=8, client_epochs=3, repeats=1, server_steps=2, local_epochs=3, central_epochs=3
    )
    trained = tmp_path / "data" / SLUG / "trained" / "main"
    found = {}
    for workers in (1, 2):
        params["papers"][SLUG]["train"]["workers"] = workers
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        if workers == 1:
            run_stage(tmp_path, SLUG, "prepare")
        run_stage(tmp_path, SLUG, "train")
        found[workers] = {p.relative_to(trained): p.read_bytes() for p in trained.rglob("*") if p.is_file()}
        shutil.rmtree(trained)
    assert len(found[1]) > 2 * (3 * 2 + 9 + 3 + 2)  # generators, server models, baselines per run
    assert found[1] == found[2]
