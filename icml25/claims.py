"""Claims: declared in a paper's report module with the function that computes them, and the contract every
``claims.json`` keeps (DESIGN.md, "Claims").

A claim is a function of the evaluated artifacts, decorated with its test::

    @claim(">=", 0.8, kind="result", killed_by="test_stubs.py::test_split_set_fails", tol=0.02,
           paper="0.90 at every p (Fig. 2)", statement="minimum over p of mod-cross's coverage", source="Sec. 2")
    def mod_coverage(ev):
        cov = ev.csv("summary.csv").query("method == 'mod'").coverage
        return cov.min(), f"lowest at p = {...}"

The function's name is the claim's id; it returns the value (one number) or ``(value, note)``. The threshold is
the paper's acceptance floor and lives here, in code, never in params.yaml. A non-finite value fails and says so.

Every claim also declares:

- ``tol``: how far its value may move when the same params are recomputed (another machine, another BLAS, the
  nondeterminism of training), absolute, in the value's own units; 0 for a value that is exact (a count, a
  closed form checked exactly). ``icml25 verify`` and the nightly re-verification read a recomputed value within
  ``tol`` of the committed one as agreeing (:mod:`icml25.verify`); the verdict must never change.
- ``paper`` (optional): the paper's own number for the statement, as text with its place ("0.90 at every p, Fig.
  2"), shown beside ours in the results site; None where the paper states no number for it.

Every claim says what it can tell a reader (its ``kind``, DESIGN.md):

- ``result``: evidence for the paper's statement, from an experiment that could have come out otherwise. It
  names (``killed_by``, ``"<file>::<test>"`` under ``tests/papers/<slug>/``) the test in which a stub or a
  broken variant of the method fails it; the project's tests check that the test exists and evaluates the claim.
- ``invariant``: holds by algebra or by construction (an implementation check): gated, never evidence.
- ``simulated``: computed on a stand-in (a simulated model): shown, never counted as a paper result.

Headers, the index and ``icml25 list`` count each kind apart (:func:`tally`, :func:`describe`).

:func:`contract_problems` checks a claims document's form (the same checks as the workplace's shared
``check_claims.py``, kept here so that the project's own tests and the report stage never skip them).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}
KINDS = ("result", "invariant", "simulated")


@dataclass(frozen=True)
class Claim:
    """One claim of a paper: ``fn(ev)`` computes ``value`` or ``(value, note)`` from the evaluated artifacts."""

    id: str
    statement: str
    source: str
    op: str
    threshold: float
    fn: Callable[[Any], Any]
    kind: str
    killed_by: str | None = None
    tol: float = 0.0
    paper: str | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.tol, int | float) and math.isfinite(self.tol) and self.tol >= 0):
            raise ValueError(f"claim {self.id}: tol must be a finite number >= 0, got {self.tol!r}")
        if self.op not in OPS:
            raise ValueError(f"claim {self.id}: op must be one of {sorted(OPS)}")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {list(KINDS)}, got {self.kind!r}")
        if self.kind == "result":
            file, sep, test = (self.killed_by or "").partition("::")
            if not (sep and file.endswith(".py") and test.startswith("test")):
                raise ValueError(
                    f"claim {self.id}: a result claim names the test in which a stub or broken method fails it, "
                    f"killed_by='test_<file>.py::test_<name>' (got {self.killed_by!r})"
                )
        elif self.killed_by is not None:
            raise ValueError(f"claim {self.id}: killed_by is for result claims (this one is {self.kind!r})")

    def evaluate(self, ev: Any) -> tuple[float, str | None]:
        out = self.fn(ev)
        value, note = out if isinstance(out, tuple) else (out, None)
        return float(value), note

    def verdict(self, value: float, note: str | None = None) -> dict[str, Any]:
        """The claims.json record for a computed value (a non-finite value fails and says so)."""
        value = float(value)
        finite = math.isfinite(value)
        held = finite and OPS[self.op](value, self.threshold)
        rec: dict[str, Any] = {
            "statement": self.statement,
            "source": self.source,
            "value": value if finite else None,
            "op": self.op,
            "threshold": self.threshold,
            "passed": int(held),
            "kind": self.kind,
        }
        if self.killed_by:
            rec["killed_by"] = self.killed_by
        rec["tolerance"] = self.tol
        if self.paper:
            rec["paper"] = self.paper
        if not finite:
            rec["reason"] = f"value was {value}, not a finite number"
        if note:
            rec["note"] = note
        return rec


def claim(
    op: str,
    threshold: float,
    *,
    kind: str,
    statement: str,
    source: str,
    tol: float,
    killed_by: str | None = None,
    paper: str | None = None,
) -> Callable[[Callable], Claim]:
    """Declare the decorated function as a claim (its name is the id); ``kind`` is one of :data:`KINDS`, a
    ``result`` names its stub-killing test in ``killed_by``, ``tol`` is how far a recompute may move its value
    (no default: each claim says) and ``paper`` the paper's own number."""

    def deco(fn: Callable) -> Claim:
        return Claim(
            fn.__name__, statement, source, op, float(threshold), fn, kind, killed_by, float(tol), paper
        )

    return deco


def declared(module: Any) -> list[Claim]:
    """The claims a report module declares, in the order they are written."""
    return [v for v in vars(module).values() if isinstance(v, Claim)]


def contract_problems(doc: Any, wanted: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Everything wrong with a claims document's form: top-level keys, claims keyed by id, one finite number
    per value, a known op and a numeric threshold, ``passed`` recomputed from them (never trusted), a known
    ``kind`` (required: this project's claims all carry one; the shared checker treats it as optional), a
    ``killed_by`` test for every result, a ``tolerance`` >= 0 (required here too), and every id in ``wanted`` present. Empty when the document keeps the
    contract."""
    if not isinstance(doc, dict):
        return ["the document must be a JSON object"]
    out = [f"missing top-level key {k!r}" for k in ("paper", "profile", "claims") if k not in doc]
    claims = doc.get("claims", {})
    if not isinstance(claims, dict):
        return out + ["'claims' must be an object keyed by claim id (dvc metrics show drops lists)"]
    out += [f"{cid}: absent" for cid in wanted if cid not in claims]
    for cid, c in claims.items():
        if not isinstance(c, dict):
            out.append(f"{cid}: must be an object")
            continue
        out += [
            f"{cid}: missing {k!r}" for k in ("statement", "value", "op", "threshold", "passed") if k not in c
        ]
        v, op, t = c.get("value"), c.get("op"), c.get("threshold")
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            out.append(f"{cid}: value must be one finite number, got {v!r}")
            continue
        if op not in OPS or isinstance(t, bool) or not isinstance(t, int | float):
            out.append(f"{cid}: op must be one of {sorted(OPS)} and threshold a number")
            continue
        tol = c.get("tolerance")
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not math.isfinite(tol) or tol < 0:
            out.append(
                f"{cid}: tolerance must be a finite number >= 0 (what a recompute may move), got {tol!r}"
            )
        if c.get("kind") not in KINDS:
            out.append(f"{cid}: kind must be one of {list(KINDS)}, got {c.get('kind')!r}")
        elif c["kind"] == "result" and not c.get("killed_by"):
            out.append(f"{cid}: a result claim names its stub-killing test (killed_by)")
        held = OPS[op](v, t)
        if c.get("passed") not in (0, 1, True, False) or bool(c.get("passed")) != held:
            out.append(f"{cid}: passed={c.get('passed')!r} but {v} {op} {t} is {held}")
    return out


def tally(claims: dict[str, dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """(held, total) per kind of a claims document's ``claims``, in :data:`KINDS` order, kinds with none left
    out."""
    out = {}
    for kind in KINDS:
        mine = [c for c in claims.values() if c.get("kind") == kind]
        if mine:
            out[kind] = (sum(int(bool(c.get("passed"))) for c in mine), len(mine))
    return out


def describe(counts: dict[str, tuple[int, int]], *, short: bool = False) -> str:
    """A tally in words: "4/5 results held; 3/3 invariants held; 2 simulated (shown, not counted)" or, short,
    "4/5 results, 3/3 inv, 2 sim". Results come first and always (0/0 when a paper has none)."""
    held, total = counts.get("result", (0, 0))
    if short:
        parts = [f"{held}/{total} results"]
        if "invariant" in counts:
            parts.append("{}/{} inv".format(*counts["invariant"]))
        if "simulated" in counts:
            parts.append(f"{counts['simulated'][1]} sim")
        return ", ".join(parts)
    parts = [f"{held}/{total} result{'s' * (total != 1)} held"]
    if "invariant" in counts:
        i_held, i_total = counts["invariant"]
        parts.append(f"{i_held}/{i_total} invariant{'s' * (i_total != 1)} held")
    if "simulated" in counts:
        s_held, s_total = counts["simulated"]
        parts.append(f"{s_total} simulated ({s_held} held; shown, not counted as paper results)")
    return "; ".join(parts)
