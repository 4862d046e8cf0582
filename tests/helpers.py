"""What the tests share besides fixtures: DVC and icml25 subprocesses, copies of reproduced repos, params for
a stage run in a temporary folder, and the check of a paper's report."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_CHECKER = ROOT.parent / "shared" / "tools" / "check_claims.py"


class lazy:  # noqa: N801 - used like a module: `glu = lazy("models.model_independence.glu")`
    """A module imported on first attribute access, so that collecting a test file imports neither torch nor
    Lightning: ``glu = lazy("models.model_independence.glu")`` at the top, ``glu.forward(...)`` in a test.

    Not importlib's LazyLoader: it leaves placeholder modules in ``sys.modules``, and ``inspect.getmodule`` (which
    torch calls while it is imported) reads ``__file__`` of every module there, starting the import of each
    placeholder in the middle of torch's own; a paper module that imports torch then fails half-initialised. This
    proxy registers nothing; the attributes pytest probes while collecting (``__test__``, ``__wrapped__``,
    ``_mock_name``, ...) are answered without importing."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        if attr.startswith(("__", "_mock", "_pytest")):
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)


def dvc(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the venv's DVC in ``cwd`` (this interpreter's bin first on PATH, as the stages need)."""
    from icml25.scratch import dvc_env

    out = subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=cwd, env=dvc_env(), capture_output=True, text=True
    )
    if check and out.returncode != 0:
        raise AssertionError(f"dvc {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return out


def ran_stages(dvc_output: str) -> set[str]:
    """The stages a `dvc repro` ran, from its output."""
    return {line.split("'")[1] for line in dvc_output.splitlines() if line.startswith("Running stage")}


def icml25(cwd: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """The installed `icml25` command (flows.cli) in ``cwd``."""
    from icml25.scratch import dvc_env

    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=cwd,
        env=dvc_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def clone_repo(src: Path, dest: Path) -> Path:
    """A full copy (git, DVC cache, outputs) of a reproduced scratch repo: up to date without re-running."""
    shutil.copytree(src, dest, symlinks=True)
    return dest


def paper_params(root: Path, slug: str, **prepare) -> dict:
    """params.yaml reduced to one paper, with some of its prepare keys overridden (for run_stage in a tmp dir)."""
    from icml25.params import load_yaml

    params = load_yaml(root / "params.yaml")
    params["papers"] = {slug: params["papers"][slug]}
    params["papers"][slug]["prepare"].update(prepare)
    return params


def declared_claims(slug: str) -> list[str]:
    from icml25.claims import declared
    from icml25.registry import load_stage

    return [c.id for c in declared(load_stage(slug, "report"))]


def claim_verdict(root: Path, slug: str, claim_id: str, folder: Path, **params) -> dict:
    """The claims.json record of the declared claim ``claim_id`` computed from an evaluated folder ``folder``
    with the params of ``root``'s params.yaml (``params`` overrides report-visible sections, e.g.
    ``evaluate={"sets": "exact"}``): what a stub test asserts fails. The claim runs exactly as the report stage
    runs it, through the paper's own report module."""
    from icml25.claims import declared
    from icml25.params import load_params
    from icml25.registry import load_paper, load_stage
    from icml25.reporting import Evaluated
    from icml25.runner import context_params, sections_for

    values = load_params(root)
    for section, overrides in params.items():
        values["papers"][slug].setdefault(section, {}).update(overrides)
    found = {c.id: c for c in declared(load_stage(slug, "report"))}
    if claim_id not in found:
        raise KeyError(f"{slug} declares no claim {claim_id!r} (it declares {', '.join(found)})")
    c = found[claim_id]
    ctx_params = context_params(load_paper(slug), values, sections_for("report"))
    ev = Evaluated(
        Path(folder), ctx_params, int(values["papers"][slug]["seed"]), str(values["profile"]), slug
    )
    return c.verdict(*c.evaluate(ev))


def check_report(work: Path, slug: str, profile: str) -> str:
    """reports/<slug>/ of ``work`` keeps the claims contract (checked here, and by the workplace's shared
    checker when it is present), holds exactly the paper's declared claims and every figure its README shows;
    returns the README."""
    from icml25.claims import contract_problems

    report = work / "reports" / slug
    doc = json.loads((report / "claims.json").read_text())
    assert doc["paper"] == slug and doc["profile"] == profile
    ids = declared_claims(slug)
    assert list(doc["claims"]) == ids
    assert contract_problems(doc, ids) == []
    if SHARED_CHECKER.exists():
        res = subprocess.run(
            [sys.executable, str(SHARED_CHECKER), slug, *ids], cwd=work, capture_output=True, text=True
        )
        assert res.returncode == 0, res.stdout
    readme = (report / "README.md").read_text()
    assert "## Claims" in readme and "## Parameters" in readme
    for line in readme.splitlines():
        if line.startswith("![") and "](figures/" in line:
            name = line.split("](figures/")[1].rstrip(")")
            assert (report / "figures" / name).stat().st_size > 1000, name
    json.loads((report / "metrics.json").read_text())
    return readme


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    from icml25.procs import proc_stat

    st = proc_stat(pid)
    return st is not None and st.state != "Z"


def cmdline(pid: int) -> str:
    """The command line of ``pid`` (arguments joined by spaces), "" if it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` in the process tree (from /proc), whatever session it started."""
    from icml25.procs import proc_pids, proc_stat

    children: dict[int, list[int]] = {}
    for p in proc_pids():
        st = proc_stat(p)
        if st is not None:
            children.setdefault(st.ppid, []).append(p)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return [p for p in found if alive(p)]


def wait_gone(pids, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds until none of ``pids`` is alive."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def planned_slug(root: Path) -> str | None:
    """The first catalogue paper that params.yaml does not implement yet (what `icml25 new` may scaffold); None
    once every paper is implemented (then :func:`with_planned` makes a copy that has one)."""
    from icml25.params import implemented, load_params
    from icml25.registry import CATALOGUE

    done = set(implemented(load_params(root)))
    return next((e.slug for e in CATALOGUE if e.slug not in done), None)


def with_planned(root: Path, dest: Path) -> tuple[Path, str]:
    """A scratch copy of ``root`` (quick profile) in which one catalogue paper is planned, and its slug: the
    first planned one, or, once all are implemented, the last catalogue paper with its params, profiles, derived
    files and its own folders (stages, models, tests, benchmark, input) removed, as before `icml25 new`."""
    import shutil

    from icml25.params import implemented, load_params
    from icml25.registry import CATALOGUE
    from icml25.scratch import make_scratch

    slug = planned_slug(root)
    if slug is not None:
        return make_scratch(root, "quick", dest=dest), slug
    slug = CATALOGUE[-1].slug
    keep = [s for s in implemented(load_params(root)) if s != slug]
    work = make_scratch(root, "quick", dest=dest, papers=keep)
    for rel in (f"stages/{slug}", f"models/{slug}", f"tests/papers/{slug}", f"data/{slug}"):
        shutil.rmtree(work / rel, ignore_errors=True)
    (work / "benchmarks" / f"{slug}.py").unlink(missing_ok=True)
    return work, slug


def prepared_main(work: Path, slug: str) -> Path:
    """``data/<slug>/prepared/main`` of a scratch root (the ``work`` fixture of tests/papers/conftest.py)."""
    return work / "data" / slug / "prepared" / "main"


def rewrite_npz(path: Path, **changes) -> None:
    """Rewrite the ``.npz`` file ``path`` with some arrays replaced (a change is a callable of the old array) or
    dropped (``None``); the validate tests tamper with prepared files through it."""
    import numpy as np

    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    for key, change in changes.items():
        if change is None:
            del arrays[key]
        else:
            arrays[key] = change(arrays[key])
    np.savez(path, **arrays)


def set_item(index, value):
    """A change for :func:`rewrite_npz`: a copy of the array with ``a[index] = value``."""

    def change(a):
        a = a.copy()
        a[index] = value
        return a

    return change


def validation_failure(work: Path, slug: str) -> str:
    """Run ``slug``'s validate stage in ``work``, expect ValidationFailed (and no validation.json); its message."""
    import pytest

    from icml25.errors import ValidationFailed
    from icml25.runner import run_stage

    with pytest.raises(ValidationFailed) as info:
        run_stage(work, slug, "validate")
    assert not (work / "data" / slug / "validated" / "validation.json").exists()
    return str(info.value)


def failure_parts(message: str) -> dict[str, str]:
    """A ValidationFailed message as {"table.column": its detail}."""
    assert message.startswith("validation failed: "), message
    parts = {}
    for part in message.removeprefix("validation failed: ").split("; "):
        name, _, detail = part.partition(" (")
        parts[name] = detail
    return parts


def assert_refused(status: int, printed: str, err: str, message: str) -> None:
    """A tool's refusal of bad input: exit status 2, nothing on stdout, one line on stderr that starts with
    "icml25: error: " and holds ``message``, no traceback."""
    assert status == 2 and not printed, (printed, err)
    assert err.startswith("icml25: error: ") and len(err.strip().splitlines()) == 1, err
    assert message in err and "Traceback" not in err, err


def forbid(monkeypatch, owner: object, name: str) -> None:
    """Make ``owner.name`` (a model loader, a training loop) fail the test if called: a bad input must be refused
    before that work starts."""

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"{name} ran before the inputs were checked (args {args!r})")

    monkeypatch.setattr(owner, name, never)


def run_tool(*argv: str) -> tuple[int, str, str]:
    """``icml25 ARGV`` in this process (flows.cli.main): its exit status, stdout and stderr."""
    import contextlib
    import io

    from flows.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def printed_fields(printed: str) -> dict[str, str]:
    """The ``name: value`` lines of a command's output, by name."""
    return dict(line.split(": ", 1) for line in printed.splitlines() if ": " in line)
