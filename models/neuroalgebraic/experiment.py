"""The sweeps: every architecture's counts, closed form, float and exact ranks; the claims' numbers.

Families: ``shallow`` (n, r, 1) with k >= 2 (closed form: Alexander-Hirschowitz), ``linear`` (N0, N1, N2) with
k = 1 (closed form: the determinantal variety), ``deep`` monomial networks (no closed form; reported against
#params - the hidden widths)."""

from __future__ import annotations

import math

import numpy as np

from .neuromanifold import Architecture, alexander_hirschowitz, linear_dimension
from .rank import exact_rank, float_jacobian, rank_from_singular_values

SPEC_THRESHOLD = 1e-7  # the spec's fixed relative threshold (the float claim's stub)


def shallow_cases(ns, ks, extra: int = 2) -> list[Architecture]:
    """(n, r, 1) for r = 1 .. floor(C(n + k - 1, k) / n) + extra."""
    return [
        Architecture((n, r, 1), k)
        for n in ns
        for k in ks
        for r in range(1, math.comb(n + k - 1, k) // n + extra + 1)
    ]


def linear_cases(widths) -> list[Architecture]:
    return [Architecture((a, b, c), 1) for a in widths for b in widths for c in widths]


def family(arch: Architecture) -> str:
    if arch.degree == 1:
        return "linear"
    return "shallow" if arch.is_shallow else "deep"


def closed_form(arch: Architecture) -> int | None:
    if arch.degree == 1:
        return linear_dimension(arch.widths)
    if arch.is_shallow:
        n, r, _ = arch.widths
        return alexander_hirschowitz(n, arch.degree, r)
    return None


def case_row(arch: Architecture, seed: int) -> dict:
    _, s = float_jacobian(arch, seed)
    exact = exact_rank(arch, seed)
    closed = closed_form(arch)
    return {
        "family": family(arch),
        "widths": ",".join(map(str, arch.widths)),
        "degree": arch.degree,
        "params": arch.params,
        "symmetries": arch.symmetries,
        "expected": arch.expected,
        "closed_form": -1 if closed is None else closed,
        "exact": exact,
        "float": rank_from_singular_values(s),
        "float_spec": rank_from_singular_values(s, SPEC_THRESHOLD),
        "smallest_relative_sv": float(np.min(s) / np.max(s)) if len(s) else math.nan,
        "ambient": arch.ambient,
        "defect": arch.expected - exact,
        "fiber": arch.params - exact,
        "params_minus_hidden": arch.params - sum(arch.hidden),
    }


def claims(table, descent) -> dict:
    """The five gated numbers: mismatches of the exact rank against the closed forms (shallow, linear), of the
    float rank against the exact one (every case), and the descent's agreement and singular frequency."""
    sh, li = table[table.family == "shallow"], table[table.family == "linear"]
    worst = lambda g: ", ".join(f"{r.widths} k={r.degree}" for r in g.head(3).itertuples())  # noqa: E731
    bad_sh = sh[sh.exact != sh.closed_form]
    bad_li = li[li.exact != li.closed_form]
    bad_fl = table[table.float != table.exact]
    return {
        "shallow_cases": len(sh),
        "shallow_mismatches": len(bad_sh),
        "shallow_first": worst(bad_sh),
        "linear_cases": len(li),
        "linear_mismatches": len(bad_li),
        "linear_first": worst(bad_li),
        "cases": len(table),
        "float_mismatches": len(bad_fl),
        "float_first": worst(bad_fl),
        "trials": len(descent),
        "agreement": float((descent.singular == descent.predicted).mean()),
        "singular_fraction": float(descent.singular.mean()),
        "predicted_fraction": float(descent.predicted.mean()),
        "control_agreement": float((descent.control_singular == descent.predicted).mean()),
        "control_singular_fraction": float(descent.control_singular.mean()),
        "max_excess_loss": float(descent.excess_loss.max()),
    }
