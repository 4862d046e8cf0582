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

The tolerance is the recomputed record's (the code's current declaration), else the committed one's, else 0.
:func:`verify` compares each paper's working-tree ``reports/<slug>/claims.json`` (the last run) with the one
committed at a git revision (``HEAD``); ``icml25 verify`` prints it and exits 1 unless every claim agrees, and
the nightly flow (:mod:`flows.reproduce`) fails when a claim regressed.
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UserError
from .paths import PaperPaths

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
        return f"{self.paper}/{self.claim} {self.status}: {old} -> {new}, tolerance {_num(self.tolerance)}"


@dataclass
class PaperVerification:
    paper: str
    changes: list[ClaimChange] = field(default_factory=list)
    identical: bool = False  # the working-tree file is the committed file, byte for byte (not re-run?)
    missing: str | None = None  # why there is nothing to compare

    @property
    def agrees(self) -> bool:
        return self.missing is None and all(c.status == AGREES for c in self.changes)


def _value(rec: dict[str, Any] | None) -> float | None:
    if not rec:
        return None
    v = rec.get("value")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def _verdict(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return "absent"
    return "held" if rec.get("passed") else "failed"


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
    """The status of one claim (see the module's table)."""
    if old is None:
        return NEW
    if new is None:
        return GONE
    before, after = bool(old.get("passed")), bool(new.get("passed"))
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
        )
        for cid in ids
    ]


def committed_text(root: Path, relpath: str, rev: str = "HEAD") -> str | None:
    """The file ``relpath`` as committed at ``rev`` (None when it is not in that revision)."""
    out = subprocess.run(
        ["git", "show", f"{rev}:{relpath}"], cwd=root, capture_output=True, text=True, check=False
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
    text = committed_text(root, f"reports/{slug}/claims.json", rev)
    return None if text is None else json.loads(text)


def verify_paper(
    root: Path, slug: str, rev: str = "HEAD", baseline: dict[str, Any] | None = None
) -> PaperVerification:
    """One paper's working-tree claims against ``baseline`` (default: the file committed at ``rev``)."""
    path = PaperPaths(root, slug).claims
    result = PaperVerification(slug)
    if baseline is None:
        text = committed_text(root, f"reports/{slug}/claims.json", rev)
        if text is None:
            result.missing = f"no reports/{slug}/claims.json committed at {rev}"
            return result
        baseline = json.loads(text)
        result.identical = path.exists() and path.read_text() == text
    if not path.exists():
        result.missing = f"{path.relative_to(root)} does not exist (run `icml25 run {slug}` first)"
        return result
    result.changes = compare(slug, baseline, json.loads(path.read_text()))
    return result


def verify(root: Path, slugs: list[str], rev: str = "HEAD") -> list[PaperVerification]:
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
    missing = [r for r in results if r.missing]
    for r in missing:
        lines.append(f"- **{r.paper}**: {r.missing}")
    if missing:
        lines.append("")
    lines.append("| paper | claim | kind | status | verdict | committed | recomputed | change | tolerance |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for c in r.changes:
            status = c.status if c.status == AGREES else f"**{c.status}**"
            lines.append(
                f"| {c.paper} | `{c.claim}` | {c.kind} | {status} | {c.verdicts()} | {_num(_value(c.old))} "
                f"| {_num(_value(c.new))} | {_num(c.delta)} | {_num(c.tolerance)} |"
            )
    return "\n".join(lines) + "\n"
