"""What evaluate computes from the trained tables: every number the claims and the report need.

Inputs (train's tables, each with a ``seed`` column): ``sources`` (:func:`~models.ucb_ogd.experiment.digits_seed`:
method, output, source, name, accuracy, loss, n_labels), ``allocation`` (method, t, source, share), ``regret``
(:func:`~models.ucb_ogd.experiment.regret_seed`), optionally ``batched`` (the Lightning variant's per-source
table) and ``ablation`` (the digits runs with the other gradient rule, see ``grad_of_clipped``).

The claims' numbers (``summary.json``):

* ``worst_source_gain``: mean over seeds of min_k acc_k(UCB-OGD) - min_k acc_k(uniform) (the output model
  named by ``output``: the average iterate by default), with the per-seed gains and their minimum;
* ``hard_source_allocation``: mean over seeds of K n_hard / T for UCB-OGD, the hardest source of a seed being
  the one with the highest test loss under the uniform baseline's model;
* ``regret_rate``: for each K, the least-squares slope of log R_T (the mean over seeds) on log T; the claim
  takes the larger over K.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .experiment import (
    hard_source_allocation,
    regret_slopes,
    worst_source_gain,
    worst_source_gains,
    worst_source_table,
)


def summarize(
    sources: Any,
    allocation: Any,
    regret: Any,
    *,
    output: str = "average",
    batched: Any | None = None,
    ablation: Any | None = None,
) -> dict[str, Any]:
    """The summary (``summary.json``) and the report's tables (DataFrames, ``tables``)."""
    worst = worst_source_table(sources, output)
    gains = worst_source_gains(worst)
    ucb = worst[worst.method == "ucb_ogd"].set_index("seed")
    other_output = "last" if output == "average" else "average"
    worst_other = worst_source_table(sources, other_output)
    slopes = regret_slopes(regret)
    ucb_slopes = slopes[slopes.method == "ucb_ogd"].set_index("K").slope
    mean_regret = (
        regret.groupby(["K", "method", "T"], sort=True)[["regret", "normalized"]].mean().reset_index()
    )
    K_digits = int(sources.source.nunique())
    summary: dict[str, Any] = {
        "output": output,
        "seeds": int(sources.seed.nunique()),
        "horizon": int(allocation.t.max()),
        "sources": K_digits,
        "worst_source_gain": worst_source_gain(worst),
        "gains": {int(s): float(g) for s, g in gains.items()},
        "min_gain": float(gains.min()),
        "positive_seeds": int((gains > 0).sum()),
        "hard_source_allocation": hard_source_allocation(worst),
        "allocation_by_seed": {int(s): float(r) for s, r in ucb.hard_ratio.items()},
        "hard_sources": sorted({int(h) for h in worst.hard}),
        "worst_acc": {m: float(g.worst_acc.mean()) for m, g in worst.groupby("method", sort=False)},
        "other_output": other_output,
        "other_output_gain": worst_source_gain(worst_other),
        "regret_slopes": {
            f"{m} K={int(K)}": float(s) for K, m, s in zip(slopes.K, slopes.method, slopes.slope, strict=True)
        },
        "regret_rate": float(ucb_slopes.max()),
        "regret_rate_K": int(ucb_slopes.idxmax()),
    }
    tables = {
        "worst_source": worst,
        "per_source": sources[sources.output == output]
        .groupby(["method", "source", "name"], sort=False)[["accuracy", "loss", "n_labels"]]
        .mean()
        .reset_index(),
        "allocation_mean": allocation.groupby(["method", "t", "source"], sort=True)
        .share.mean()
        .reset_index(),
        "regret_mean": mean_regret,
        "slopes": slopes,
    }
    if batched is not None and len(batched):
        b = batched.assign(output="last")
        bw = worst_source_table(b, "last")
        summary["batched"] = {
            "seeds": int(batched.seed.nunique()),
            "worst_source_gain": worst_source_gain(bw),
            "hard_source_allocation": hard_source_allocation(bw),
            "worst_acc": {m: float(g.worst_acc.mean()) for m, g in bw.groupby("method", sort=False)},
        }
    if ablation is not None and len(ablation):
        aw = worst_source_table(ablation, output)
        summary["ablation"] = {
            "worst_acc": {m: float(g.worst_acc.mean()) for m, g in aw.groupby("method", sort=False)},
            "worst_source_gain": worst_source_gain(aw),
        }
    return {"summary": summary, "tables": tables}


def write_evaluated(folder: Path, result: dict[str, Any]) -> None:
    """``summary.json`` and one CSV per table of :func:`summarize` into ``folder``."""
    from icml25.io import write_json

    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "summary.json", result["summary"])  # non-finite floats spelled out
    for name, table in result["tables"].items():
        table.to_csv(folder / f"{name}.csv", index=False)
