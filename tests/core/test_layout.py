"""The project's wiring: one slug everywhere, the derived files (dvc.yaml, prefect.yaml) fresh, the committed
claims keeping the contract, CI running lint and tests, and test collection free of torch and Lightning."""

from __future__ import annotations

import importlib

import yaml

from icml25.params import implemented, load_params
from icml25.pipeline import generated, stale
from icml25.registry import BY_SLUG, STAGES, load_paper, load_stage
from tests.helpers import check_report


def test_every_implemented_paper_is_wired(root):
    params = load_params(root)
    for slug in implemented(params):
        assert slug in BY_SLUG
        for stage in STAGES:
            assert (root / "stages" / slug / f"{stage}.py").exists(), (slug, stage)
        assert (root / "stages" / slug / "report.md").exists()
        assert (root / "models" / slug / "__init__.py").exists()
        assert (root / "tests" / "papers" / slug / "__init__.py").exists()
        assert (root / "data" / slug / "input" / "README.md").exists()
        assert set(params["papers"][slug]) == {"seed", *STAGES}
        paper = load_paper(slug)
        assert paper.slug == slug and set(paper.schema) <= set(STAGES)
        for stage in STAGES[:-1]:
            assert callable(load_stage(slug, stage).run), (slug, stage)
        assert callable(load_stage(slug, "report").context)
        assert BY_SLUG[slug].has_tools == (root / "models" / slug / "cli.py").exists(), slug


def test_generated_files_are_fresh(root):
    assert stale(root) == [], "run `icml25 sync`"
    dvc = yaml.safe_load(generated(root)["dvc.yaml"])
    deps = [d for d in dvc["stages"]["index"]["deps"] if d.endswith("/claims.json")]
    assert deps == [f"reports/{slug}/claims.json" for slug in implemented(load_params(root))]


def test_prefect_yaml_has_one_deployment_per_paper(root):
    doc = yaml.safe_load((root / "prefect.yaml").read_text())
    papers = {d["parameters"]["slug"] for d in doc["deployments"] if "slug" in d.get("parameters", {})}
    assert papers == set(implemented(load_params(root)))
    assert any(d["entrypoint"].endswith(":reproduce_all") for d in doc["deployments"])
    for d in doc["deployments"]:
        assert d["work_pool"]["name"] == "local"
        (schedule,) = d["schedules"]
        assert schedule["active"] is False and schedule["parameters"]["force"] is True
        path, fn = d["entrypoint"].split(":")
        assert callable(getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), fn))


def test_committed_reports_keep_the_contract(root):
    """The contract's checks run here always (icml25.claims); the workplace's shared checker too when present."""
    for slug in implemented(load_params(root)):
        check_report(root, slug, "quick")


def test_ci_runs_lint_and_the_readme_test_command(root):
    ci = (root / ".ci" / "run").read_text()
    assert "make lint" in ci and "make test" in ci
    readme = (root / "README.md").read_text()
    assert "make test" in readme and "make repro" in readme
    make = (root / "Makefile").read_text()
    assert "icml25 layers" in make and "icml25 sync --check" in make


def test_collection_imports_neither_torch_nor_lightning():
    from tests.conftest import COLLECTION_IMPORTED

    assert COLLECTION_IMPORTED == {"torch": False, "lightning": False}
