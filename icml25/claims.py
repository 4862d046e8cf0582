"""Claims: declared in a paper's report module with the function that computes them, and the contract every
``claims.json`` keeps (DESIGN.md, "Claims").

A claim is a function of the evaluated artifacts, decorated with its test::

    @claim(">=", 0.8, statement="minimum over p of mod-cross's coverage", source="Sec. 2")
    def mod_coverage(ev):
        cov = ev.csv("summary.csv").query("method == 'mod'").coverage
        return cov.min(), f"lowest at p = {...}"

The function's name is the claim's id; it returns the value (one number) or ``(value, note)``. The threshold is
the paper's acceptance floor and lives here, in code, never in params.yaml. A non-finite value fails and says so.

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

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"claim {self.id}: op must be one of {sorted(OPS)}")

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
        }
        if not finite:
            rec["reason"] = f"value was {value}, not a finite number"
        if note:
            rec["note"] = note
        return rec


def claim(op: str, threshold: float, *, statement: str, source: str) -> Callable[[Callable], Claim]:
    """Declare the decorated function as a claim (its name is the id)."""

    def deco(fn: Callable) -> Claim:
        return Claim(fn.__name__, statement, source, op, float(threshold), fn)

    return deco


def declared(module: Any) -> list[Claim]:
    """The claims a report module declares, in the order they are written."""
    return [v for v in vars(module).values() if isinstance(v, Claim)]


def contract_problems(doc: Any, wanted: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Everything wrong with a claims document's form: top-level keys, claims keyed by id, one finite number
    per value, a known op and a numeric threshold, ``passed`` recomputed from them (never trusted), a known
    ``kind`` when given, and every id in ``wanted`` present. Empty when the document keeps the contract."""
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
        if "kind" in c and c["kind"] not in KINDS:
            out.append(f"{cid}: kind must be one of {list(KINDS)}, got {c['kind']!r}")
        held = OPS[op](v, t)
        if c.get("passed") not in (0, 1, True, False) or bool(c.get("passed")) != held:
            out.append(f"{cid}: passed={c.get('passed')!r} but {v} {op} {t} is {held}")
    return out
