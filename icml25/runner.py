"""Running one stage of one paper: what ``python -m icml25 stage <slug> <stage>`` (DVC's command) does, and the
same runner for a whole paper in one process (the tests' smoke pipelines).

1. Load params.yaml and check the paper's whole params tree before any work (a bad value fails here with its
   key path).
2. Build the :class:`~icml25.stage.StageContext`: the stage's own params section (the report sees all five) as
   frozen dataclasses, the paper's paths, the seed, the profile, a logger, and ``out``: a fresh temporary
   folder next to the target.
3. Run ``stages/<slug>/<stage>.py``'s ``run(ctx)`` (the report: :func:`icml25.reporting.write_report`); on
   success move what it wrote into place with renames (a killed or failed stage leaves the previous artifact
   untouched and no half-written file behind), and record the stage's wall time under .dvc/tmp (wall times
   never enter README.md or claims.json).

``python -m icml25 code <slug>`` writes the per-stage code fingerprints of :mod:`icml25.codedeps`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .errors import UserError
from .params import build_section, check_paper, implemented, load_params
from .paths import STAGE_DIRS, PaperPaths
from .registry import STAGES, Paper, load_paper, load_stage
from .stage import StageContext


def _target(paths: PaperPaths, stage: str) -> Path:
    if stage in STAGE_DIRS:
        return paths.stage_dir(stage)
    if stage == "validate":
        return paths.validation.parent
    return paths.report


def _install(tmp: Path, target: Path, whole: bool) -> None:
    """Move ``tmp`` into place: as the whole folder (main/), or entry by entry (validation.json, reports)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if whole:
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
        return
    target.mkdir(parents=True, exist_ok=True)
    for entry in sorted(tmp.iterdir()):
        dest = target / entry.name
        if entry.is_dir() and dest.exists():
            old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
            dest.rename(old)
            entry.rename(dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(entry, dest)
    tmp.rmdir()


def logger(slug: str, stage: str) -> logging.Logger:
    log = logging.getLogger(f"icml25.{slug}.{stage}")
    if not logging.getLogger().handlers and not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(f"%(asctime)s {stage}@{slug} %(message)s", "%H:%M:%S"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    return log


def sections_for(stage: str) -> tuple[str, ...]:
    """The params sections a stage sees: its own; the report all five (it shows them)."""
    return STAGES if stage == "report" else (stage,)


def context_params(paper: Paper, params: dict[str, Any], sections: tuple[str, ...]) -> SimpleNamespace:
    section_values = params["papers"][paper.slug]
    return SimpleNamespace(
        **{
            name: build_section(paper.schema[name], section_values.get(name))
            if name in paper.schema
            else SimpleNamespace()
            for name in sections
        }
    )


def check_all(root: Path) -> dict[str, Any]:
    """Load params.yaml and check every implemented paper's section (what `icml25 run` does first)."""
    params = load_params(root)
    for slug in implemented(params):
        check_paper(params, slug, load_paper(slug).schema)
    return params


def run_stage(root: Path, slug: str, stage: str) -> None:
    if stage not in STAGES:
        raise UserError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    params = load_params(root)
    paper = load_paper(slug)
    check_paper(params, slug, paper.schema)
    module = load_stage(slug, stage)
    paths = PaperPaths(root, slug)
    target = _target(paths, stage)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    tmp.chmod(0o755)
    ctx = StageContext(
        slug=slug,
        stage=stage,
        params=context_params(paper, params, sections_for(stage)),
        paths=paths,
        seed=int(params["papers"][slug]["seed"]),
        profile=str(params["profile"]),
        log=logger(slug, stage),
        out=tmp,
    )
    start = time.perf_counter()
    try:
        if stage == "report":
            from .reporting import write_report

            write_report(ctx, module)
        else:
            module.run(ctx)
        _install(tmp, target, whole=stage in STAGE_DIRS)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = time.perf_counter() - start
    paths.stage_timings.mkdir(parents=True, exist_ok=True)
    (paths.stage_timings / f"{stage}.json").write_text(json.dumps({"stage": stage, "wall_s": round(wall, 3)}))
    ctx.log.info("done in %.1f s", wall)


def run_pipeline(root: Path, slug: str, stages: tuple[str, ...] = STAGES) -> None:
    """Every stage of one paper in this process, in order: the same runner and outputs as ``dvc repro``
    (without DVC's bookkeeping), so torch, Lightning and Great Expectations are imported once."""
    for stage in stages:
        run_stage(root, slug, stage)


def write_fingerprints(root: Path, slug: str) -> list[Path]:
    """``data/<slug>/code/<stage>.json`` for every stage (what ``code@<slug>`` writes; see icml25.codedeps)."""
    from . import io
    from .codedeps import ImportGraph, UntrackableImport, fingerprint

    graph = ImportGraph(root)
    folder = PaperPaths(root, slug).code
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stage in STAGES:
        try:
            doc = fingerprint(root, slug, stage, graph)
        except (UntrackableImport, FileNotFoundError) as exc:
            raise UserError(str(exc)) from None
        path = folder / f"{stage}.json"
        io.write_json(path, doc)
        written.append(path)
    return written
