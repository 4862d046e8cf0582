"""One paper (model_independence) through real `dvc repro` in a scratch copy with a fresh DVC cache.

The session's `dvc_repo` is reproduced once; then: a no-op repro; (on clones) a train param change re-runs only
train and what depends on it; a corrupted prepared file is stopped by Great Expectations before train; and each
stage depends on exactly the code it runs: an edit to the report's code re-runs the report only, an edit to the
paper's CLI nothing, an edit to a model module the stages that import it, a new file in the input folder prepare.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest
import yaml

from tests.conftest import DVC_PAPER as SLUG
from tests.helpers import check_report, clone_repo, dvc, ran_stages

pytestmark = pytest.mark.filterwarnings("ignore")
STAGES = ("prepare", "validate", "train", "evaluate", "report")


def digest(folder):
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture()
def clone(dvc_repo, tmp_path):
    return clone_repo(dvc_repo[0], tmp_path / "clone")


def stale(work) -> set[str]:
    return set(json.loads(dvc(work, "status", "--json").stdout))


def append(path, text="\n# an edit that changes no number\n"):
    path.write_text(path.read_text() + text)


def test_repro_runs_every_stage_and_writes_a_well_formed_report(dvc_repo):
    work, log = dvc_repo
    # code@ runs too unless the checkout's committed fingerprints are current (they are on a clean main)
    assert ran_stages(log) - {f"code@{SLUG}"} == {f"{s}@{SLUG}" for s in STAGES} | {"index"}
    readme = check_report(work, SLUG, "smoke")
    assert "figures/pvalue_histogram.png" in readme
    assert f"[{SLUG}]({SLUG}/README.md)" in (work / "reports" / "README.md").read_text()
    ckpts = sorted(p.name for p in (work / "data" / SLUG / "trained" / "main" / "checkpoints").iterdir())
    assert ckpts[:3] == ["base", "ft", "ft_perm"]
    assert "finetune_detected_match" in dvc(work, "metrics", "show", "--json").stdout
    fingerprint = json.loads((work / "data" / SLUG / "code" / "train.json").read_text())
    assert fingerprint["stage"] == f"train@{SLUG}" and "icml25/training.py" in fingerprint["files"]


def test_second_repro_does_nothing(dvc_repo):
    work, _ = dvc_repo
    out = dvc(work, "repro")
    assert "Running stage" not in out.stdout
    assert stale(work) == set()


def test_train_param_change_reruns_only_train_and_downstream(clone):
    params = yaml.safe_load((clone / "params.yaml").read_text())
    params["papers"][SLUG]["train"]["ft_steps"] += 1
    (clone / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    # report shows the params; evaluate follows train
    assert stale(clone) == {f"train@{SLUG}", f"report@{SLUG}"}
    ran = ran_stages(dvc(clone, "repro").stdout)
    assert ran - {"index"} == {f"train@{SLUG}", f"evaluate@{SLUG}", f"report@{SLUG}"}


def test_a_bad_parameter_under_plain_dvc_repro_keeps_the_previous_artifact(clone):
    """DVC removes a stage's cached outputs before its command runs; the runner puts them back from the cache
    when the stage fails (here: a parameter the schema refuses), so the last good model survives."""
    trained = clone / "data" / SLUG / "trained" / "main"
    before = digest(trained)
    params = yaml.safe_load((clone / "params.yaml").read_text())
    params["papers"][SLUG]["train"]["ft_steps"] = -3
    (clone / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    out = dvc(clone, "repro", f"train@{SLUG}", check=False)
    assert out.returncode != 0 and "ft_steps" in out.stdout + out.stderr
    assert "restored the previous data/model_independence/trained/main" in out.stdout + out.stderr
    assert digest(trained) == before
    assert not list(trained.parent.glob(".main.*"))  # no temporary copy left behind
    status = json.loads(dvc(clone, "status", "--json").stdout)
    changes = [
        change for entry in status[f"train@{SLUG}"] for change in entry
    ]  # still stale: its params changed
    assert "changed outs" not in changes, status  # and its outputs are the ones dvc.lock records


def test_an_edit_to_the_report_code_reruns_the_report_only(clone):
    append(clone / "stages" / SLUG / "report.py")
    assert stale(clone) == {f"code@{SLUG}", f"report@{SLUG}"}
    assert ran_stages(dvc(clone, "repro").stdout) == {f"code@{SLUG}", f"report@{SLUG}"}


def test_an_edit_to_the_papers_cli_reruns_nothing(clone):
    append(clone / "models" / SLUG / "cli.py")
    assert stale(clone) == set()


def test_an_edit_to_a_model_module_makes_the_stages_that_import_it_stale(clone):
    """The report is made to import a model module (as a report that calls a model function does); an edit to
    that module then makes evaluate and the report stale, and nothing upstream of them."""
    report = clone / "stages" / SLUG / "report.py"
    append(
        report, "\n\ndef _calls_a_model_function():\n    from models.model_independence.stats import match\n"
    )
    dvc(clone, "repro", f"report@{SLUG}")
    fingerprints = {s: (clone / "data" / SLUG / "code" / f"{s}.json").read_text() for s in STAGES}
    importers = {s for s in STAGES if "models/model_independence/stats.py" in fingerprints[s]}
    assert {"report", "evaluate"} <= importers and not {"prepare", "validate"} & importers
    append(
        clone / "models" / SLUG / "stats.py",
        "\n_EDITED = 1  # code, not a comment (comments stale nothing)\n",
    )
    assert ran_stages(dvc(clone, "repro", f"code@{SLUG}").stdout) == {f"code@{SLUG}"}
    assert stale(clone) == {f"{s}@{SLUG}" for s in importers}


def test_a_new_input_file_reruns_prepare(clone):
    (clone / "data" / SLUG / "input" / "extra.csv").write_text("a,b\n1,2\n")
    assert stale(clone) == {f"prepare@{SLUG}"}


def test_great_expectations_gates_training(clone):
    data = clone / "data" / SLUG
    trained, report = digest(data / "trained" / "main"), (clone / "reports" / SLUG / "README.md").read_bytes()
    claims = (clone / "reports" / SLUG / "claims.json").read_bytes()
    train_csv = data / "prepared" / "main" / "train.csv"
    frame = pd.read_csv(train_csv)
    frame.loc[3, "p5"] = None  # a null
    frame.loc[4, "p20"] = 99  # out of range
    frame = frame.drop(columns=["p63"])  # a missing column
    frame.to_csv(train_csv, index=False)
    dvc(clone, "commit", "--force", f"prepare@{SLUG}")  # as if prepare had written this file
    out = dvc(clone, "repro", check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "validation failed" in text
    for column in ("train.p5", "train.p20", "train.p63"):
        assert column in text, text
    assert "Traceback" not in text
    assert f"Running stage 'train@{SLUG}'" not in text
    assert not (data / "validated" / "validation.json").exists()
    assert digest(data / "trained" / "main") == trained
    assert (clone / "reports" / SLUG / "README.md").read_bytes() == report
    assert (clone / "reports" / SLUG / "claims.json").read_bytes() == claims
