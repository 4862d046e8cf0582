"""The Prefect flow of model_independence (smoke profile) under prefect_test_harness.

The flow is built from DVC's stage graph: one task per DVC stage named <stage>@<slug>; the first run executes
all of them, the second finds everything up to date and skips every task; `force` re-runs them all; the report
is published as a markdown artifact; the checkout's concurrency limit admits one run at a time.
"""

from __future__ import annotations

import json

import pytest

from icml25.scratch import make_scratch

SLUG = "model_independence"
STAGES = [f"{s}@{SLUG}" for s in ("prepare", "validate", "train", "evaluate", "report")]
pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def scratch(root, tmp_path_factory):
    return make_scratch(root, "smoke", dest=tmp_path_factory.mktemp("flow") / "repo")


def _task_runs(flow_run_id):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {r.name: r.state for r in runs}


def test_flow_runs_stale_stages_then_skips(prefect_harness, scratch):
    from flows.reproduce import reproduce_paper

    state = reproduce_paper(SLUG, root=str(scratch), return_state=True)
    assert state.is_completed()
    assert state.result() == STAGES
    tasks = _task_runs(state.state_details.flow_run_id)
    assert sorted(tasks) == sorted(STAGES)
    assert all(s.is_completed() and s.name == "Completed" for s in tasks.values())
    claims = json.loads((scratch / "reports" / SLUG / "claims.json").read_text())
    assert claims["profile"] == "smoke"

    again = reproduce_paper(SLUG, root=str(scratch), return_state=True)
    assert again.result() == []
    tasks = _task_runs(again.state_details.flow_run_id)
    assert sorted(tasks) == sorted(STAGES) and {s.name for s in tasks.values()} == {"Skipped"}

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
    assert reproduce_paper(SLUG, root=str(scratch)) == [f"evaluate@{SLUG}", f"report@{SLUG}"]


def test_one_dvc_run_per_checkout(prefect_harness, scratch):
    from flows.reproduce import checkout_lock

    with checkout_lock(scratch):
        with pytest.raises(TimeoutError):
            with checkout_lock(scratch, timeout_seconds=1):
                pass
    with checkout_lock(scratch, timeout_seconds=5):  # released again
        pass
