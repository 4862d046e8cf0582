"""The nightly re-verification (the deployments' schedules: ``force=true, verify=true``): every claim of the run is
compared with the last committed claims.json, the comparison is a markdown artifact, the new artifacts are pushed
when a DVC remote is configured, and the run ends Failed when a claim that held now fails, naming it.

The default run edits a threshold in a reproduced scratch clone (only the report re-runs, as after a regression
in the code); the slow test runs the nightly parameters end to end on hyper (every stage forced) with its
committed claims.json edited so that a claim that fails there is recorded as held, and a local S3 remote.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DVC_PAPER as SLUG
from tests.helpers import ROOT, clone_repo, dvc

pytestmark = pytest.mark.filterwarnings("ignore")


def _commit(repo: Path, message: str) -> None:
    from icml25.scratch import dvc_env

    for args in (["add", "-A"], ["commit", "-qm", message]):
        subprocess.run(["git", *args], cwd=repo, env=dvc_env(), check=True, capture_output=True)


def _artifact(key: str) -> str:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        found = [a for a in client.read_latest_artifacts() if a.key == key]
    assert found, f"no artifact {key}"
    return found[0].data or ""


def test_a_claim_that_held_and_fails_now_fails_the_run_and_names_it(prefect_harness, dvc_repo, tmp_path):
    from flows.reproduce import reproduce_paper

    work = clone_repo(dvc_repo[0], tmp_path / "repo")
    _commit(work, "the reproduced smoke claims: the baseline")
    before = json.loads((work / "reports" / SLUG / "claims.json").read_text())["claims"][
        "finetune_detected_u"
    ]
    assert before["passed"] == 1
    report = work / "stages" / SLUG / "report.py"
    text = report.read_text()
    assert text.count('    "<",\n    -10.0,\n') >= 1
    report.write_text(text.replace('    "<",\n    -10.0,\n', '    "<",\n    -1000.0,\n', 1))  # a regression
    state = reproduce_paper(SLUG, root=str(work), verify=True, return_state=True)
    assert state.is_failed()
    assert "1 claim(s) that held now fail" in state.message
    value = f"{before['value']:.6g}"
    assert f"{SLUG}/finetune_detected_u regressed: held ({value}) -> failed ({value})" in state.message
    table = _artifact("claims-verification")
    assert "| `finetune_detected_u` | result | **regressed** | held -> failed |" in table
    assert "| `permtest_exact_floor` | result | agrees |" in table


@pytest.mark.slow
def test_the_nightly_run_recomputes_everything_pushes_and_fails_on_the_edited_claim(
    prefect_harness, tmp_path
):
    from flows.reproduce import reproduce_all
    from icml25.scratch import make_scratch
    from icml25.store import local_s3

    work = make_scratch(ROOT, "smoke", dest=tmp_path / "repo", papers=["hyper"])
    dvc(work, "repro")
    claims = work / "reports" / "hyper" / "claims.json"
    doc = json.loads(claims.read_text())
    failing = [cid for cid, c in doc["claims"].items() if not c["passed"]]
    assert failing, "the smoke profile must leave a hyper claim failed for this test"
    cid = failing[0]
    rec = doc["claims"][cid]
    old = rec["threshold"] + (
        1 if rec["op"] in (">=", ">") else -1
    )  # recorded as held, value beyond the test
    doc["claims"][cid] = {**rec, "value": old, "passed": 1}
    claims.write_text(json.dumps(doc, indent=2) + "\n")
    _commit(work, "hyper's claims, one edited to have held")
    with local_s3(tmp_path / "s3", bucket="icml25-repro") as s3:
        for option, value in s3.remote_settings():
            dvc(work, "remote", "modify", "--local", "storage", option, value)
        state = reproduce_all(root=str(work), force=True, verify=True, return_state=True)
        assert state.is_failed()
        assert f"hyper/{cid} regressed: held ({old:.6g}) -> failed" in state.message, state.message
        pushed = s3.filesystem().find("icml25-repro/dvc/files/md5")
        assert pushed  # the new artifacts went to the remote
    table = _artifact("claims-verification")
    assert f"| `{cid}` | result | **regressed** |" in table
    assert table.count("| hyper |") == len(doc["claims"])
