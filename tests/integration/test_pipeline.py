"""The smoke profile of model_independence through `dvc repro` in a scratch copy with a fresh DVC cache.

The session's `smoke_repo` is reproduced once; then: a no-op repro; (on a clone) a train param change re-runs
only train and what depends on it; (on a clone) a corrupted prepared file is stopped by Great Expectations
before train, and nothing downstream (nor the report) is overwritten.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from tests.conftest import clone_repo, dvc

SLUG = "model_independence"
pytestmark = pytest.mark.filterwarnings("ignore")


def digest(folder):
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture()
def smoke(smoke_repo):
    return smoke_repo


@pytest.fixture()
def clone(smoke_repo, tmp_path):
    return clone_repo(smoke_repo[0], tmp_path / "clone"), ""


def test_smoke_repro_writes_a_well_formed_report(smoke, root):
    work, log = smoke
    for stage in ("prepare", "validate", "train", "evaluate", "report"):
        assert f"Running stage '{stage}@{SLUG}'" in log
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())
    assert claims["profile"] == "smoke" and len(claims["claims"]) == 8
    checker = root.parent / "shared" / "tools" / "check_claims.py"
    if checker.exists():
        res = subprocess.run([sys.executable, str(checker), SLUG], cwd=work, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout
    readme = (work / "reports" / SLUG / "README.md").read_text()
    assert "## Claims" in readme and "figures/pvalue_histogram.png" in readme
    assert (work / "reports" / SLUG / "figures" / "match_heatmap.png").stat().st_size > 1000
    assert f"[{SLUG}]({SLUG}/README.md)" in (work / "reports" / "README.md").read_text()
    ckpts = sorted(p.name for p in (work / "data" / SLUG / "trained" / "main" / "checkpoints").iterdir())
    assert ckpts[:3] == ["base", "ft", "ft_perm"] and len(ckpts) == 3 + 2 * 3
    metrics = dvc(work, "metrics", "show", "--json").stdout
    assert "finetune_detected_match" in metrics


def test_second_repro_does_nothing(smoke):
    work, _ = smoke
    out = dvc(work, "repro")
    assert "Running stage" not in out.stdout
    assert dvc(work, "status", "--json").stdout.strip() == "{}"


def test_train_param_change_reruns_only_train_and_downstream(clone):
    work, _ = clone
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["papers"][SLUG]["train"]["ft_steps"] += 1
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    stale = set(json.loads(dvc(work, "status", "--json").stdout))
    assert stale == {f"train@{SLUG}", f"report@{SLUG}"}  # report shows the params; evaluate follows train
    out = dvc(work, "repro")
    ran = {line.split("'")[1] for line in out.stdout.splitlines() if line.startswith("Running stage")}
    assert ran == {f"train@{SLUG}", f"evaluate@{SLUG}", f"report@{SLUG}"} | ({"index"} & ran)
    assert f"prepare@{SLUG}" not in ran and f"validate@{SLUG}" not in ran


def test_great_expectations_gates_training(clone):
    work, _ = clone
    data = work / "data" / SLUG
    trained, report = digest(data / "trained" / "main"), (work / "reports" / SLUG / "README.md").read_bytes()
    claims = (work / "reports" / SLUG / "claims.json").read_bytes()
    train_csv = data / "prepared" / "main" / "train.csv"
    frame = pd.read_csv(train_csv)
    frame.loc[3, "p5"] = None  # a null
    frame.loc[4, "p20"] = 99  # out of range
    frame = frame.drop(columns=["p63"])  # a missing column
    frame.to_csv(train_csv, index=False)
    dvc(work, "commit", "--force", f"prepare@{SLUG}")  # as if prepare had written this file
    out = dvc(work, "repro", check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "validation failed" in text
    for column in ("train.p5", "train.p20", "train.p63"):
        assert column in text, text
    assert "Traceback" not in text
    assert f"Running stage 'train@{SLUG}'" not in text
    assert not (data / "validated" / "validation.json").exists()
    assert digest(data / "trained" / "main") == trained
    assert (work / "reports" / SLUG / "README.md").read_bytes() == report
    assert (work / "reports" / SLUG / "claims.json").read_bytes() == claims
