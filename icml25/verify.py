"""Does a recompute agree with the committed claims? Claim by claim: the verdict, and the value within the
tolerance the claim declares (:func:`icml25.claims.claim`'s ``tol``).

A recompute of the same code and params on another machine is not bit-identical: BLAS and thread scheduling move
floating-point sums in their last digits, and training under torch is seeded but not bit-reproducible across
CPUs. So a fresh clone's ``make repro`` rewrites tracked files (dvc.lock's hashes, metrics, figures, the claims'
values in their last digits); what must not change is a verdict, and a value must stay within its claim's
tolerance. :func:`compare` reads two claims documents of one paper and classifies every claim:

==============  ============================================================================================
``agrees``      same verdict, ``|new - old| <= tolerance``
``drifted``     same verdict, the value moved by more than its tolerance
``regressed``   held before, fails now
``recovered``   failed before, holds now (a changed verdict too)
``new``         declared now, not in the committed file
``gone``        in the committed file, not declared now
==============  ============================================================================================

Verdicts are recomputed from each record's ``value``, ``op`` and ``threshold`` (a value that is not a finite number
fails), never read from its stored ``passed``; a record whose ``passed`` contradicts them is flagged
(:attr:`ClaimChange.inconsistent`: a corrupted or hand-edited file). The tolerance is the recomputed record's (the
code's current declaration), else the committed one's, else 0. A claims.json that is not JSON, or not a claims
document, is a :class:`~icml25.errors.UserError` naming the file.

:func:`verify` compares each paper's working-tree ``reports/<slug>/claims.json`` (the last run) with the one
committed at a git revision (``HEAD``), but only when the paper ran since: :func:`rerun` reads the run record that
the runner writes when ``report@<slug>`` finishes (:func:`icml25.runner.record_run`, under ``.dvc/tmp``) and asks
that the working-tree file is the bytes that run wrote, and that the run came after the commit of the compared
claims.json (its commit descends from that one, or it finished later). Identical bytes from a re-run agree; a
paper that did not run is reported as such, never as agreeing. ``icml25 verify`` prints it all and exits 1 unless
every paper ran and every claim agrees, and the nightly flow (:mod:`flows.reproduce`), which runs the papers
itself, fails when a claim regressed.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .claims import OPS
from .errors import UserError
from .paths import PaperPaths

#: where local workers' checkouts keep their own run records (flows.worktrees.WORKERS_DIR, git worktrees)
WORKER_CHECKOUTS = Path("runs") / "workers"

AGREES, DRIFTED, REGRESSED, RECOVERED, NEW, GONE = (
    "agrees",
    "drifted",
    "regressed",
    "recovered",
    "new",
    "gone",
)
#: statuses that mean the reproduction does not agree with the committed claims
DISAGREE = (DRIFTED, REGRESSED, RECOVERED, NEW, GONE)
#: statuses that change a verdict (or the set of verdicts)
VERDICT_CHANGES = (REGRESSED, RECOVERED, NEW, GONE)


@dataclass(frozen=True)
class ClaimChange:
    """One claim of one paper, committed (``old``) against recomputed (``new``)."""

    paper: str
    claim: str
    status: str
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    tolerance: float
    #: the sides ("committed", "recomputed") whose stored ``passed`` contradicts their value, op and threshold
    inconsistent: tuple[str, ...] = ()

    @property
    def agrees(self) -> bool:
        return self.status == AGREES and not self.inconsistent

    @property
    def kind(self) -> str:
        return str((self.new or self.old or {}).get("kind", ""))

    @property
    def delta(self) -> float | None:
        a, b = _value(self.old), _value(self.new)
        return None if a is None or b is None else b - a

    def verdicts(self) -> str:
        return f"{_verdict(self.old)} -> {_verdict(self.new)}"

    def describe(self) -> str:
        """One line: ``ghost/beats_baselines regressed: held (0.071) -> failed (0.012), tolerance 0.01``."""
        old = f"{_verdict(self.old)} ({_num(_value(self.old))})" if self.old else "absent"
        new = f"{_verdict(self.new)} ({_num(_value(self.new))})" if self.new else "absent"
        line = f"{self.paper}/{self.claim} {self.status}: {old} -> {new}, tolerance {_num(self.tolerance)}"
        for side in self.inconsistent:
            rec = self.old if side == "committed" else self.new
            line += f"; {contradiction(side, rec or {})}"
        return line


@dataclass
class PaperVerification:
    paper: str
    changes: list[ClaimChange] = field(default_factory=list)
    missing: str | None = None  # why there is nothing to compare
    not_rerun: str | None = None  # why the working-tree claims.json is not a run since the committed one

    @property
    def agrees(self) -> bool:
        return self.missing is None and self.not_rerun is None and all(c.agrees for c in self.changes)


def _value(rec: dict[str, Any] | None) -> float | None:
    if not rec:
        return None
    v = rec.get("value")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def _threshold(rec: dict[str, Any]) -> float | None:
    t = rec.get("threshold")
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) else None


def held(rec: dict[str, Any]) -> bool:
    """The verdict recomputed from ``value``, ``op`` and ``threshold`` (a value that is not a finite number, an
    unknown op or a threshold that is not a number fails), whatever ``passed`` says."""
    value, threshold, op = _value(rec), _threshold(rec), rec.get("op")
    if value is None or threshold is None or not isinstance(op, str) or op not in OPS:
        return False
    return bool(OPS[op](value, threshold))


def consistent(rec: dict[str, Any]) -> bool:
    """Whether the stored ``passed`` (0, 1, true or false) is the recomputed verdict."""
    passed = rec.get("passed")
    return isinstance(passed, bool | int) and passed in (0, 1) and bool(passed) == held(rec)


def contradiction(side: str, rec: dict[str, Any]) -> str:
    """``the recomputed claims.json stores passed=1 but 250 <= 200 is false (an inconsistent file)``."""
    test = f"{_num(_value(rec))} {rec.get('op')} {_num(_threshold(rec))}"
    verdict = "true" if held(rec) else "false"
    stored = f"passed={rec.get('passed')!r}"
    return f"the {side} claims.json stores {stored} but {test} is {verdict} (an inconsistent file)"


def _verdict(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return "absent"
    return "held" if held(rec) else "failed"


def _num(x: float | None) -> str:
    if x is None:
        return "none"
    return f"{x:.6g}"


def tolerance_of(old: dict[str, Any] | None, new: dict[str, Any] | None) -> float:
    for rec in (new, old):
        t = (rec or {}).get("tolerance")
        if isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t) and t >= 0:
            return float(t)
    return 0.0


def classify(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """The status of one claim (see the module's table), from the recomputed verdicts."""
    if old is None:
        return NEW
    if new is None:
        return GONE
    before, after = held(old), held(new)
    if before and not after:
        return REGRESSED
    if after and not before:
        return RECOVERED
    a, b = _value(old), _value(new)
    if a is None or b is None:  # a non-finite value: agreement only if both are
        return AGREES if a is None and b is None else DRIFTED
    return AGREES if abs(b - a) <= tolerance_of(old, new) else DRIFTED


def compare(paper: str, old_doc: dict[str, Any], new_doc: dict[str, Any]) -> list[ClaimChange]:
    """Every claim of either document, in the recomputed document's order (then the gone ones)."""
    old, new = old_doc.get("claims", {}), new_doc.get("claims", {})
    ids = list(new) + [cid for cid in old if cid not in new]
    return [
        ClaimChange(
            paper,
            cid,
            classify(old.get(cid), new.get(cid)),
            old.get(cid),
            new.get(cid),
            tolerance_of(old.get(cid), new.get(cid)),
            tuple(
                side
                for side, rec in (("committed", old.get(cid)), ("recomputed", new.get(cid)))
                if rec is not None and not consistent(rec)
            ),
        )
        for cid in ids
    ]


def parse_claims(text: str | bytes, where: str) -> dict[str, Any]:
    """A claims document, or a :class:`UserError` naming ``where`` (a truncated or corrupted file)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{where} is not valid JSON ({exc.msg}: line {exc.lineno} column {exc.colno}): truncated or "
            "corrupted; re-run the paper (or restore the file with git)"
        ) from None
    except ValueError as exc:  # bytes that are not UTF-8
        raise UserError(f"{where} is not a JSON text ({exc}): re-run the paper") from None
    claims = doc.get("claims") if isinstance(doc, dict) else None
    if not isinstance(claims, dict) or not all(isinstance(c, dict) for c in claims.values()):
        raise UserError(f"{where} is not a claims document (no 'claims' object keyed by claim id)")
    return doc


def committed_text(root: Path, relpath: str, rev: str = "HEAD") -> str | None:
    """The file ``relpath`` as committed at ``rev`` (None when it is not in that revision)."""
    out = subprocess.run(
        ["git", "show", f"{rev}:{relpath}"],
        cwd=root,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    if out.returncode == 0:
        return out.stdout
    check = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        raise UserError(f"{rev!r} is not a git revision of {root}")
    return None


def committed_claims(root: Path, slug: str, rev: str = "HEAD") -> dict[str, Any] | None:
    """reports/<slug>/claims.json as committed at ``rev`` (None when it was never committed)."""
    relpath = f"reports/{slug}/claims.json"
    text = committed_text(root, relpath, rev)
    return None if text is None else parse_claims(text, f"{relpath} as committed at {rev}")


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)


def run_records(root: Path, slug: str) -> list[dict[str, Any]]:
    """The records of ``report@<slug>``'s last run (:func:`icml25.runner.record_run`) in this checkout and in
    the local workers' checkouts (``icml25 run --workers``), whose outcomes bring their reports here."""
    files = [PaperPaths(root, slug).stage_timings / "report.json"]
    workers = root / WORKER_CHECKOUTS
    if workers.is_dir():
        files += sorted(PaperPaths(tree, slug).stage_timings / "report.json" for tree in workers.iterdir())
    out = []
    for f in files:
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def _finished(rec: dict[str, Any]) -> datetime | None:
    try:
        t = datetime.fromisoformat(str(rec.get("finished")))
    except ValueError:
        return None
    return t if t.tzinfo is not None else None


def rerun(root: Path, slug: str, rev: str = "HEAD") -> str | None:
    """None when the working-tree claims.json is what a run of ``report@<slug>`` wrote after the claims.json
    compared (the one at ``rev``) was committed; else why it is not (one phrase).

    A run counts when its record names the md5 of the working-tree file (so the file was neither edited nor
    restored by git or DVC since) and the run came after the commit that last changed the file at ``rev``: the
    commit it ran at descends from that one, or it finished later than that commit's time (runs and commits are
    both recorded to the second, so a run that a commit in the same second recorded does not count)."""
    relpath = f"reports/{slug}/claims.json"
    records = run_records(root, slug)
    if not records:
        return f"no run of report@{slug} is recorded in this checkout"
    md5 = hashlib.md5((root / relpath).read_bytes()).hexdigest()
    ran = sorted(
        (r for r in records if r.get("claims_md5") == md5 and _finished(r) is not None),
        key=lambda r: _finished(r) or datetime.fromtimestamp(0, UTC),
    )
    if not ran:
        last = max((str(r.get("finished", "")) for r in records), default="")
        when = f" ({last})" if last else ""
        if not any("claims_md5" in r for r in records):
            return f"its last run{when} left no record of the claims.json it wrote (an older runner)"
        return (
            f"{relpath} is not the file its last run{when} wrote (edited, or restored by git or DVC, since)"
        )
    log = _git(root, "log", "-1", "--format=%H %ct", rev, "--", relpath).stdout.split()
    if len(log) != 2:  # no commit of the file at rev (verify_paper has said so before asking)
        return None
    changed, committed = log[0], datetime.fromtimestamp(int(log[1]), tz=UTC)
    for r in reversed(ran):
        commit = r.get("commit")
        if (
            isinstance(commit, str)
            and _git(root, "merge-base", "--is-ancestor", changed, commit).returncode == 0
        ):
            return None
        finished = _finished(r)
        if finished is not None and finished > committed:
            return None
    r = ran[-1]
    at = f", at {str(r['commit'])[:10]}" if isinstance(r.get("commit"), str) else ""
    return f"its last run ({r['finished']}{at}) is older than {relpath} as committed in {changed[:10]}"


def verify_paper(
    root: Path, slug: str, rev: str = "HEAD", baseline: dict[str, Any] | None = None
) -> PaperVerification:
    """One paper's working-tree claims against ``baseline`` (default: the file committed at ``rev``).

    Against ``rev``, the paper must have run since that file was committed (:func:`rerun`); a caller that passes
    ``baseline`` (the nightly flow, which read it before it ran the paper) vouches for the run itself."""
    path = PaperPaths(root, slug).claims
    relpath = f"reports/{slug}/claims.json"
    result = PaperVerification(slug)
    against_rev = baseline is None
    if baseline is None:
        text = committed_text(root, relpath, rev)
        if text is None:
            result.missing = f"no {relpath} committed at {rev}"
            return result
        baseline = parse_claims(text, f"{relpath} as committed at {rev}")
    if not path.exists():
        result.missing = f"{relpath} does not exist (run `icml25 run {slug}` first)"
        return result
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{relpath} cannot be read: {exc.strerror or exc}") from None
    recomputed = parse_claims(data, relpath)
    if against_rev:
        result.not_rerun = rerun(root, slug, rev)
        if result.not_rerun is not None:  # nothing was recomputed: no claim is compared
            return result
    result.changes = compare(slug, baseline, recomputed)
    return result


def verify(root: Path, slugs: list[str], rev: str = "HEAD") -> list[PaperVerification]:
    """Each paper's working-tree claims against those committed at ``rev``, when the paper ran since."""
    return [verify_paper(root, slug, rev) for slug in slugs]


def markdown(results: list[PaperVerification], title: str = "Claims re-verified") -> str:
    """Every claim's change as a markdown table (the nightly flow's artifact)."""
    lines = [f"# {title}\n"]
    counts: dict[str, int] = {}
    for r in results:
        for c in r.changes:
            counts[c.status] = counts.get(c.status, 0) + 1
    lines.append(
        ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + "\n" if counts else "No claims.\n"
    )
    missing = [r for r in results if r.missing or r.not_rerun]
    for r in missing:
        lines.append(
            f"- **{r.paper}**: {r.missing or f'not re-run since the committed claims.json: {r.not_rerun}'}"
        )
    inconsistent = [c for r in results for c in r.changes if c.inconsistent]
    for c in inconsistent:
        lines.append(
            f"- **{c.paper}/{c.claim}**: "
            + "; ".join(
                contradiction(side, (c.old if side == "committed" else c.new) or {})
                for side in c.inconsistent
            )
        )
    if missing or inconsistent:
        lines.append("")
    lines.append("| paper | claim | kind | status | verdict | committed | recomputed | change | tolerance |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for c in r.changes:
            status = c.status if c.agrees else f"**{c.status}{', inconsistent' if c.inconsistent else ''}**"
            lines.append(
                f"| {c.paper} | `{c.claim}` | {c.kind} | {status} | {c.verdicts()} | {_num(_value(c.old))} "
                f"| {_num(_value(c.new))} | {_num(c.delta)} | {_num(c.tolerance)} |"
            )
    return "\n".join(lines) + "\n"
