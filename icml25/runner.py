"""Running one stage of one paper: what ``python -m icml25 stage <slug> <stage>`` (DVC's command) does.

1. Load params.yaml and check the paper's whole params tree before any work (a bad value fails here with its
   key path).
2. Build the :class:`StageContext`: only the params sections the stage declares (frozen dataclasses), the
   paper's paths, the seed, the profile, a logger, and ``out``: a fresh temporary folder next to the target.
3. Run the stage; on success move what it wrote into place with renames (a killed or failed stage leaves the
   previous artifact untouched and no half-written file behind), and record the stage's wall time under
   .dvc/tmp (wall times never enter README.md or claims.json, see :mod:`icml25.reporting`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .errors import UserError
from .params import build_section, check_paper, load_params
from .paths import STAGE_DIRS, PaperPaths
from .registry import STAGES, Paper, load_paper


@dataclass(frozen=True)
class StageContext:
    slug: str
    stage: str
    params: SimpleNamespace  # one frozen dataclass per declared section: ctx.params.train.steps
    paths: PaperPaths
    seed: int
    profile: str
    log: logging.Logger
    out: Path  # write everything here; the runner moves it into place on success


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
    from .params import implemented

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
    spec = paper.stages[stage]
    paths = PaperPaths(root, slug)
    target = _target(paths, stage)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    tmp.chmod(0o755)
    ctx = StageContext(
        slug=slug,
        stage=stage,
        params=context_params(paper, params, spec.sections),
        paths=paths,
        seed=int(params["papers"][slug]["seed"]),
        profile=str(params["profile"]),
        log=logger(slug, stage),
        out=tmp,
    )
    start = time.perf_counter()
    try:
        spec.fn(ctx)
        _install(tmp, target, whole=stage in STAGE_DIRS)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = time.perf_counter() - start
    paths.stage_timings.mkdir(parents=True, exist_ok=True)
    (paths.stage_timings / f"{stage}.json").write_text(json.dumps({"stage": stage, "wall_s": round(wall, 3)}))
    ctx.log.info("done in %.1f s", wall)
