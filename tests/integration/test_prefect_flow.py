"""The Prefect flow of model_independence (smoke profile) under prefect_test_harness.

The flow is built from DVC's stage graph: one task per DVC stage named <stage>@<slug>. On a clone of the
reproduced smoke repo it finds everything up to date and skips every task; after an evaluate param change it
runs evaluate and report only; after an edit to the report's code it runs the code fingerprints and, in the same
`dvc repro`, the report only; a re-run that writes the same bytes still refreshes the report's timings;
`force` marks every stage stale; the report is published as a markdown artifact. (One run at
a time per checkout: tests/core/test_lock.py and tests/integration/test_interrupt.py.)
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import DVC_PAPER as SLUG
from tests.helpers import clone_repo

STAGES = [f"{s}@{SLUG}" for s in ("code", "prepare", "validate", "train", "evaluate", "report")]
pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def scratch(dvc_repo, tmp_path_factory):
    return clone_repo(dvc_repo[0], tmp_path_factory.mktemp("flow") / "repo")


def _task_runs(flow_run_id, expected: set[str], timeout: float = 30.0):
    """The flow run's task runs by name once the server has them all in a final state (task runs reach the
    server through events, a moment after the flow returns)."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
            )
            found = {r.name: r.state for r in runs}
            if (set(found) == expected and all(s and s.is_final() for s in found.values())) or (
                time.monotonic() > deadline
            ):
                return found
            time.sleep(0.5)


def test_up_to_date_stages_are_skipped(prefect_harness, scratch):
    from flows.reproduce import reproduce_paper

    state = reproduce_paper(SLUG, root=str(scratch), return_state=True)
    assert state.is_completed() and state.result() == []
    tasks = _task_runs(state.state_details.flow_run_id, set(STAGES))
    assert sorted(tasks) == sorted(STAGES)
    assert {s.name for s in tasks.values()} == {"Skipped"} and all(s.is_completed() for s in tasks.values())

    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        artifact = client.read_latest_artifacts()
    assert any(a.key == "model-independence-report" and "## Claims" in (a.data or "") for a in artifact)


def test_changed_evaluate_param_runs_evaluate_and_downstream(prefect_harness, scratch):
    import yaml

    from flows.reproduce import reproduce_paper

    params = yaml.safe_load((scratch / "params.yaml").read_text())
    params["papers"][SLUG]["evaluate"]["n_inputs"] += 5
    (scratch / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    state = reproduce_paper(SLUG, root=str(scratch), return_state=True)
    assert state.result() == [f"evaluate@{SLUG}", f"report@{SLUG}"]
    tasks = _task_runs(state.state_details.flow_run_id, set(STAGES))
    assert {n: s.name for n, s in tasks.items()} == {
        f"code@{SLUG}": "Skipped",
        f"prepare@{SLUG}": "Skipped",
        f"validate@{SLUG}": "Skipped",
        f"train@{SLUG}": "Skipped",
        f"evaluate@{SLUG}": "Completed",
        f"report@{SLUG}": "Completed",
    }
    claims = json.loads((scratch / "reports" / SLUG / "claims.json").read_text())
    assert claims["profile"] == "smoke"


def test_an_edit_to_the_report_code_runs_the_fingerprints_then_the_report_only(prefect_harness, scratch):
    from flows.reproduce import reproduce_paper

    report = scratch / "stages" / SLUG / "report.py"
    report.write_text(report.read_text() + "\n# an edit that changes no number\n")
    state = reproduce_paper(SLUG, root=str(scratch), return_state=True)
    assert state.result() == [f"code@{SLUG}", f"report@{SLUG}"]
    tasks = _task_runs(state.state_details.flow_run_id, set(STAGES))
    assert {n for n, s in tasks.items() if s.name == "Completed"} == {f"code@{SLUG}", f"report@{SLUG}"}


def test_a_rerun_that_writes_the_same_bytes_still_refreshes_the_reports_timings(prefect_harness, scratch):
    """An edit to evaluate's code re-runs evaluate, which writes the same bytes: DVC alone would then skip the
    report, and timing.json would keep the previous run's evaluate time; the flow runs the report forced."""
    from flows.reproduce import reproduce_paper
    from icml25.paths import PaperPaths

    paths = PaperPaths(scratch, SLUG)
    evaluate = scratch / "stages" / SLUG / "evaluate.py"
    evaluate.write_text(evaluate.read_text() + "\n# an edit that changes no output\n")
    state = reproduce_paper(SLUG, root=str(scratch), return_state=True)
    assert state.result() == [f"code@{SLUG}", f"evaluate@{SLUG}", f"report@{SLUG}"]
    tasks = _task_runs(state.state_details.flow_run_id, set(STAGES))
    assert {n: s.name for n, s in tasks.items()} == {
        f"code@{SLUG}": "Completed",  # its dependencies changed (a stage module), its fingerprints did not
        f"prepare@{SLUG}": "Skipped",
        f"validate@{SLUG}": "Skipped",
        f"train@{SLUG}": "Skipped",
        f"evaluate@{SLUG}": "Completed",
        f"report@{SLUG}": "Completed",
    }
    fresh = json.loads((paths.stage_timings / "evaluate.json").read_text())["wall_s"]
    assert json.loads(paths.timing.read_text())["wall_s"]["evaluate"] == fresh


def test_force_marks_every_stage_stale(scratch):
    from flows.dvcgraph import plan

    steps = plan(scratch, lambda n: n.endswith(f"@{SLUG}"), force=False)
    assert [s.name for s in steps] == STAGES and not any(s.stale for s in steps)
    assert all(s.stale for s in plan(scratch, lambda n: n.endswith(f"@{SLUG}"), force=True))


def test_reproduce_all_plans_every_paper_with_one_dvc_status(prefect_harness, scratch, monkeypatch):
    import flows.reproduce as fr

    calls = []
    real_plan = fr.plan
    monkeypatch.setattr(fr, "plan", lambda *a, **k: calls.append(a[1]) or real_plan(*a, **k))
    report = scratch / "stages" / SLUG / "report.py"
    report.write_text(report.read_text() + "\n# another edit that changes no number\n")
    ran = fr.reproduce_all(root=str(scratch))
    assert ran[SLUG] == [f"code@{SLUG}", f"report@{SLUG}"]
    # one plan for the checkout: after code@ ran, DVC itself decides which stages its fingerprints stale
    assert len(calls) == 1
    assert fr.reproduce_all(root=str(scratch)) == {SLUG: []} and len(calls) == 2
