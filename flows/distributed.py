"""Reproduction across Prefect workers: ``reproduce-parallel`` hands each stale paper to a work pool's workers,
each in a checkout of its own, and brings their results back into the asking checkout.

Two flows and a deployment:

* ``reproduce-on-worker`` runs on a worker (a Prefect *process* worker, one flow run at a time: ``--limit 1``)
  in that worker's checkout, named by ``ICML25_CHECKOUT`` in the worker's environment (the deployment's pull
  step, :mod:`flows.checkout`, moves there when the run starts). It refuses a checkout whose state
  (:func:`flows.worktrees.digest`) is not the one the run was asked for, fetches what the paper needs (``dvc
  checkout`` from the shared cache, or ``dvc pull`` from the S3 remote on another machine), runs
  ``reproduce-paper`` there (only the stale stages run), pushes the outputs when it works through a remote, and
  leaves the paper's outcome in the outbox (:mod:`flows.outcome`).
* ``reproduce-parallel`` (the coordinator) holds the asking checkout's run lock, asks DVC once which papers are
  stale, submits one ``reproduce-on-worker`` run per stale paper (longest first, by each paper's last
  timing.json) and, as each finishes, applies its outcome: the lock entries, the uncached outputs, then ``dvc
  checkout`` (shared cache) or ``dvc pull`` (remote) of its stages. Then the index. A paper whose worker failed,
  or whose stages are not up to date after its outcome was applied, fails the run, named.
* the deployment ``reproduce-on-worker/<pool>`` is registered by the coordinator on its pool (and the pool and
  its queue created when missing).

On one machine ``icml25 run all --workers N`` (:mod:`flows.run`) makes N worktrees sharing the main checkout's
DVC cache (:mod:`flows.worktrees`), starts N workers in them and runs the coordinator. Across machines each machine
runs ``icml25 worker --pool P`` in its own clone, with the DVC remote configured, and any machine asks with
``icml25 run all --pool P --remote storage`` (README, "Scaling out").
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.states import Failed
from prefect.task_runners import ThreadPoolTaskRunner

from flows import outcome
from flows.checkout import CHECKOUT_ENV, PULL_STEPS
from flows.dvcgraph import plan
from flows.reproduce import _locked, _root, dvc_push, dvc_stage, reproduce_paper
from flows.worktrees import digest
from icml25.params import implemented, load_params
from icml25.paths import PaperPaths

WORKER_FLOW = "reproduce-on-worker"
ENTRYPOINT = "flows/distributed.py:reproduce_on_worker"
WORKER_ENV = "ICML25_WORKER"
DEFAULT_QUEUE = "default"


def worker_checkout() -> Path:
    """This worker's checkout: ``ICML25_CHECKOUT`` (set by ``icml25 worker``), else the working directory."""
    from icml25.cli import find_root

    return find_root(Path(os.environ.get(CHECKOUT_ENV) or os.getcwd()))


@task(cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=10)
def dvc_pull(root: str, remote: str, targets: list[str]) -> None:
    """``dvc pull`` of what the stages have on the remote (their outputs and run cache): a network step."""
    get_run_logger().info("pulling %s from the DVC remote %r", ", ".join(targets), remote)
    outcome.fetch_outputs(Path(root), targets, remote, allow_missing=True)


@task(cache_policy=NO_CACHE, persist_result=False)
def dvc_checkout(root: str, targets: list[str]) -> None:
    """``dvc checkout`` of the stages' outputs that the (shared) cache holds."""
    outcome.fetch_outputs(Path(root), targets, allow_missing=True)


def _work_dir(here: Path, profile: str | None) -> Path:
    """The checkout to run in: ``here``, or a scratch copy of it under ``profile`` (runs/<profile>/, with this
    clone's DVC remote settings, so that it pulls and pushes like the clone)."""
    if not profile:
        return here
    from icml25.scratch import make_scratch

    return make_scratch(here, profile, local_config=True)


@flow(name=WORKER_FLOW, flow_run_name="{slug}", log_prints=True)
def reproduce_on_worker(
    slug: str,
    state: str,
    outbox: dict[str, Any],
    force: bool = False,
    remote: str | None = None,
    profile: str | None = None,
) -> dict[str, Any]:
    """One paper in this worker's checkout (see the module); ``state`` is the digest the asking checkout has
    (:func:`flows.worktrees.digest`), ``profile`` a profile to apply in a scratch copy first (a GPU machine's
    ``paper`` runs). Returns the stages that ran and where the outcome went."""
    log = get_run_logger()
    here = worker_checkout()
    work = _work_dir(here, profile)
    mine = digest(work)
    if mine != state:
        raise RuntimeError(
            f"this worker's checkout {work} holds state {mine}, the run was asked for {state}: bring the clone to "
            "the asking checkout's commit (git pull) and its uncommitted changes, then run again"
        )
    start = time.monotonic()
    with _locked(work):
        names = [s.addressing for s in outcome.paper_stages(work, slug)]
        if remote:
            dvc_pull(str(work), remote, names)
        else:
            dvc_checkout(str(work), names)
        fetched = time.monotonic()
        ran = reproduce_paper(slug, force=force, root=str(work))
        done = time.monotonic()
        if remote and ran:
            dvc_push(str(work), remote, names)
        meta = {
            "ran": ran,
            "state": mine,
            "worker": os.environ.get(WORKER_ENV, ""),
            "setup_s": round(fetched - start, 2),  # pulling or linking what the paper needs
            "run_s": round(done - fetched, 2),  # reproduce-paper: the stale stages
            "push_s": round(time.monotonic() - done, 2),
            "seconds": round(time.monotonic() - start, 2),
        }
        where = outcome.collect(work, slug, outcome.Outbox.from_param(outbox), meta)
    log.info("%s: ran %s; outcome in %s", slug, ", ".join(ran) or "nothing (all up to date)", where)
    return {"ran": ran, "outcome": where}


def ensure_deployment(pool: str, queue: str | None = None) -> str:
    """Register ``reproduce-on-worker/<pool>`` on the process work pool ``pool`` (created, with ``queue``,
    when missing); returns the deployment's name."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound
    from prefect.utilities.callables import parameter_schema
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        try:
            found = client.read_work_pool(pool)
            if found.type != "process":
                raise RuntimeError(
                    f"work pool {pool!r} is of type {found.type!r}; the workers must be 'process'"
                )
        except ObjectNotFound:
            template = ProcessWorker.get_default_base_job_template()
            try:
                client.create_work_pool(WorkPoolCreate(name=pool, type="process", base_job_template=template))
            except ObjectAlreadyExists:  # a worker created it meanwhile
                pass
        if queue:
            try:
                client.read_work_queue_by_name(queue, work_pool_name=pool)
            except ObjectNotFound:
                try:
                    client.create_work_queue(name=queue, work_pool_name=pool)
                except ObjectAlreadyExists:
                    pass
        flow_id = client.create_flow_from_name(WORKER_FLOW)
        client.create_deployment(
            flow_id=flow_id,
            name=pool,
            entrypoint=ENTRYPOINT,
            work_pool_name=pool,
            pull_steps=PULL_STEPS,
            parameter_openapi_schema=parameter_schema(reproduce_on_worker.fn).model_dump_for_openapi(),
            enforce_parameter_schema=False,
            description="One paper in a worker's own checkout (icml25 run --workers / icml25 worker).",
            tags=["icml25"],
        )
    return f"{WORKER_FLOW}/{pool}"


@task(cache_policy=NO_CACHE, persist_result=False, task_run_name="dispatch {slug}")
def dispatch(slug: str, deployment: str, parameters: dict[str, Any], queue: str | None, when: datetime):
    """One worker flow run, scheduled at ``when`` (workers take runs in that order), waited for; returns the
    finished FlowRun (its state says how it ended)."""
    from prefect.deployments import run_deployment

    return run_deployment(
        deployment,
        parameters={"slug": slug, **parameters},
        scheduled_time=when,
        timeout=None,
        poll_interval=1,
        work_queue_name=queue,
        flow_run_name=slug,
    )


def expected_seconds(root: Path, slug: str) -> float:
    """The paper's last wall time (its timing.json), for longest-first dispatch; 0 when unknown."""
    path = PaperPaths(root, slug).timing
    try:
        return float(sum(json.loads(path.read_text())["wall_s"].values()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0.0


SUMMARY = Path("runs") / "last-parallel-run.json"


def _names(steps: list, slug: str) -> list[str]:
    return [st.name for st in steps if st.name.endswith(f"@{slug}")]


def _summary(run: Any, meta: dict[str, Any], apply_s: float) -> dict[str, Any]:
    """One paper's times: waiting for a worker, the worker's own phases, applying the outcome here."""
    queued = None
    if run.start_time and run.created:
        queued = round((run.start_time - run.created).total_seconds(), 2)
    flow_s = None
    if run.start_time and run.end_time:  # the worker's flow run, start-up and outcome included
        flow_s = round((run.end_time - run.start_time).total_seconds(), 2)
    keys = ("worker", "host", "setup_s", "run_s", "push_s", "seconds", "ran")
    return {
        "queued_s": queued,
        "flow_s": flow_s,
        **{k: meta.get(k) for k in keys},
        "apply_s": round(apply_s, 2),
    }


def _write_summary(here: Path, papers: dict[str, Any], wall: float, failures: dict[str, str]) -> None:
    """runs/last-parallel-run.json: what each paper cost where (the pipeline benchmark reads it)."""
    from icml25 import io

    path = here / SUMMARY
    path.parent.mkdir(parents=True, exist_ok=True)
    io.write_json(path, {"wall_s": round(wall, 2), "papers": papers, "failed": failures})


@flow(name="reproduce-parallel", log_prints=True, task_runner=ThreadPoolTaskRunner(max_workers=64))
def reproduce_parallel(
    pool: str,
    root: str | None = None,
    force: bool = False,
    remote: str | None = None,
    queue: str | None = None,
    profile: str | None = None,
    papers: list[str] | None = None,
):
    """Every implemented paper (or ``papers``) through the workers of ``pool``, results back into this checkout
    (see the module). ``remote``: results travel through this DVC remote (workers on other machines);
    ``profile``: the workers apply it in scratch copies of their clones (this checkout is then a scratch copy
    of the same profile)."""
    log = get_run_logger()
    here = _root(root)
    ran: dict[str, list[str]] = {}
    failures: dict[str, str] = {}
    summary: dict[str, dict[str, Any]] = {}
    began = time.monotonic()
    with _locked(here):
        slugs = [s for s in implemented(load_params(here)) if papers is None or s in papers]
        steps = plan(here, lambda n: True, force)
        stale = [s for s in slugs if any(st.stale for st in steps if st.name.endswith(f"@{s}"))]
        log.info(
            "%d of %d papers have stale stages%s",
            len(stale),
            len(slugs),
            f": {', '.join(stale)}" if stale else "",
        )
        if stale:
            deployment = ensure_deployment(pool, queue)
            key = uuid.uuid4().hex[:12]
            box = (
                outcome.Outbox(key, remote=remote)
                if remote
                else outcome.Outbox(key, dir=str(here / "runs" / "outbox"))
            )
            parameters = {"state": digest(here), "outbox": box.to_param(), "force": force, "remote": remote}
            if profile:
                parameters["profile"] = profile
            order = sorted(stale, key=lambda s: -expected_seconds(here, s))
            # longest first: the scheduled times (a millisecond apart) give the workers' order, whatever order the
            # dispatching threads create the runs in
            now = datetime.now(UTC)
            futures = {
                dispatch.submit(slug, deployment, parameters, queue, now + timedelta(milliseconds=i)): slug
                for i, slug in enumerate(order)
            }
            with tempfile.TemporaryDirectory(prefix="icml25-outcomes-") as tmp:
                for future in as_completed(list(futures)):
                    slug = futures[future]
                    run = future.result()
                    if not run.state or not run.state.is_completed():
                        failures[slug] = (
                            f"its worker run {run.name} ended {run.state.name if run.state else '?'}: "
                            + ((run.state.message or "") if run.state else "")
                        )
                        log.error("%s: %s", slug, failures[slug])
                        continue
                    applying = time.monotonic()
                    got = outcome.fetch(here, box, slug, Path(tmp))
                    outcome.apply(here, got, remote)
                    ran[slug] = list(got.meta.get("ran", []))
                    summary[slug] = _summary(run, got.meta, time.monotonic() - applying)
                    log.info(
                        "%s: done by %s in %.0f s (ran %s)",
                        slug,
                        got.meta.get("worker") or got.meta.get("host"),
                        got.meta.get("seconds", 0),
                        ", ".join(ran[slug]) or "nothing",
                    )
            outcome.discard(here, box)
            # one `dvc status` for every paper applied: their stages must be up to date here now (a worker that
            # ran other code or params than this checkout holds shows here, named)
            left = outcome.status(here, [n for slug in summary for n in _names(steps, slug)])
            for slug in summary:
                stale_here = {n: v for n, v in left.items() if n.endswith(f"@{slug}")}
                if stale_here:
                    failures[slug] = f"not up to date after its worker's results were applied: {stale_here}"
                    log.error("%s: %s", slug, failures[slug])
            _write_summary(here, summary, time.monotonic() - began, failures)
        reports_ran = any(n.startswith("report@") for names in ran.values() for n in names)
        for step in (s for s in steps if s.name == "index"):
            if step.stale or reports_ran:
                from dataclasses import replace

                dvc_stage.with_options(name="index")(replace(step, stale=True), str(here), force)
                ran["index"] = ["index"]
    if failures:
        return Failed(message="; ".join(f"{slug}: {why}" for slug, why in failures.items()))
    return ran
