"""GHOST's controlled experiment: what one run trains and measures, and the summaries the report shows.

A run r (its own seed s, a named stream of the paper's seed) on one Dirichlet partition of the graph:

- :func:`train_run`: each client's proxy generator G_k in both modes (:data:`.config.MODES`: the paper's reading
  and the official code's), the server's GHOST model in both modes, GHOST without the retention term in the
  headline mode, the local GCNs (one common initialisation) and their one-shot FedAvg
  theta = sum_k (n_k / n) theta_k, and the centralised GCN (the upper bound);
- :func:`evaluate_run`: the accuracy of every model on the server's test graph (the local models as their mean),
  GHOST's, FedAvg's and the local models' per-client accuracy, the proxy fidelity of both modes' generators
  (:func:`.api.proxy_fidelity`), the server's training curves and the label histogram of every client;
- :func:`summarize`: every number a claim or a table of the report needs, from the evaluated tables (means and
  standard deviations over runs, the per-run wins over the baselines, fidelity per mode, the medians of the
  server's extra terms relative to the NLL, the label counts of run 0).

:func:`load_federated` reads what the prepare stage wrote (``graph.npz`` and ``partition.csv``) back into a
:class:`.api.FederatedGraph`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import MODES, GhostConfig, headline

#: The evaluated tables (one CSV each), in the order they are written.
TABLES = ("accuracy", "per_client", "fidelity", "server_history", "labels")


def load_federated(prepared: Path, run: int):
    """The graph and run ``run``'s partition (as the prepare stage wrote them into ``prepared``) as a
    :class:`models.ghost.api.FederatedGraph`."""
    import numpy as np
    import pandas as pd

    from .api import federate
    from .graph import make_graph
    from .partition import Partition

    g = np.load(prepared / "graph.npz")
    graph = make_graph(g["edge_index"], g["x"], g["y"])
    part = pd.read_csv(prepared / "partition.csv")
    part = part[part.run == run].sort_values("node")
    k = int(part.client.max()) + 1
    return federate(graph, Partition(part.client.to_numpy(), part.split.to_numpy(), k))


@dataclass
class RunModels:
    """What :func:`train_run` trains: each mode's generators, every global model by name (``ghost_<mode>``,
    ``ghost_<mode>_noret``, ``local_<k>``, ``fedavg``, ``central``) and the training histories."""

    generators: dict[str, list] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    history: dict = field(default_factory=lambda: {"clients": {}, "server": {}})
    headline: str = "paper"

    @property
    def ghost(self):
        """GHOST in the headline mode."""
        return self.models[f"ghost_{self.headline}"]


def train_run(fed, cfg: GhostConfig, seed: int) -> RunModels:
    """Every training of one run, in this order (each starts from its own seeds, derived from ``seed``): per
    mode the proxies, GHOST and (headline mode only) GHOST without retention; the local GCNs and their one-shot
    FedAvg; the centralised GCN."""
    from . import api

    main, _ = headline(cfg)
    out = RunModels(headline=main)
    for mode in MODES:
        mcfg = dataclasses.replace(cfg, faithful_to_code=(mode == "code"))
        gens, out.history["clients"][mode] = api.train_proxies(fed, mcfg, seed)
        out.generators[mode] = gens
        variants = [(f"ghost_{mode}", True)] + ([(f"ghost_{mode}_noret", False)] if mode == main else [])
        for name, retention in variants:
            model, order, hist = api.train_global(fed, gens, mcfg, seed, retention=retention)
            out.models[name] = model
            out.history["server"][name] = {"order": order, "steps": hist}
    local = api.train_local(fed, cfg, seed)
    for k, m in enumerate(local):
        out.models[f"local_{k:02d}"] = m
    out.models["fedavg"] = api.fedavg(local, [c.graph.num_nodes for c in fed.clients])
    out.models["central"] = api.train_central(fed, cfg, seed)
    return out


def evaluate_run(
    run: int,
    fed,
    models: dict[str, Any],
    generators: dict[str, list],
    history: dict,
    main: str,
    samples: int,
    min_train: int,
    seed: int,
) -> dict[str, list[dict]]:
    """The rows of run ``run`` for each of :data:`TABLES`. ``models``: the global models by name (sorted),
    ``generators``: each mode's generators, ``history``: what :func:`train_run` recorded, ``main``: the headline
    mode; ``samples``, ``min_train`` and ``seed``: the proxy fidelity's (see :func:`.api.proxy_fidelity`)."""
    import numpy as np

    from . import api

    rows: dict[str, list[dict]] = {name: [] for name in TABLES}
    names = list(models)
    accuracy = {n: api.evaluate(m, fed) for n, m in models.items()}
    local = [accuracy[n] for n in names if n.startswith("local_")]
    rows["accuracy"] += [
        {"run": run, "method": n, "accuracy": a} for n, a in accuracy.items() if not n.startswith("local_")
    ]
    rows["accuracy"].append({"run": run, "method": "local", "accuracy": float(np.mean(local))})
    sizes = [c.graph.num_nodes for c in fed.clients]
    ghost_pc = api.per_client_accuracy(models[f"ghost_{main}"], fed)
    fedavg_pc = api.per_client_accuracy(models["fedavg"], fed)
    for k, local_acc in enumerate(local):
        rows["per_client"].append(
            {
                "run": run,
                "client": k,
                "nodes": sizes[k],
                "ghost": ghost_pc[k],
                "fedavg": fedavg_pc[k],
                "local_on_server_test": local_acc,
            }
        )
    for mode in MODES:
        found = api.proxy_fidelity(generators[mode], fed, samples, min_train, seed=seed)
        rows["fidelity"] += [{"run": run, "mode": mode, **row} for row in found]
    for name, h in history["server"].items():
        rows["server_history"] += [
            {"run": run, "method": name, "step": i, **s} for i, s in enumerate(h["steps"])
        ]
    counts = fed.histograms(split=None)
    rows["labels"] += [
        {"run": run, "client": k, "class": c, "nodes": int(counts[k, c])}
        for k in range(counts.shape[0])
        for c in range(counts.shape[1])
    ]
    return rows


def summarize(tables: dict[str, Any], meta: dict) -> dict:
    """Every number the report shows or tests, from the evaluated tables (pandas frames as read back from their
    CSV files) and the evaluated meta (``headline``, ``runs``, ``num_classes``).

    - ``accuracy``: mean, std (0 where there is one run), min and max over runs per method, each method's
      accuracies in run order;
    - ``ghost``: GHOST's (headline mode) mean, the better baseline (one-shot FedAvg or local-only, by mean), the
      margin over it and over chance 1/C, the runs where GHOST beats both baselines, its worst run;
    - ``fidelity``: the headline mode's fraction (and count) of (client, class) pairs whose mean generated vector
      is closest to the real centroid, and per mode: pairs, that fraction, mean cos to the own centroid and to
      the best other one;
    - ``server``: per server model, the medians over the steps of the second block on (where retention acts) of
      lambda_r * retention / NLL and lambda_n * omega / NLL;
    - ``labels_run0``: the client x class node counts of run 0 and the classes each client holds.
    """
    acc, fid, srv, labels = tables["accuracy"], tables["fidelity"], tables["server_history"], tables["labels"]
    main, runs, C = meta["headline"], meta["runs"], meta["num_classes"]
    stats = acc.groupby("method").accuracy.agg(["mean", "std", "min", "max"])
    mean = stats["mean"].to_dict()
    g = f"ghost_{main}"
    best = "fedavg" if mean["fedavg"] >= mean["local"] else "local"
    best_base = max(mean["fedavg"], mean["local"])
    per_run = acc.pivot(index="run", columns="method", values="accuracy")
    wins = int((per_run[g] > per_run[["fedavg", "local"]].max(axis=1)).sum())
    fid_main = fid[fid["mode"] == main] if len(fid) else fid
    blocks = srv[srv.block > 0]  # from the second block on, where retention is active
    ratio = {
        name: float((part.retention / part.nll.clip(lower=1e-12)).median())
        for name, part in blocks.groupby("method")
    }
    norm_ratio = {
        name: float((part.norm_term / part.nll.clip(lower=1e-12)).median())
        for name, part in blocks.groupby("method")
    }
    l0 = labels[labels.run == 0].pivot(index="client", columns="class", values="nodes")
    held = {
        str(k): ", ".join(str(int(c)) for c in part[part.nodes > 0]["class"])
        for k, part in labels[labels.run == 0].groupby("client")
    }
    return {
        "headline": main,
        "runs": runs,
        "chance": 1.0 / C,
        "accuracy": {
            "mean": {m: float(v) for m, v in mean.items()},
            "std": {m: float(v) for m, v in stats["std"].fillna(0.0).items()},
            "min": {m: float(v) for m, v in stats["min"].items()},
            "max": {m: float(v) for m, v in stats["max"].items()},
            "per_run": {m: acc[acc.method == m].sort_values("run").accuracy.tolist() for m in mean},
        },
        "ghost": {
            "method": g,
            "mean": float(mean[g]),
            "best_baseline": best,
            "best_baseline_mean": float(best_base),
            "margin": float(mean[g] - best_base),
            "above_chance": float(mean[g] - 1.0 / C),
            "wins": wins,
            "worst_run": float(per_run[g].min()),
        },
        "fidelity": {
            "headline": {
                "closest": float(fid_main.closest.mean()) if len(fid_main) else float("nan"),
                "closest_count": int(fid_main.closest.sum()) if len(fid_main) else 0,
                "pairs": len(fid_main),
            },
            "by_mode": {
                mode: {
                    "pairs": len(part),
                    "closest": float(part.closest.mean()),
                    "cos_own": float(part.cos_own.mean()),
                    "cos_best_other": float(part.cos_best_other.mean()),
                }
                for mode, part in (fid.groupby("mode") if len(fid) else ())
            },
        },
        "server": {"retention_over_nll_median": ratio, "norm_over_nll_median": norm_ratio},
        "labels_run0": {
            "clients": [int(k) for k in l0.index],
            "classes": [int(c) for c in l0.columns],
            "nodes": [[int(v) for v in row] for row in l0.to_numpy()],
            "held": held,
        },
    }
