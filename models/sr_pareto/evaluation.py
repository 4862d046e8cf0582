"""What the evaluate stage builds from the search's tables: the fronts of each data set (all trees, the Karva
space, the BFGS protocol), their comparison, gplearn's programs against the front, the optimiser table, the
search-space counts, and the summary of every number the report's claims and tables show.

The fronts (:func:`dataset_fronts`) are the best expression of each length of a results table: the fast path over
all trees; the BFGS protocol over all trees up to ``protocol_max_length``; on the Karva data sets, the official
Karva space of head length h fitted on its own (the paper's BFGS protocol over its own enumeration: never a
filter of the all-trees fits) and the fast path applied to that same space.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .front import best_by_length
from .grammar import OPS, count_official_style, enumerate_full, enumerate_karva, show

#: A length's full-tree front counts as strictly above another front when it is higher by more than this.
STRICT = 1e-9
#: The spec's further check: the best R^2 one length below the planted length should stay below this.
BELOW_PLANTED = 0.99


def karva_space(n_features: int, head: int, ops: tuple[str, ...] = OPS) -> set[str]:
    """The printed forms (grammar.show) of every expression the Karva space of head length ``head`` encodes."""
    return {show(x) for v in enumerate_karva(n_features, head, ops).values() for x in v}


def karva_column(columns) -> str:
    """The comparison table's Karva column (``karva3`` for head length 3)."""
    return next(c for c in columns if re.fullmatch(r"karva\d", c))


def dataset_fronts(fast, bfgs, karva_protocol=None, karva_fast=None) -> dict[str, Any]:
    """The fronts of a data set's results tables: ``full`` (fast path, all trees), ``bfgs`` (the protocol, all
    trees up to its maximum length) and, when given, ``karva`` (the protocol over the Karva space) and
    ``karva_fast`` (the fast path over the Karva space); None where a table is absent."""
    return {
        "full": best_by_length(fast),
        "bfgs": best_by_length(bfgs),
        "karva": None if karva_protocol is None else best_by_length(karva_protocol),
        "karva_fast": None if karva_fast is None else best_by_length(karva_fast),
    }


def comparison_rows(
    name: str,
    features: int,
    fronts: dict[str, Any],
    karva_column: str,
    planted_length: float,
    planted_reachable: bool | None,
) -> list[dict[str, Any]]:
    """One row per length of the full-tree front: its R^2 and expression beside the Karva protocol front
    (``karva_column``, its expression), the Karva space's fast-path front (``<karva_column>_fast``) and the
    all-trees BFGS protocol front (NaN where absent), the planted length (NaN if none) and whether the Karva
    space holds the planted expression (NaN if not planted)."""

    def at(front, what: str = "r2") -> dict:
        return {} if front is None else dict(zip(front.length, getattr(front, what), strict=True))

    kv, ke, kf, bv = (
        at(fronts["karva"]),
        at(fronts["karva"], "expression"),
        at(fronts["karva_fast"]),
        at(fronts["bfgs"]),
    )
    return [
        {
            "dataset": name,
            "features": features,
            "length": int(row.length),
            "full": float(row.r2),
            "full_expression": row.expression,
            karva_column: kv.get(row.length, np.nan),
            f"{karva_column}_expression": ke.get(row.length, ""),
            f"{karva_column}_fast": kf.get(row.length, np.nan),
            "bfgs_protocol": bv.get(row.length, np.nan),
            "planted_length": planted_length,
            "planted_reachable": np.nan if planted_reachable is None else float(planted_reachable),
        }
        for row in fronts["full"].itertuples()
    ]


def peer_rows(
    name: str,
    Xt: np.ndarray,
    yz: np.ndarray,
    full_front,
    seed: int,
    population: int,
    generations: int,
    max_length: int,
) -> list[dict[str, Any]]:
    """gplearn's final population (distinct programs of length <= ``max_length``) on the standardised data set
    (Xt features x rows, y_z), each beside the full-tree front's R^2 at its length."""
    from .peer import gplearn_population

    fr = dict(zip(full_front.length, full_front.r2, strict=True))
    return [
        {"dataset": name, **prog, "front": fr.get(prog["length"], np.nan)}
        for prog in gplearn_population(Xt.T, yz, seed, population, generations, max_length)
    ]


def optimizer_row(name: str, optimizer: str, table) -> dict[str, Any]:
    """One optimiser's fits of the common candidate set on one data set (one length): how many candidates, its
    best R^2 and how many of its fits were invalid (a non-finite prediction or an optimiser error)."""
    return {
        "dataset": name,
        "optimizer": optimizer,
        "length": int(table.length.max()),
        "candidates": len(table),
        "best_r2": float(table.r2.max()),
        "invalid": int(table.r2.isna().sum()),
    }


def search_space_counts(
    n_features: int, max_length: int, karva4: bool, ops: tuple[str, ...] = OPS
) -> dict[str, Any]:
    """How many canonical expressions of each length the full grammar holds, the Karva head-length-3 space's
    total (canonical, and as the official generator counts it: structures de-duplicated, leaves not) and, when
    ``karva4``, the head-length-4 space's total."""
    full = enumerate_full(n_features, max_length, ops)
    k3 = enumerate_karva(n_features, 3, ops)
    row: dict[str, Any] = {"features": n_features}
    for n in range(1, max_length + 1, 2):
        row[f"full L={n}"] = len(full.get(n, []))
    row["full total"] = sum(len(v) for v in full.values())
    row["karva3 total"] = sum(len(v) for v in k3.values())
    row["karva3 official-style total"] = count_official_style(n_features, 3, ops)
    if karva4:
        row["karva4 total"] = sum(len(v) for v in enumerate_karva(n_features, 4, ops).values())
    return row


def write_evaluated(out, comparison: list, peer: list, optimizers: list, counts: list) -> dict[str, Any]:
    """What the evaluate stage writes besides the fronts and meta.json: comparison.csv, peer.csv, optimizers.csv,
    counts.csv (one row per dict) and summary.json (:func:`summarize` of the tables as written and read back,
    the numbers the report shows beside them). Returns the summary."""
    from pathlib import Path

    import pandas as pd

    from icml25.io import write_json
    from icml25.tables import read_frame

    out = Path(out)
    for file, rows in (
        ("comparison", comparison),
        ("peer", peer),
        ("optimizers", optimizers),
        ("counts", counts),
    ):
        pd.DataFrame(rows).to_csv(out / f"{file}.csv", index=False)
    tables = {f: read_frame(out / f"{f}.csv") for f in ("comparison", "peer", "optimizers")}
    summary = summarize(tables["comparison"], tables["peer"], tables["optimizers"])
    write_json(out / "summary.json", summary)
    return summary


# ----------------------------------------------------------------------------------------------- summary
def _karva_rows(rows, kcol: str) -> list[dict[str, Any]]:
    return [
        {
            "dataset": str(r["dataset"]),
            "length": int(r["length"]),
            "full": float(r["full"]),
            "karva": float(r[kcol]),
            "gap": float(r["full"] - r[kcol]),
            "full_expression": str(r["full_expression"]),
            "karva_expression": str(r[f"{kcol}_expression"]),
        }
        for _, r in rows.iterrows()
    ]


def summarize(comp, peer, opts) -> dict[str, Any]:
    """Every number the report's claims and tables take from the comparison (``comp``: one row per data set and
    length), gplearn's programs (``peer``) and the optimiser table (``opts``); ``peer`` and ``opts`` may be
    empty frames.

    - ``exact_recovery``: the full front's R^2 at the planted length of each noise-free planted set, its minimum
      and the set where it is lowest;
    - ``karva_gap``: at the planted length of each noise-free planted set with a Karva fit, R^2(full trees) -
      R^2(Karva space, its own protocol fits): over the sets whose planted expression the Karva space does not
      hold (``unreachable``; ``min`` and ``worst``) and over those it holds (``reachable``: the control), and
      every (data set, length) pair where the full front is higher by more than :data:`STRICT`, and where the
      Karva front is lower than at the length below (``nonmonotone``);
    - ``peer_gap``: R^2(program) - R^2(front at its length) over gplearn's programs: its maximum, the closest
      program, and per data set the number of programs, the best program's R^2 and the largest gap;
    - ``optimizers``: each optimiser's mean over data sets of its best R^2 on the candidate set, the spread
      (max - min) of these means, the best and worst optimiser, and each optimiser's invalid fits (count and
      candidates, summed over data sets);
    - ``bfgs_gap``: R^2(fast path front) - R^2(paper's protocol front) over the same expressions: all trees at
      the lengths the protocol ran on every data set (``trees``) and the Karva space at the longer lengths on the
      Karva data sets (``karva``); its minimum over both and the closest pair;
    - ``below_planted``: the best R^2 one length below the planted length of each planted set, and how many
      stay below :data:`BELOW_PLANTED`.
    """
    kcol = karva_column(comp.columns)
    planted = comp[comp.length == comp.planted_length]
    out: dict[str, Any] = {"karva_column": kcol}
    exact = float(planted.full.min()) if len(planted) else math.nan
    out["exact_recovery"] = {
        "min_r2": exact,
        "planted_sets": len(planted),
        "worst": str(planted.loc[planted.full.idxmin(), "dataset"]) if len(planted) else None,
    }

    fitted = planted[planted[kcol].notna()]
    unreach = _karva_rows(fitted[fitted.planted_reachable == 0], kcol)
    reach = _karva_rows(fitted[fitted.planted_reachable == 1], kcol)
    both = comp[comp[kcol].notna()]
    strict = both[both.full - both[kcol] > STRICT]
    worst = min(unreach, key=lambda r: r["gap"]) if unreach else None
    drops = []  # the Karva front lower at a length than at the one below (as on 228_elusage in the paper)
    for name, part in both.groupby("dataset", sort=False):
        prev = dict(zip(part.length + 2, part[kcol], strict=True))
        for r in part.itertuples():
            if r.length in prev and getattr(r, kcol) < prev[r.length] - STRICT:
                drops.append(
                    {
                        "dataset": str(name),
                        "length": int(r.length),
                        "r2": float(getattr(r, kcol)),
                        "shorter": float(prev[r.length]),
                    }
                )
    out["karva_gap"] = {
        "min": worst["gap"] if worst else math.nan,
        "worst": worst["dataset"] if worst else None,
        "unreachable": unreach,
        "reachable": reach,
        "datasets": sorted(set(both.dataset)),
        "strict": [{"dataset": r.dataset, "length": int(r.length)} for r in strict.itertuples()],
        "nonmonotone": drops,
    }

    if len(peer):
        peer_gap = peer.r2 - peer.front
        w = peer.loc[peer_gap.idxmax()]
        by_set = (
            peer.assign(gap=peer_gap)
            .groupby("dataset")
            .agg(programs=("program", "size"), best=("r2", "max"), worst_gap=("gap", "max"))
        )
        out["peer_gap"] = {
            "max": float(peer_gap.max()),
            "programs": len(peer),
            "closest": {
                "program": str(w.program),
                "dataset": str(w.dataset),
                "r2": float(w.r2),
                "front": float(w.front),
            },
            "by_dataset": [
                {
                    "dataset": str(i),
                    "programs": int(r.programs),
                    "best_r2": float(r.best),
                    "max_gap": float(r.worst_gap),
                }
                for i, r in by_set.iterrows()
            ],
        }
    else:
        out["peer_gap"] = {"max": math.nan, "programs": 0, "closest": None, "by_dataset": []}

    if len(opts):
        per_opt = opts.groupby("optimizer", sort=False)
        means = per_opt.best_r2.mean()
        # the gated spread is the worst case over data sets (a mean over sets could hide one set's gap)
        by_set = opts.groupby("dataset", sort=False).best_r2.agg(lambda r: r.max() - r.min())
        out["optimizers"] = {
            "mean_best_r2": {str(k): float(v) for k, v in means.items()},
            "invalid": {str(k): int(v) for k, v in per_opt.invalid.sum().items()},
            "candidates": {str(k): int(v) for k, v in per_opt.candidates.sum().items()},
            "spread": float(by_set.max()),
            "spread_by_dataset": {str(k): float(v) for k, v in by_set.items()},
            "worst_dataset": str(by_set.idxmax()),
            "best": str(means.idxmax()),
            "worst": str(means.idxmin()),
            "length": int(opts.length.max()),
            "datasets": int(opts.dataset.nunique()),
        }
    else:
        out["optimizers"] = {
            "mean_best_r2": {},
            "invalid": {},
            "candidates": {},
            "spread": math.nan,
            "spread_by_dataset": {},
            "worst_dataset": None,
            "best": None,
            "worst": None,
        }

    trees = comp[comp.bfgs_protocol.notna()].assign(fast=lambda t: t.full, protocol=lambda t: t.bfgs_protocol)
    trees = trees.assign(space="all trees")
    above = comp.bfgs_protocol.isna() & comp[kcol].notna() & comp[f"{kcol}_fast"].notna()
    karva = comp[above].assign(fast=lambda t: t[f"{kcol}_fast"], protocol=lambda t: t[kcol], space=kcol)
    pairs = [t for t in (trees, karva) if len(t)]
    if pairs:
        import pandas as pd

        allp = pd.concat(pairs, ignore_index=True)
        gap = allp.fast - allp.protocol
        w = allp.loc[gap.idxmin()]
        out["bfgs_gap"] = {
            "min": float(gap.min()),
            "pairs": len(allp),
            "trees": {"pairs": len(trees), "max_length": int(trees.length.max()) if len(trees) else None},
            "karva": {
                "pairs": len(karva),
                "lengths": sorted({int(v) for v in karva.length}),
                "datasets": sorted(set(karva.dataset)),
                "min": float((karva.fast - karva.protocol).min()) if len(karva) else math.nan,
            },
            "closest": {
                "dataset": str(w.dataset),
                "length": int(w.length),
                "space": str(w.space),
                "fast": float(w.fast),
                "protocol": float(w.protocol),
            },
        }
    else:
        out["bfgs_gap"] = {"min": math.nan, "pairs": 0, "closest": None}

    rows = []
    for r in planted.itertuples():
        prev = comp[(comp.dataset == r.dataset) & (comp.length == r.length - 2)]
        if len(prev):
            rows.append({"dataset": r.dataset, "length": int(r.length) - 2, "r2": float(prev.full.iloc[0])})
    out["below_planted"] = {
        "threshold": BELOW_PLANTED,
        "rows": rows,
        "below": sum(r["r2"] < BELOW_PLANTED for r in rows),
    }
    return out
