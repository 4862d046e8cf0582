"""The Prefect flows: ``reproduce_paper`` (one paper) and ``reproduce_all`` (every implemented paper + index).

A paper's flow is built from DVC's own stage graph (:func:`flows.dvcgraph.plan`), one task per DVC stage named
``<stage>@<slug>``. The flow asks ``dvc status`` once; up-to-date stages finish at once as
Completed(name="Skipped"). When any stage is stale, one ``dvc repro report@<slug>`` runs the paper
(:class:`flows.dvcgraph.PaperRun`: one DVC process per paper, not one per stage), and each stage DVC turns to is
a task of its own with that stage's output: ``code@<slug>`` (the per-stage code fingerprints) first, then each
stage whose fingerprint, params or data changed; a stage DVC finds unchanged is Skipped. ``force`` re-runs
every stage without the run cache. When a stage re-ran and wrote the same bytes, DVC skips the report as
unchanged, and its ``timing.json`` would keep the wall times of an older run: the report then runs forced.
Stages run through the warm starter (:mod:`icml25.warm`) and DVC through :mod:`icml25.dvcfast`.

The nightly re-verification (the deployments' schedules) runs with ``force=true, verify=true``: before the run
it reads each paper's last committed ``claims.json`` (git ``HEAD``), after it compares every claim with it
(:mod:`icml25.verify`: verdict, and value within the claim's tolerance), publishes the comparison as a markdown
artifact (``claims-verification``), pushes the new artifacts when a DVC remote is configured (``push``: None =
whenever :func:`icml25.store.configured_remote` finds one), and ends **Failed** when a claim that held now fails,
the message naming the paper, the claim and both values.

DVC owns caching, so tasks use no Prefect cache. DVC does not stop two runs in one checkout from interleaving:
each flow holds the checkout's run lock (:mod:`icml25.lock`, an flock that dies with its process; a flow started
by ``icml25 run`` inherits the CLI's) while it plans and runs, and logs who holds it while it waits.
The paper's report is published as a Prefect markdown artifact. A deployment's flow run works in its worker's
checkout (the pull step of :mod:`flows.checkout`), and refuses to run in any other.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed

from flows.checkout import check_checkout
from flows.dvcgraph import PaperRun, Step, dvc_command, plan, repro
from icml25.lock import checkout_lock
from icml25.params import implemented, load_params
from icml25.paths import PaperPaths
from icml25.progress import Progress
from icml25.registry import entry
from icml25.verify import REGRESSED, PaperVerification, committed_claims, markdown, verify_paper
from icml25.warm import warm_starter


@contextmanager
def _locked(here: Path) -> Iterator[None]:
    """The checkout's run lock (re-entrant: reproduce_all holds it while each reproduce_paper asks again)."""
    with checkout_lock(here, say=lambda msg: get_run_logger().warning(msg)):
        yield


@task(cache_policy=NO_CACHE, task_run_name="{step.name}", persist_result=False)
def dvc_stage(step: Step, root: str, force: bool):
    """One DVC stage. Skipped (Completed, name "Skipped") when up to date, else ``dvc repro -s``."""
    log = get_run_logger()
    if not step.stale:
        return Completed(name="Skipped", message=f"{step.name} is up to date")
    if step.reasons:
        log.info("%s is stale: %s", step.name, "; ".join(step.reasons))
    repro(Path(root), step.name, force, log.info)
    return step.name


@task(cache_policy=NO_CACHE, task_run_name="{name}", persist_result=False)
def dvc_follow(name: str, run: PaperRun):
    """One stage of a paper's ``dvc repro`` (:class:`flows.dvcgraph.PaperRun`): its output; Skipped
    (Completed, name "Skipped") when DVC found it unchanged. The report (the run's target, its last stage) that
    DVC found unchanged while another stage re-ran (and wrote the same bytes) runs again, forced: its
    timing.json must be this run's."""
    log = get_run_logger()
    if run.follow(name, log.info):
        return name
    if name == run.target and any(not n.startswith("code@") for n in run.ran):
        log.info("%s is unchanged but %s re-ran: running it again for this run's timings", name, run.ran[-1])
        repro(run.root, name, True, log.info)  # DVC's run of the paper has ended (follow read it to the end)
        run.ran.append(name)
        return name
    return Completed(name="Skipped", message=f"{name} did not change")


def _root(root: str | None) -> Path:
    """The checkout to work in: ``root``, else the current directory, which must then be the checkout that the
    flow run's worker names (:func:`flows.checkout.check_checkout`: a deployment run elsewhere refuses)."""
    if root:
        return Path(root).resolve()
    here = Path.cwd().resolve()
    check_checkout(here)
    return here


def _publish(paths: PaperPaths) -> None:
    if paths.readme.exists():
        key = f"{paths.slug.replace('_', '-')}-report"
        create_markdown_artifact(
            markdown=paths.readme.read_text(), key=key, description=f"reports/{paths.slug}/README.md"
        )


@task(cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=10)
def dvc_push(root: str, remote: str, targets: list[str]) -> None:
    """``dvc push`` of the stages' outputs (and their run cache) to ``remote``: a network step, retried."""
    log = get_run_logger()
    log.info("pushing %s to the DVC remote %r", ", ".join(targets) if targets else "every output", remote)
    dvc_command(Path(root), ["push", "--run-cache", "-r", remote, *targets], log.info)


def _baselines(here: Path, slugs: list[str]) -> dict[str, dict | None]:
    """Each paper's claims.json as last committed (git HEAD), read before the run rewrites the file."""
    return {slug: committed_claims(here, slug) for slug in slugs}


def _reverify(here: Path, baselines: dict[str, dict | None]):
    """Compare every claim with its committed record and publish the comparison; a Failed state naming every
    regression, else None."""
    log = get_run_logger()
    results = []
    for slug, baseline in baselines.items():
        if baseline is None:
            results.append(
                PaperVerification(slug, missing=f"no reports/{slug}/claims.json committed at HEAD")
            )
        else:
            results.append(verify_paper(here, slug, baseline=baseline))
    create_markdown_artifact(
        markdown=markdown(results, "Claims re-verified against the last commit"),
        key="claims-verification",
        description="every claim of this run against the committed claims.json",
    )
    for r in results:
        for c in r.changes:
            if c.status != "agrees":
                log.warning(c.describe())
        if r.missing:
            log.warning("%s: %s", r.paper, r.missing)
    regressions = [c for r in results for c in r.changes if c.status == REGRESSED]
    if regressions:
        return Failed(
            message=f"{len(regressions)} claim(s) that held now fail: "
            + "; ".join(c.describe() for c in regressions)
        )
    log.info("no claim that held fails now (%d papers compared)", len(results))
    return None


def _push(here: Path, push: bool | None, verify: bool, targets: list[str]) -> None:
    """Push the run's outputs: ``push`` True (a remote must be configured), None (the nightly run, ``verify``:
    whenever a remote is configured) or False."""
    from icml25.store import configured_remote

    if push is False or (push is None and not verify):
        return
    remote = configured_remote(here)
    if remote:
        dvc_push(str(here), remote, targets)
    elif push:
        raise RuntimeError(
            f"push=true but {here} has no configured DVC remote (see README, Sharing artifacts through S3)"
        )


@dataclass(frozen=True)
class _Planned:
    """The plan of a whole checkout, made once by reproduce_all (which holds the checkout's lock meanwhile)."""

    root: Path
    force: bool
    steps: tuple[Step, ...]


_PLANNED: ContextVar[_Planned | None] = ContextVar("icml25_planned", default=None)


def _first_plan(here: Path, names, force: bool) -> list[Step]:
    """The paper's stages from reproduce_all's plan when there is one (one `dvc status` for every paper: papers
    do not depend on each other), else from a plan of its own."""
    held = _PLANNED.get()
    if held is not None and held.root == here and held.force == force:
        return [s for s in held.steps if names(s.name)]
    return plan(here, names, force)


@flow(name="reproduce-paper", flow_run_name="{slug}", log_prints=True)
def reproduce_paper(
    slug: str, force: bool = False, root: str | None = None, verify: bool = False, push: bool | None = None
):
    """Reproduce one paper through its DVC stages; returns the stages that ran. ``verify``: compare its claims
    with the committed ones afterwards and fail on a regression; ``push``: push its outputs to the DVC remote
    (None: in a ``verify`` run, when one is configured). See the module."""
    entry(slug)
    here = _root(root)
    if slug not in implemented(load_params(here)):
        raise ValueError(f"paper {slug!r} is not implemented (no papers.{slug} in params.yaml)")
    ran: list[str] = []
    mine = lambda n: n.endswith(f"@{slug}")  # noqa: E731
    with _locked(here), warm_starter(here):
        baselines = _baselines(here, [slug]) if verify else {}
        steps = _first_plan(here, mine, force)
        for step in steps:
            if not step.stale:
                dvc_stage.with_options(name=step.name)(step, str(here), force)
        if any(s.stale for s in steps):
            up_to_date = {s.name for s in steps if not s.stale}  # shown as Skipped already
            with PaperRun(here, f"report@{slug}", force) as run:
                for name in run.items(get_run_logger().info):
                    if name in up_to_date:
                        run.follow(name, get_run_logger().info)
                    else:
                        dvc_follow.with_options(name=name)(name, run)
            ran += run.ran
        _publish(PaperPaths(here, slug))
        _push(here, push, verify, [s.name for s in steps])
        if verify:
            failed = _reverify(here, baselines)
            if failed is not None:
                return failed
    return ran


@flow(name="reproduce-all", log_prints=True)
def reproduce_all(
    force: bool = False, root: str | None = None, verify: bool = False, push: bool | None = None
):
    """Every implemented paper (params.yaml order), then the index reports/README.md. One `dvc status` plans
    them all; the index runs when it was stale or a report ran (its only inputs besides its code).
    ``verify``/``push``: the nightly re-verification of every paper's claims (see the module)."""
    here = _root(root)
    log = get_run_logger()
    with _locked(here), warm_starter(here):
        slugs = implemented(load_params(here))
        baselines = _baselines(here, slugs) if verify else {}
        steps = plan(here, lambda n: True, force)
        stale = {slug: any(s.stale for s in steps if s.name.endswith(f"@{slug}")) for slug in slugs}
        progress = Progress(here, slugs, stale)
        token = _PLANNED.set(_Planned(here, force, tuple(steps)))
        ran = {}
        try:
            for slug in slugs:
                start = time.perf_counter()
                ran[slug] = reproduce_paper(slug, force=force, root=str(here))
                log.info(progress.finish(slug, ran[slug], time.perf_counter() - start))
        finally:
            _PLANNED.reset(token)
        reports_ran = any(name.startswith("report@") for names in ran.values() for name in names)
        for step in (s for s in steps if s.name == "index"):
            step = replace(step, stale=step.stale or reports_ran)
            dvc_stage.with_options(name=step.name)(step, str(here), force)
            if step.stale:
                ran["index"] = ["index"]
        log.info("the run, paper by paper:\n%s", progress.table())
        _push(here, push, verify, [])
        if verify:
            failed = _reverify(here, baselines)
            if failed is not None:
                return failed
    return ran
