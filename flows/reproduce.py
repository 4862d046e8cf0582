"""The Prefect flows: ``reproduce_paper`` (one paper) and ``reproduce_all`` (every implemented paper + index).

A paper's flow is built from DVC's own stage graph (:func:`flows.dvcgraph.plan`), one task per DVC stage named
``<stage>@<slug>``. The flow asks ``dvc status`` once; stale stages and everything downstream of them run
through ``dvc repro --single-item``; up-to-date stages finish at once as Completed(name="Skipped"). When the
code changed, ``code@<slug>`` (the per-stage code fingerprints) runs first and the flow asks again, so only the
stages whose code or data changed run. ``force``
re-runs every stage without the run cache (the nightly re-verification).

DVC owns caching, so tasks use no Prefect cache. DVC does not stop two runs in one checkout from interleaving:
each flow holds the checkout's run lock (:mod:`icml25.lock`, an flock that dies with its process; a flow started
by ``icml25 run`` inherits the CLI's) while it plans and runs, and logs who holds it while it waits.
The paper's report is published as a Prefect markdown artifact.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed

from flows.dvcgraph import Step, plan, repro
from icml25.lock import checkout_lock
from icml25.params import implemented, load_params
from icml25.paths import PaperPaths
from icml25.registry import entry


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


def _root(root: str | None) -> Path:
    return Path(root).resolve() if root else Path.cwd().resolve()


def _publish(paths: PaperPaths) -> None:
    if paths.readme.exists():
        key = f"{paths.slug.replace('_', '-')}-report"
        create_markdown_artifact(
            markdown=paths.readme.read_text(), key=key, description=f"reports/{paths.slug}/README.md"
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
def reproduce_paper(slug: str, force: bool = False, root: str | None = None) -> list[str]:
    """Reproduce one paper through its DVC stages; returns the stages that ran."""
    entry(slug)
    here = _root(root)
    if slug not in implemented(load_params(here)):
        raise ValueError(f"paper {slug!r} is not implemented (no papers.{slug} in params.yaml)")
    ran: list[str] = []
    mine = lambda n: n.endswith(f"@{slug}")  # noqa: E731
    with _locked(here):
        steps = _first_plan(here, mine, force)
        code = [s for s in steps if s.name == f"code@{slug}"]
        for step in code:  # the code fingerprints first: they decide which stages an edit touched
            dvc_stage.with_options(name=step.name)(step, str(here), force)
            if step.stale:
                ran.append(step.name)
        if not force and any(s.stale for s in code):
            # ask again: only the stages whose fingerprint (or data) changed are stale now
            steps = plan(here, mine, force)
        for step in steps:
            if step.name.startswith("code@"):
                continue
            result = dvc_stage.with_options(name=step.name)(step, str(here), force)
            if step.stale:
                ran.append(result)
    _publish(PaperPaths(here, slug))
    return ran


@flow(name="reproduce-all", log_prints=True)
def reproduce_all(force: bool = False, root: str | None = None) -> dict[str, list[str]]:
    """Every implemented paper (params.yaml order), then the index reports/README.md. One `dvc status` plans
    them all; the index runs when it was stale or a report ran (its only inputs besides its code)."""
    here = _root(root)
    with _locked(here):
        steps = plan(here, lambda n: True, force)
        token = _PLANNED.set(_Planned(here, force, tuple(steps)))
        try:
            ran = {
                slug: reproduce_paper(slug, force=force, root=str(here))
                for slug in implemented(load_params(here))
            }
        finally:
            _PLANNED.reset(token)
        reports_ran = any(name.startswith("report@") for names in ran.values() for name in names)
        for step in (s for s in steps if s.name == "index"):
            step = replace(step, stale=step.stale or reports_ran)
            dvc_stage.with_options(name=step.name)(step, str(here), force)
            if step.stale:
                ran["index"] = ["index"]
    return ran
