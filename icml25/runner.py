"""Running one stage of one paper: what ``python -m icml25 stage <slug> <stage>`` (DVC's command) does, and the
same runner for a whole paper in one process (the tests' smoke pipelines).

1. Load params.yaml and check the paper's whole params tree before any work (a bad value fails here with its
   key path).
2. Build the :class:`~icml25.stage.StageContext`: the stage's own params section (the report sees all five) as
   frozen dataclasses, the paper's paths, the seed, the profile, a logger, and ``out``: a fresh temporary
   folder next to the target.
3. Run ``stages/<slug>/<stage>.py``'s ``run(ctx)`` (the report: :func:`icml25.reporting.write_report`); on
   success move what it wrote into place with renames, so that a failed or stopped stage leaves no half-written
   file behind and the previous artifact in place. Under ``dvc repro`` DVC has already removed the stage's
   cached outputs before the command starts; a stage that fails (a bad parameter included) or is stopped by a
   signal puts them back from DVC's cache as dvc.lock records them (:func:`restore_previous`), so that the
   previous artifact survives there too (a ``kill -9`` leaves that to ``dvc checkout``). The one exception is
   validate: its validation.json is the record that the data passed Great Expectations, so a failed validate
   leaves none and train cannot run on data that failed. Then record the run under .dvc/tmp (:func:`record_run`: its wall
   time, when it finished, the git commit checked out, and for the report the md5 of the claims.json it wrote;
   wall times never enter README.md or claims.json). ``icml25 verify`` reads the report's record to know that
   the paper ran since its claims.json was committed (:mod:`icml25.verify`).

``python -m icml25 code <slug>`` writes the per-stage code fingerprints of :mod:`icml25.codedeps`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .errors import UserError
from .params import build_section, check_paper, implemented, load_params
from .paths import STAGE_DIRS, PaperPaths
from .registry import STAGES, Paper, load_paper, load_stage
from .scratch import cache_dir
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
    """Run one stage (the module docstring); on any failure first put back what DVC removed."""
    if stage not in STAGES:
        raise UserError(f"unknown stage {stage!r}; stages are {', '.join(STAGES)}")
    try:
        _run_stage(root, slug, stage)
    except BaseException:
        if (
            stage != "validate"
        ):  # validation.json exists only while the data passes: a failed gate leaves none
            restore_previous(root, slug, stage)
        raise


def restore_previous(root: Path, slug: str, stage: str) -> list[str]:
    """Put back the outputs of ``<stage>@<slug>`` that dvc.lock records, are missing, and whose objects are all
    in the DVC cache: DVC removes a stage's cached outputs before it runs the stage's command, so without this
    a failed stage (a bad value in params.yaml) cost the last good artifact. Files are copied from the cache
    (never linked: the cache's files are read-only) into a temporary sibling and renamed into place. Returns
    the paths restored; never raises (a missing object or an unreadable lock file leaves that output to
    ``dvc checkout`` / ``dvc pull``, and says so in the log). The restored outputs are the ones dvc.lock
    records, so ``dvc status`` stays truthful: the stage is still stale, its outputs are the previous ones."""
    log = logger(slug, stage)
    try:
        outs = _locked_outs(root, f"{stage}@{slug}")
        if not outs:
            return []
        cache = cache_dir(root) / "files" / "md5"  # DVC 3's layout of md5 objects
    except Exception as exc:  # noqa: BLE001 - restoring is best effort; the stage's own error is what matters
        log.warning("could not read dvc.lock or the DVC cache to restore the previous outputs: %s", exc)
        return []
    restored = []
    for rel, oid in outs:
        dest = root / rel
        if dest.exists():
            continue
        try:
            files = _cached_files(cache, oid)
        except (OSError, ValueError) as exc:
            log.warning("%s: not restored (%s); `dvc checkout` or `dvc pull` brings it back", rel, exc)
            continue
        tmp = dest.with_name(f".{dest.name}.restore-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            for relpath, src in files:
                target = tmp / relpath if relpath else tmp
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, target)
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp.rename(dest)
        except OSError as exc:
            log.warning("%s: not restored (%s); `dvc checkout` brings it back", rel, exc)
            continue
        finally:
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            elif tmp.exists():
                tmp.unlink()
        restored.append(rel)
        log.info(
            "the stage failed: restored the previous %s from the DVC cache (as dvc.lock records it)", rel
        )
    return restored


def _locked_outs(root: Path, name: str) -> list[tuple[str, str]]:
    """(path, md5) of each cached output of stage ``name`` in dvc.lock ([] without a lock file or an entry)."""
    import yaml

    lock = root / "dvc.lock"
    if not lock.exists():
        return []
    entry = (yaml.safe_load(lock.read_text()) or {}).get("stages", {}).get(name) or {}
    return [(o["path"], o["md5"]) for o in entry.get("outs", []) if "md5" in o]


def _cached_files(cache: Path, oid: str) -> list[tuple[str, Path]]:
    """(relative path, cache file) of every file of object ``oid``: one ("", file) for a file, a directory's
    entries from its ``.dir`` manifest. Raises if an object is missing."""

    def path(md5: str) -> Path:
        found = cache / md5[:2] / md5[2:]
        if not found.is_file():
            raise FileNotFoundError(f"object {md5} is not in the DVC cache")
        return found

    if not oid.endswith(".dir"):
        return [("", path(oid))]
    manifest = json.loads(path(oid).read_text())
    return [(entry["relpath"], path(entry["md5"])) for entry in manifest]


def _run_stage(root: Path, slug: str, stage: str) -> None:
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
    cpu = _cpu_seconds()
    try:
        with heartbeat(ctx.log, start):
            if stage == "report":
                from .reporting import write_report

                write_report(ctx, module)
            else:
                module.run(ctx)
        _install(tmp, target, whole=stage in STAGE_DIRS)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = time.perf_counter() - start
    record_run(paths, stage, wall, cpu=_cpu_seconds() - cpu, startup=_startup_seconds(start))
    ctx.log.info("done in %.1f s", wall)


#: A stage that logs nothing for this long gets a "still running" line (the house rule: at least every 30 s).
HEARTBEAT_S = 30.0


@contextlib.contextmanager
def heartbeat(log: logging.Logger, start: float, every: float | None = None) -> Iterator[None]:
    """While the block runs, log "still running (N min N s)" whenever ``log`` has been silent for ``every``
    seconds (:data:`HEARTBEAT_S`), so that a long stage never looks hung; a stage's own progress lines reset
    the clock."""
    every = HEARTBEAT_S if every is None else every
    last = [time.monotonic()]

    class _Seen(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            last[0] = time.monotonic()
            return True

    seen = _Seen()
    log.addFilter(seen)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(max(0.05, every - (time.monotonic() - last[0]))):
            if time.monotonic() - last[0] >= every:
                elapsed = int(time.perf_counter() - start)
                log.info("still running (%d min %02d s)", elapsed // 60, elapsed % 60)

    thread = threading.Thread(target=beat, name="icml25-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        log.removeFilter(seen)


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (a stage's forked workers), user + system."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _startup_seconds(start: float) -> float | None:
    """Seconds from the start of the process that asked for this stage (``python -m icml25 stage``; through the
    warm starter, its client) to the start of the stage's work: interpreter start-up and imports."""
    from .warm import started_at

    began = started_at()
    if began is None:
        return None
    return max(0.0, time.time() - (time.perf_counter() - start) - began)


def checked_out_commit(root: Path) -> str | None:
    """The commit checked out in ``root`` when ``root`` is the top of a git work tree (None otherwise: a scratch
    copy inside another checkout does not borrow its HEAD)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "--verify", "--quiet", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != root.resolve():
        return None
    return lines[1]


def record_run(
    paths: PaperPaths, stage: str, wall: float, cpu: float | None = None, startup: float | None = None
) -> Path:
    """``.dvc/tmp/icml25-timing/<slug>/<stage>.json``, written when a stage's outputs are in place: its wall time
    (timing.json's source), when it finished (UTC), the commit checked out and, for the report, the md5 of the
    claims.json it installed. ``icml25 verify`` reads the report's record: the paper ran since its claims.json
    was committed, and the file in the working tree is the bytes that run wrote (:func:`icml25.verify.rerun`)."""
    doc: dict[str, Any] = {
        "stage": stage,
        "wall_s": round(wall, 3),
        "cpu_s": None if cpu is None else round(cpu, 3),
        "startup_s": None if startup is None else round(startup, 3),
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": checked_out_commit(paths.root),
    }
    if stage == "report" and paths.claims.exists():
        doc["claims_md5"] = hashlib.md5(paths.claims.read_bytes()).hexdigest()
    paths.stage_timings.mkdir(parents=True, exist_ok=True)
    path = paths.stage_timings / f"{stage}.json"
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)
    return path


def run_pipeline(root: Path, slug: str, stages: tuple[str, ...] = STAGES) -> None:
    """Every stage of one paper in this process, in order: the same runner and outputs as ``dvc repro``
    (without DVC's bookkeeping), so torch, Lightning and Great Expectations are imported once."""
    for stage in stages:
        run_stage(root, slug, stage)


def write_fingerprints(root: Path, slug: str) -> list[Path]:
    """``data/<slug>/code/<stage>.json`` for every stage (what ``code@<slug>`` writes; see icml25.codedeps)."""
    from . import io
    from .codedeps import ImportGraph, UntrackableImport, fingerprint

    start = time.perf_counter()
    graph = ImportGraph(root)
    paths = PaperPaths(root, slug)
    folder = paths.code
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
    record_run(paths, "code", time.perf_counter() - start, startup=_startup_seconds(start))
    return written
