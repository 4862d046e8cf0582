"""The controlled experiment of the CPU reproduction: testing every pair of trained models, and summarising.

Models (trained by the train stage with :func:`~.training.fit`): ``base`` (Adam on all digits), ``ft``
(``base`` fine-tuned with SGD on a subset of classes), ``ft_perm`` (``ft`` under a random output-preserving
permutation and rescaling of its hidden units, :func:`~.permutations.output_preserving_transform`) and 2 n_pairs
independent models ``indep_00``, ``indep_01``, ... trained like ``base`` from their own initialisations (H_0 of
the paper).

Pairs (:func:`pairs`): (base, ft) is dependent, (base, ft_perm) adversarial (dependent, but disguised), and
(indep_{2i}, indep_{2i+1}) for i < n_pairs are independent and disjoint. :func:`pair_tests` runs every statistic
(:data:`STATISTICS`: phi_U, phi_H, phi_MATCH, PERMTEST-l2) on every pair; :func:`heatmap` runs phi_MATCH on all
pairs of a few models; :func:`summarize` reduces the p-value table to what the report's claims read: the KS test
of the independent pairs' p-values against Uniform(0, 1), their minimum, PERMTEST's rank (T+1) p on (base, ft),
the phi_U value on the adversarial pair, and the test accuracies.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

#: The statistics, in the order of the p-value table: phi_U, phi_H, phi_MATCH, PERMTEST with phi_l2.
STATISTICS = ("u", "h", "match", "l2")
#: The kinds of pairs besides the independent ones (one pair each).
DEPENDENT_KINDS = ("dependent", "adversarial")


# ---------------------------------------------------------------------------------------------------- the pairs
def pairs(n_pairs: int) -> list[tuple[str, str, str]]:
    """(a, b, kind) of every tested pair: (base, ft), (base, ft_perm), then ``n_pairs`` disjoint independent
    pairs (indep_00, indep_01), (indep_02, indep_03), ..."""
    out = [("base", "ft", "dependent"), ("base", "ft_perm", "adversarial")]
    out += [(f"indep_{2 * i:02d}", f"indep_{2 * i + 1:02d}", "independent") for i in range(n_pairs)]
    return out


def load_checkpoints(folder: Path) -> dict[str, Any]:
    """Every checkpoint under ``folder`` (one sub-folder per model), by name, in sorted order."""
    from .checkpoints import load_checkpoint

    return {p.name: load_checkpoint(p) for p in sorted(Path(folder).iterdir())}


def activations(weights: dict[str, Any], x: Any, n_blocks: int) -> dict[str, list[dict[str, Any]]]:
    """Each model's per-block {"gate": G_l r_l, "up": U_l r_l} on the inputs ``x`` (N x 64), by name."""
    import torch

    from .glu import forward

    with torch.no_grad():
        return {n: forward(w, x, n_blocks, collect=True)[1] for n, w in weights.items()}


def pair_tests(
    weights: dict[str, Any],
    acts: dict[str, list[dict[str, Any]]],
    n_blocks: int,
    *,
    permutations: int,
    seed: int,
    metric: str = "cosine",
    sides: str = "one",
    dead_units: str = "exclude",
) -> list[dict[str, Any]]:
    """Every statistic on every pair of :func:`pairs` (the number of independent pairs is half the number of
    ``indep_*`` models): one row per (pair, statistic) with a, b, kind, stat, log10p and each block's log10 p
    (``block0``, ``block1``, ...; none for PERMTEST) and ``excluded``, the dead hidden units the matching
    statistics left out (0 for PERMTEST). ``metric``, ``sides`` and ``dead_units`` are the MATCH metric, the
    Spearman sides and the dead-unit rule of the matching statistics; PERMTEST uses T = ``permutations`` and
    ``seed``."""
    from . import stats
    from .glu import ARCHITECTURE

    options = {"metric": metric, "sides": sides, "dead_units": dead_units}
    rows = []
    for a, b, kind in pairs(sum(n.startswith("indep_") for n in weights) // 2):
        results = {
            "u": stats.phi_u(weights[a], weights[b], n_blocks, **options),
            "h": stats.phi_h(acts[a], acts[b], **options),
            "match": stats.phi_match(acts[a], acts[b], **options),
            "l2": stats.permtest_l2(
                weights[a], weights[b], ARCHITECTURE, n_blocks, T=permutations, seed=seed
            ),
        }
        for stat, r in results.items():
            row = {
                "a": a,
                "b": b,
                "kind": kind,
                "stat": stat,
                "log10p": r.log10p,
                "excluded": sum(r.excluded),
            }
            row.update({f"block{i}": v for i, v in enumerate(r.per_block)})
            rows.append(row)
    return rows


def heatmap_names(names: list[str], n_models: int) -> list[str]:
    """base, ft, ft_perm and the first ``n_models`` independent models of ``names``."""
    return ["base", "ft", "ft_perm"] + [n for n in names if n.startswith("indep")][:n_models]


def heatmap(
    acts: dict[str, list[dict[str, Any]]],
    names: list[str],
    *,
    metric: str = "cosine",
    sides: str = "one",
    dead_units: str = "exclude",
) -> list[dict[str, Any]]:
    """phi_MATCH's log10 p on every unordered pair of ``names``: rows {a, b, log10p}."""
    from . import stats

    options = {"metric": metric, "sides": sides, "dead_units": dead_units}
    return [
        {"a": a, "b": b, "log10p": stats.phi_match(acts[a], acts[b], **options).log10p}
        for a, b in itertools.combinations(names, 2)
    ]


# ------------------------------------------------------------------------------------------- the evaluated folder
def write_evaluated(
    out: Path,
    rows: list[dict[str, Any]],
    heat: list[dict[str, Any]],
    accuracy: dict[str, float],
    permutations: int,
) -> dict[str, Any]:
    """What evaluate writes into ``out`` (the files the claims read): pvalues.csv (the rows of
    :func:`pair_tests`), heatmap.csv (:func:`heatmap`) and summary.json (:func:`summarize` of pvalues.csv as
    written, so that its numbers and the report's lookups agree to the bit). Returns the summary. The stage and
    the stub tests (tests/papers/model_independence/test_claims.py) write through this one function."""
    import pandas as pd

    from icml25.io import write_json

    out = Path(out)
    pd.DataFrame(rows).to_csv(out / "pvalues.csv", index=False)
    pd.DataFrame(heat).to_csv(out / "heatmap.csv", index=False)
    summary = summarize(pd.read_csv(out / "pvalues.csv"), accuracy, permutations)
    write_json(out / "summary.json", summary)
    return summary


# -------------------------------------------------------------------------------------------------- the summary
def summarize(table: Any, accuracy: dict[str, float], permutations: int) -> dict[str, Any]:
    """What the claims and tables read, from the p-value table of :func:`pair_tests` (a DataFrame) and the test
    accuracies by model:

    - ``independent_ks_p``: per statistic, the KS test of the independent pairs' p-values against Uniform(0, 1)
      (exact under H_0 for PERMTEST and phi_U, Thm 1-2), as a plain p;
    - ``independent_min_log10p``: per statistic, the smallest log10 p over the independent pairs;
    - ``log10p``: "<kind>/<stat>" -> log10 p of the dependent and the adversarial pair;
    - ``permtest_rank``: (T+1) p of PERMTEST-l2 on (base, ft), the original pair's rank among the T+1
      (1 = the floor p = 1/(T+1)), and ``permtest_p`` = rank / (T+1);
    - ``fooled_u``: phi_U's log10 p on (base, ft_perm) (the paper predicts it is fooled);
    - ``dead_units_excluded``: the dead hidden units the matching statistics left out, over every pair and block
      (0 when no unit is dead, or when the table predates the column);
    - ``test_accuracy``: base, ft and the mean over the independent models.
    """
    import numpy as np
    from scipy import stats as sps

    indep = table[table.kind == "independent"]

    def one(a: str, b: str, stat: str) -> float:
        row = table[(table.a == a) & (table.b == b) & (table.stat == stat)]
        return float(row.log10p.iloc[0])

    ks = {
        s: float(sps.kstest(10.0 ** indep[indep.stat == s].log10p.to_numpy(), "uniform").pvalue)
        for s in STATISTICS
    }
    mins = {s: float(indep[indep.stat == s].log10p.min()) for s in STATISTICS}
    rank = float(round(10.0 ** one("base", "ft", "l2") * (permutations + 1)))
    return {
        "permutations": permutations,
        "independent_pairs": len(indep) // len(STATISTICS),
        "independent_ks_p": ks,
        "independent_min_log10p": mins,
        "log10p": {
            f"{kind}/{s}": float(table[(table.kind == kind) & (table.stat == s)].log10p.min())
            for kind in DEPENDENT_KINDS
            for s in STATISTICS
        },
        "permtest_rank": rank,
        "permtest_p": rank / (permutations + 1),
        "fooled_u": one("base", "ft_perm", "u"),
        "dead_units_excluded": int(table["excluded"].sum()) if "excluded" in table else 0,
        "test_accuracy": {
            "base": accuracy["base"],
            "ft": accuracy["ft"],
            "independent_mean": float(np.mean([v for k, v in accuracy.items() if k.startswith("indep")])),
        },
    }
