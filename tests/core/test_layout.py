"""The project's wiring: one slug everywhere, the index depends on every implemented paper's claims."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import yaml

from icml25.params import implemented, load_params
from icml25.registry import BY_SLUG, STAGES, load_paper


def test_every_implemented_paper_is_wired(root):
    params = load_params(root)
    for slug in implemented(params):
        assert slug in BY_SLUG
        assert (root / "stages" / f"{slug}.py").exists()
        assert (root / "models" / slug / "__init__.py").exists()
        assert set(params["papers"][slug]) == {"seed", *STAGES}
        paper = load_paper(slug)
        assert set(paper.stages) == set(STAGES)
        assert paper.claims, slug


def test_stages_see_only_the_params_dvc_tracks_for_them(root):
    """A stage reading a section that its DVC stage does not list would not re-run when that section changes."""
    dvc = yaml.safe_load((root / "dvc.yaml").read_text())
    for slug in implemented(load_params(root)):
        paper = load_paper(slug)
        for name, spec in paper.stages.items():
            tracked = [p.replace("${key}", slug) for p in dvc["stages"][name]["do"]["params"]]
            for section in spec.sections:
                assert f"papers.{slug}.{section}" in tracked or f"papers.{slug}" in tracked, (name, section)
            assert f"papers.{slug}.seed" in tracked or f"papers.{slug}" in tracked or name == "validate", name


def test_index_depends_on_each_implemented_papers_claims(root):
    dvc = yaml.safe_load((root / "dvc.yaml").read_text())
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


def test_committed_claims_are_well_formed(root):
    checker = root.parent / "shared" / "tools" / "check_claims.py"
    for slug in implemented(load_params(root)):
        path = root / "reports" / slug / "claims.json"
        doc = json.loads(path.read_text())
        assert doc["paper"] == slug and doc["profile"] == "quick"
        ids = [c.id for c in load_paper(slug).claims]
        assert list(doc["claims"]) == ids
        if checker.exists():
            out = subprocess.run(
                [sys.executable, str(checker), slug, *ids], cwd=root, capture_output=True, text=True
            )
            assert out.returncode == 0, out.stdout + out.stderr


def test_ci_calls_the_readme_test_command(root):
    assert "make test" in (root / ".ci" / "run").read_text()
    assert (
        "make test" in (root / "README.md").read_text() and "make repro" in (root / "README.md").read_text()
    )
