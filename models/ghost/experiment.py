"""GHOST's controlled experiment: what one run trains and measures, and the summaries the report shows.

A run r of graph g (its own seed, a named stream of the paper's seed, g and r) on its own graph draw and its own
Dirichlet partition:

- :func:`train_run`: the clients' proxy generators G_k for each FGW structure the variants need (one fit), the
  server's GCN for every variant of :func:`.config.variants` (one fit: ``ghost`` with the configured switches;
  with the ablation also each switch flipped on its own, all five flipped, and no retention), the local GCNs
  (one common initialisation) and their one-shot FedAvg theta = sum_k (n_k / n) theta_k, and the centralised GCN
  (the upper bound; local and central in one fit);
- :func:`evaluate_run`: the accuracy of every model on the server's test graph (the local models as their mean),
  GHOST's, FedAvg's and the local models' per-client accuracy, the proxy fidelity of every generator set
  (:func:`.api.proxy_fidelity`), the server's training curves and the label histogram of every client;
- :func:`summarize`: every number a claim or a table of the report needs, per graph, from the evaluated tables
  (means and standard deviations over runs, GHOST minus the better baseline with the standard error of the
  paired per-run difference, the one-switch-at-a-time ablation, the proxy-fidelity margins, the medians of the
  server's extra terms relative to the NLL, the label counts of run 0).

:func:`load_federated` reads what the prepare stage wrote back into a :class:`.api.FederatedGraph`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import GhostConfig, variants

#: The evaluated tables (one CSV each), in the order they are written.
TABLES = ("accuracy", "per_client", "fidelity", "server_history", "labels")
#: Server model names: ``ghost`` (the configured switches) and ``ghost_<variant>`` for the ablation's variants.
GHOST = "ghost"
BASELINES = ("fedavg", "local")


def model_name(variant: str) -> str:
    return GHOST if variant == "default" else f"{GHOST}_{variant}"


def graph_file(prepared: Path, graph: str, run: int) -> Path:
    return prepared / graph / f"run{run}.npz"


def load_federated(prepared: Path, graph: str, run: int):
    """Graph ``graph``'s draw for run ``run`` and that run's partition (as the prepare stage wrote them into
    ``prepared``) as a :class:`models.ghost.api.FederatedGraph`."""
    import numpy as np
    import pandas as pd

    from .api import federate
    from .graph import make_graph
    from .partition import Partition

    g = np.load(graph_file(prepared, graph, run))
    gr = make_graph(g["edge_index"], g["x"], g["y"])
    part = pd.read_csv(prepared / "partition.csv")
    part = part[(part.graph == graph) & (part.run == run)].sort_values("node")
    k = int(part.client.max()) + 1
    return federate(gr, Partition(part.client.to_numpy(), part.split.to_numpy(), k))


@dataclass
class RunModels:
    """What :func:`train_run` trains: the generators by FGW structure, every global model by name (``ghost``,
    ``ghost_<variant>``, ``local_<k>``, ``fedavg``, ``central``) and the training histories."""

    generators: dict[str, list] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    history: dict = field(default_factory=lambda: {"clients": {}, "server": {}})

    @property
    def ghost(self):
        return self.models[GHOST]


def train_run(fed, cfg: GhostConfig, seed: int, log=None) -> RunModels:
    """Every training of one run, each from its own seeds derived from ``seed``: the proxies (one fit for every
    FGW structure the variants use), the servers of every variant (one fit), the local GCNs and the centralised
    GCN (one fit), and FedAvg. ``log(msg)`` hears of each phase."""
    import time

    from . import api

    say = log or (lambda msg: None)
    out = RunModels()
    cfgs = variants(cfg)
    structures = tuple(dict.fromkeys([cfg.fgw_structure] + [c.fgw_structure for c in cfgs.values()]))
    t = time.perf_counter()
    out.generators, out.history["clients"] = api.train_proxy_sets(fed, cfg, seed, structures)
    say(f"proxies ({', '.join(structures)}) {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    models, order, hist = api.train_servers(fed, out.generators, cfgs, seed)
    for v, m in models.items():
        out.models[model_name(v)] = m
        out.history["server"][model_name(v)] = {"order": order, "steps": hist[v]}
    say(f"{len(cfgs)} server models {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    local, central = api.train_baselines(fed, cfg, seed)
    for k, m in enumerate(local):
        out.models[f"local_{k:02d}"] = m
    out.models["fedavg"] = api.fedavg(local, [c.graph.num_nodes for c in fed.clients])
    out.models["central"] = central
    say(f"local, FedAvg and central {time.perf_counter() - t:.1f} s")
    return out


def evaluate_run(
    graph: str,
    run: int,
    fed,
    models: dict[str, Any],
    generators: dict[str, list],
    history: dict,
    samples: int,
    min_train: int,
    seed: int,
) -> dict[str, list[dict]]:
    """The rows of graph ``graph``'s run ``run`` for each of :data:`TABLES`. ``models``: the global models by
    name, ``generators``: the generator sets by FGW structure, ``history``: what :func:`train_run` recorded;
    ``samples``, ``min_train`` and ``seed``: the proxy fidelity's (see :func:`.api.proxy_fidelity`)."""
    import numpy as np

    from . import api

    key = {"graph": graph, "run": run}
    rows: dict[str, list[dict]] = {name: [] for name in TABLES}
    accuracy = {n: api.evaluate(m, fed) for n, m in models.items()}
    local = [accuracy[n] for n in sorted(models) if n.startswith("local_")]
    rows["accuracy"] += [
        {**key, "method": n, "accuracy": a} for n, a in accuracy.items() if not n.startswith("local_")
    ]
    rows["accuracy"].append({**key, "method": "local", "accuracy": float(np.mean(local))})
    sizes = [c.graph.num_nodes for c in fed.clients]
    ghost_pc = api.per_client_accuracy(models[GHOST], fed)
    fedavg_pc = api.per_client_accuracy(models["fedavg"], fed)
    for k, local_acc in enumerate(local):
        rows["per_client"].append(
            {
                **key,
                "client": k,
                "nodes": sizes[k],
                "ghost": ghost_pc[k],
                "fedavg": fedavg_pc[k],
                "local_on_server_test": local_acc,
            }
        )
    for structure, gens in generators.items():
        found = api.proxy_fidelity(gens, fed, samples, min_train, seed=seed)
        rows["fidelity"] += [{**key, "structure": structure, **row} for row in found]
    for name, h in history["server"].items():
        rows["server_history"] += [{**key, "method": name, "step": i, **s} for i, s in enumerate(h["steps"])]
    counts = fed.histograms(split=None)
    rows["labels"] += [
        {**key, "client": k, "class": c, "nodes": int(counts[k, c])}
        for k in range(counts.shape[0])
        for c in range(counts.shape[1])
    ]
    return rows


def paired(per_run, a: str, b: str) -> dict:
    """a - b paired by run: mean, standard error (sd / sqrt(R); 0 with one run), runs where a > b."""
    import numpy as np

    d = (per_run[a] - per_run[b]).to_numpy()
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0
    return {"mean": float(d.mean()), "se": se, "wins": int((d > 0).sum()), "runs": len(d)}


FIDELITY_QUANTILE = 0.05  # the low quantile of the fidelity margin shown beside the worst case


def summarize_graph(tables: dict[str, Any], graph: str, num_classes: int, default_structure: str) -> dict:
    """The numbers of one graph (see :func:`summarize`)."""
    acc = tables["accuracy"][tables["accuracy"].graph == graph]
    fid = tables["fidelity"]
    fid = fid[fid.graph == graph] if len(fid) else fid
    srv = tables["server_history"][tables["server_history"].graph == graph]
    labels = tables["labels"][tables["labels"].graph == graph]
    runs = int(acc.run.nunique())
    stats = acc.groupby("method").accuracy.agg(["mean", "std", "min", "max"])
    mean = stats["mean"].to_dict()
    per_run = acc.pivot(index="run", columns="method", values="accuracy").sort_index()
    best = "fedavg" if mean["fedavg"] >= mean["local"] else "local"
    diff = paired(per_run, GHOST, best)
    wins_both = int((per_run[GHOST] > per_run[list(BASELINES)].max(axis=1)).sum())
    ablation = {
        m: {"accuracy": float(mean[m]), "minus_ghost": paired(per_run, m, GHOST)}
        for m in per_run.columns
        if m.startswith(GHOST + "_")
    }
    # retention where it has weight: lambda_r * r_scale = lambda_r (the lambda-scale flip) against lambda_r = 0
    retention_at_scale_1 = (
        paired(per_run, f"{GHOST}_flip_lambda_scale", f"{GHOST}_noret")
        if {f"{GHOST}_flip_lambda_scale", f"{GHOST}_noret"} <= set(per_run.columns)
        else None
    )
    blocks = srv[srv.block > 0]  # from the second block on, where retention is active
    ratio = {
        name: float((part.retention / part.nll.clip(lower=1e-12)).median())
        for name, part in blocks.groupby("method")
    }
    norm_ratio = {
        name: float((part.norm_term / part.nll.clip(lower=1e-12)).median())
        for name, part in blocks.groupby("method")
    }
    by_structure = {}
    for structure, part in fid.groupby("structure") if len(fid) else ():
        worst = part.loc[part.margin.idxmin()]
        by_structure[structure] = {
            "pairs": len(part),
            "closest": float(part.closest.mean()),
            "cos_own": float(part.cos_own.mean()),
            "cos_best_other": float(part.cos_best_other.mean()),
            "margin_mean": float(part.margin.mean()),
            "margin_min": float(part.margin.min()),
            "margin_q": float(part.margin.quantile(FIDELITY_QUANTILE)),
            "worst": {"run": int(worst.run), "client": int(worst.client), "class": int(worst["class"])},
            "worst_train_nodes": int(worst.train_nodes),
        }
    l0 = labels[labels.run == labels.run.min()].pivot(index="client", columns="class", values="nodes")
    held = {str(int(k)): ", ".join(str(int(c)) for c in l0.columns if row[c] > 0) for k, row in l0.iterrows()}
    return {
        "runs": runs,
        "num_classes": num_classes,
        "chance": 1.0 / num_classes,
        "accuracy": {
            "mean": {m: float(v) for m, v in mean.items()},
            "std": {m: float(v) for m, v in stats["std"].fillna(0.0).items()},
            "min": {m: float(v) for m, v in stats["min"].items()},
            "max": {m: float(v) for m, v in stats["max"].items()},
            "per_run": {m: per_run[m].tolist() for m in per_run.columns},
        },
        "ghost": {
            "mean": float(mean[GHOST]),
            "best_baseline": best,
            "best_baseline_mean": float(mean[best]),
            "margin": float(mean[GHOST] - mean[best]),
            "margin_paired": diff,
            "above_chance": float(mean[GHOST] - 1.0 / num_classes),
            "wins_both": wins_both,
            "worst_run": float(per_run[GHOST].min()),
        },
        "ablation": ablation,
        "retention_at_scale_1": retention_at_scale_1,
        "fidelity": {"default_structure": default_structure, "by_structure": by_structure},
        "server": {"retention_over_nll_median": ratio, "norm_over_nll_median": norm_ratio},
        "labels_run0": {
            "clients": [int(k) for k in l0.index],
            "classes": [int(c) for c in l0.columns],
            "nodes": [[int(v) for v in row] for row in l0.to_numpy()],
            "held": held,
        },
    }


def summarize(tables: dict[str, Any], meta: dict) -> dict:
    """Every number the report shows or tests, from the evaluated tables (pandas frames as read back from their
    CSV files) and the evaluated meta (``graphs``: name -> its ``num_classes``..., ``fgw_structure``), per graph:

    - ``accuracy``: mean, std (0 where there is one run), min and max over runs per method, per-run values;
    - ``ghost``: GHOST's mean, the better baseline (one-shot FedAvg or local-only, by mean), the margin over it
      with the paired per-run difference (mean, standard error, wins), the margin over chance 1/C, the runs
      where GHOST beats both baselines, its worst run;
    - ``ablation``: per variant its mean accuracy and its paired difference from GHOST (mean, SE, wins), and
      ``retention_at_scale_1``: the lambda-scale flip (lambda_r counts in full) minus no retention, paired;
    - ``fidelity``: per FGW structure the (client, class) pairs, the fraction whose proxy mean is closest to
      its own class, the mean cosines, and the margin cos(own) - max cos(other): mean, minimum (the worst
      pair, which it is) and the :data:`FIDELITY_QUANTILE` quantile;
    - ``server``: per server model, the medians over the steps of the second block on (where retention acts)
      of lambda_r * retention / NLL and lambda_n * omega / NLL;
    - ``labels_run0``: the client x class node counts of the first run and the classes each client holds.

    ``worst``: the minimum over graphs of each gated number (margin over the better baseline, margin over
    chance, the :data:`FIDELITY_QUANTILE` quantile of the fidelity margin of GHOST's generators) and the graph
    where it is reached.
    """
    per_graph = {
        g: summarize_graph(tables, g, info["num_classes"], meta["fgw_structure"])
        for g, info in meta["graphs"].items()
    }

    def worst(fn) -> dict:
        vals = {g: fn(s) for g, s in per_graph.items()}
        g = min(vals, key=lambda k: vals[k] if vals[k] == vals[k] else float("-inf"))  # NaN counts as worst
        return {"value": vals[g], "graph": g}

    ds = meta["fgw_structure"]
    return {
        "graphs": per_graph,
        "worst": {
            "margin": worst(lambda s: s["ghost"]["margin"]),
            "above_chance": worst(lambda s: s["ghost"]["above_chance"]),
            "fidelity_margin": worst(
                lambda s: s["fidelity"]["by_structure"].get(ds, {}).get("margin_q", float("nan"))
            ),
        },
    }
