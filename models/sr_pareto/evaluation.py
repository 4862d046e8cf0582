"""What the evaluate stage builds from the search's tables: the fronts of each data set (all trees, the Karva
space, the BFGS protocol), their comparison, gplearn's programs against the front, the optimiser table, the
search-space counts, and the summary of every number the report's claims and tables show.

The fronts (:func:`dataset_fronts`) are the best expression of each length of a results table: over all trees,
over the expressions the official Karva space of head length ``karva_head`` can encode (the same fits,
filtered), and over the BFGS protocol's table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .front import best_by_length
from .grammar import count_official_style, enumerate_full, enumerate_karva, show

#: A length's full-tree front counts as strictly above another front when it is higher by more than this.
STRICT = 1e-9
#: The spec's further check: the best R^2 one length below the planted length should stay below this.
BELOW_PLANTED = 0.99


def karva_space(n_features: int, head: int) -> set[str]:
    """The printed forms (grammar.show) of every expression the Karva space of head length ``head`` encodes."""
    return {show(x) for v in enumerate_karva(n_features, head).values() for x in v}


def dataset_fronts(fast, bfgs, karva: set[str]) -> tuple[Any, Any, Any]:
    """(full-tree front, Karva front, BFGS protocol front) of a data set from its fast-path and BFGS results
    tables; the Karva front takes the fast path's fits of the expressions in ``karva``."""
    return best_by_length(fast), best_by_length(fast[fast.expression.isin(karva)]), best_by_length(bfgs)


def comparison_rows(
    name: str,
    features: int,
    full_front,
    karva_front,
    bfgs_front,
    karva_column: str,
    planted_length: float,
) -> list[dict[str, Any]]:
    """One row per length of the full-tree front: its R^2 and expression beside the Karva and BFGS protocol
    fronts' R^2 at that length (NaN where they have none) and the planted length (NaN if none)."""
    kv = dict(zip(karva_front.length, karva_front.r2, strict=True))
    bv = dict(zip(bfgs_front.length, bfgs_front.r2, strict=True))
    return [
        {
            "dataset": name,
            "features": features,
            "length": int(row.length),
            "full": float(row.r2),
            "full_expression": row.expression,
            karva_column: kv.get(row.length, np.nan),
            "bfgs_protocol": bv.get(row.length, np.nan),
            "planted_length": planted_length,
        }
        for row in full_front.itertuples()
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
    """One optimiser's protocol table on one data set: its best R^2 at the longest length it ran and the
    fraction of its expressions whose fit was invalid."""
    top = table[table.length == table.length.max()]
    return {
        "dataset": name,
        "optimizer": optimizer,
        "length": int(top.length.max()),
        "best_r2": float(top.r2.max()),
        "invalid_fraction": float(table.r2.isna().mean()),
    }


def search_space_counts(n_features: int, max_length: int, karva4: bool) -> dict[str, Any]:
    """How many canonical expressions of each length the full grammar holds, the Karva head-length-3 space's
    total (canonical, and as the official generator counts it: structures de-duplicated, leaves not) and, when
    ``karva4``, the head-length-4 space's total."""
    full = enumerate_full(n_features, max_length)
    k3 = enumerate_karva(n_features, 3)
    row: dict[str, Any] = {"features": n_features}
    for n in range(1, max_length + 1, 2):
        row[f"full L={n}"] = len(full.get(n, []))
    row["full total"] = sum(len(v) for v in full.values())
    row["karva3 total"] = sum(len(v) for v in k3.values())
    row["karva3 official-style total"] = count_official_style(n_features, 3)
    if karva4:
        row["karva4 total"] = sum(len(v) for v in enumerate_karva(n_features, 4).values())
    return row


# ----------------------------------------------------------------------------------------------- summary
def summarize(comp, peer, opts) -> dict[str, Any]:
    """Every number the report's claims and tables take from the comparison (``comp``: one row per data set and
    length), gplearn's programs (``peer``) and the optimiser table (``opts``); ``peer`` and ``opts`` may be
    empty frames.

    - ``exact_recovery``: the full front's R^2 at the planted length of each noise-free planted set, its minimum
      and the set where it is lowest;
    - ``karva_gap``: R^2(full) - R^2(Karva) over every (data set, length): its minimum and the pairs where the
      full front is higher by more than :data:`STRICT`;
    - ``peer_gap``: R^2(program) - R^2(front at its length) over gplearn's programs: its maximum, the closest
      program, and per data set the number of programs, the best program's R^2 and the largest gap;
    - ``optimizers``: each optimiser's mean over data sets of its best R^2 at the longest length, the spread
      (max - min) of these means, the best and worst optimiser;
    - ``bfgs_gap``: R^2(fast path) - R^2(BFGS protocol) where the protocol ran: its minimum and closest pair;
    - ``below_planted``: the best R^2 one length below the planted length of each planted set, and how many
      stay below :data:`BELOW_PLANTED`.
    """
    kcol = [c for c in comp.columns if c.startswith("karva")][0]
    planted = comp[comp.length == comp.planted_length]
    gap = comp.full - comp[kcol]
    strict = comp[gap > STRICT]
    out: dict[str, Any] = {"karva_column": kcol}
    exact = float(planted.full.min()) if len(planted) else math.nan
    out["exact_recovery"] = {
        "min_r2": exact,
        "planted_sets": len(planted),
        "worst": str(planted.loc[planted.full.idxmin(), "dataset"]) if len(planted) else None,
    }
    out["karva_gap"] = {
        "min": float(gap.min()),
        "strict": [{"dataset": r.dataset, "length": int(r.length)} for r in strict.itertuples()],
    }

    if len(peer):
        peer_gap = peer.r2 - peer.front
        worst = peer.loc[peer_gap.idxmax()]
        by_set = (
            peer.assign(gap=peer_gap)
            .groupby("dataset")
            .agg(programs=("program", "size"), best=("r2", "max"), worst_gap=("gap", "max"))
        )
        out["peer_gap"] = {
            "max": float(peer_gap.max()),
            "programs": len(peer),
            "closest": {
                "program": str(worst.program),
                "dataset": str(worst.dataset),
                "r2": float(worst.r2),
                "front": float(worst.front),
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
        per_opt = opts.groupby("optimizer").best_r2.mean()
        out["optimizers"] = {
            "mean_best_r2": {str(k): float(v) for k, v in per_opt.items()},
            "spread": float(per_opt.max() - per_opt.min()),
            "best": str(per_opt.idxmax()),
            "worst": str(per_opt.idxmin()),
            "length": int(opts.length.max()),
            "datasets": int(opts.dataset.nunique()),
        }
    else:
        out["optimizers"] = {"mean_best_r2": {}, "spread": math.nan, "best": None, "worst": None}

    both = comp[comp.bfgs_protocol.notna()]
    if len(both):
        fast_gap = both.full - both.bfgs_protocol
        w = both.loc[fast_gap.idxmin()]
        out["bfgs_gap"] = {
            "min": float(fast_gap.min()),
            "pairs": len(both),
            "max_length": int(both.length.max()),
            "closest": {
                "dataset": str(w.dataset),
                "length": int(w.length),
                "full": float(w.full),
                "bfgs_protocol": float(w.bfgs_protocol),
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
