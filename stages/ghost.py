"""GHOST: one-shot federated graph learning with proxy models, the controlled CPU reproduction.

Qian, Wan, Huang, Zhang, Wu, Du, Ye. "GHOST: Generalizable One-Shot Federated Graph Learning with Proxy-Based
Topology Knowledge Retention". ICML 2025. https://github.com/JiaruQian/GHOST

- Clients (label-skew Dirichlet partition, alpha = 0.05, 10 clients) each fit a class-conditional generator
  G_k(z, y) to their graph: L = lambda_d KL(softmax X || softmax X_hat) + 1 - mean cos(X_hat, X)
  + lambda_f FGW_{0.5}((A, X), (A_kNN(X_hat), X_hat)), and upload only G_k (one round).
- The server trains a fresh 2-layer GCN on proxy graphs only, client by client (M = 3 draws x T_G = 5 steps):
  NLL + lambda_r sum_{i<j} sum_p |Omega_i| (theta - theta*_i)^2, Omega_i = d/dtheta sum_{(u,v)} e_uv^2 with
  e_uv = (h_u W_1) . tanh(h_v W_1) (topology-consistency criterion), theta*_i the parameters after block i.
- Evaluation: accuracy of the global GCN on the global subgraph of all clients' test nodes.

Stages: prepare (the SBM graph, or Planetoid's raw files, and one partition per run) -> validate (GX: the graph
and the partitions) -> train (Lightning: proxies in both modes, GHOST, GHOST without retention, local GCNs,
one-shot FedAvg, centralised GCN; safetensors) -> evaluate (accuracies, per-client accuracies, proxy fidelity)
-> report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from icml25.params import Empty
from icml25.registry import STAGES, Claim, Paper
from icml25.runner import StageContext
from models.ghost.config import GhostConfig

CLAIMS = (
    Claim(
        "beats_baselines",
        "GHOST's mean accuracy minus the better of one-shot FedAvg's and the local models' mean accuracy",
        "Table 1 (GHOST above one-shot FL baselines on non-IID clients)",
        ">=",
        0.03,
    ),
    Claim(
        "above_chance",
        "GHOST's mean accuracy minus chance 1/C",
        "Table 1",
        ">=",
        0.25,
    ),
    Claim(
        "proxy_fidelity",
        "fraction of (client, class) pairs with >= 5 train nodes whose mean generated vector is cosine-closest to "
        "the client's real class centroid",
        "Sec. 4.1 (proxies capture local knowledge)",
        ">=",
        0.9,
    ),
)


@dataclass(frozen=True)
class Prepare:
    source: Literal["sbm", "planetoid"] = "sbm"
    num_nodes: int = field(default=1200, metadata={"ge": 20})
    num_classes: int = field(default=4, metadata={"ge": 2})
    num_features: int = field(default=32, metadata={"ge": 1})
    p_in: float = field(default=0.04, metadata={"ge": 0.0, "le": 1.0})
    p_out: float = field(default=0.004, metadata={"ge": 0.0, "le": 1.0})
    noise: float = field(default=1.5, metadata={"ge": 0.0})
    planetoid_root: str = "data/ghost/raw"
    planetoid_name: Literal["Cora", "CiteSeer", "PubMed"] = "Cora"
    num_clients: int = field(default=10, metadata={"ge": 2})
    alpha: float = field(default=0.05, metadata={"gt": 0.0})
    least_samples: int = field(default=5, metadata={"ge": 1})
    runs: int = field(default=3, metadata={"ge": 1})


@dataclass(frozen=True)
class Evaluate:
    fidelity_samples: int = field(default=200, metadata={"ge": 1})
    fidelity_min_train: int = field(default=5, metadata={"ge": 1})


PAPER = Paper(
    slug="ghost",
    citation="Qian, Wan, Huang, Zhang, Wu, Du, Ye. *GHOST: Generalizable One-Shot Federated Graph Learning with "
    "Proxy-Based Topology Knowledge Retention*. ICML 2025.",
    url="https://github.com/JiaruQian/GHOST",
    schema={
        "prepare": Prepare,
        "validate": Empty,
        "train": GhostConfig,
        "evaluate": Evaluate,
        "report": Empty,
    },
    claims=CLAIMS,
)

MODES = ("paper", "code")
SPLIT_NAMES = ("train", "val", "test")


def headline(cfg: GhostConfig) -> tuple[str, str]:
    """(the mode GHOST's claims use, the other mode)."""
    return ("code", "paper") if cfg.faithful_to_code else ("paper", "code")


@PAPER.stage("prepare")
def prepare(ctx: StageContext) -> None:
    """The graph (seeded SBM, or Planetoid from local raw files) and one Dirichlet partition per run."""
    import numpy as np
    import pandas as pd

    from icml25.errors import UserError
    from models.ghost.graph import load_planetoid, make_sbm
    from models.ghost.partition import PartitionError, make_partition

    p = ctx.params.prepare
    if p.source == "sbm":
        graph = make_sbm(p.num_nodes, p.num_classes, p.num_features, p.p_in, p.p_out, p.noise, ctx.seed)
    else:
        root = ctx.paths.root / p.planetoid_root
        try:
            graph = load_planetoid(root, p.planetoid_name)
        except FileNotFoundError as exc:
            raise UserError(str(exc)) from None
    np.savez(ctx.out / "graph.npz", x=graph.x.numpy(), y=graph.y.numpy(), edge_index=graph.edge_index.numpy())
    frames = []
    for r in range(p.runs):
        try:
            part = make_partition(graph, p.num_clients, p.alpha, p.least_samples, seed=ctx.seed + r)
        except PartitionError as exc:
            raise UserError(f"papers.ghost.prepare: {exc}") from None
        frames.append(
            pd.DataFrame(
                {"run": r, "node": np.arange(graph.num_nodes), "client": part.client, "split": part.split}
            )
        )
    pd.concat(frames).to_csv(ctx.out / "partition.csv", index=False)
    meta = {
        "source": p.source,
        "num_nodes": graph.num_nodes,
        "num_classes": graph.num_classes,
        "num_features": graph.num_features,
        "num_edges": int(graph.edge_index.shape[1]) // 2,
        "num_clients": p.num_clients,
        "least_samples": p.least_samples,
        "runs": p.runs,
    }
    (ctx.out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    ctx.log.info(
        "graph: %d nodes, %d edges, %d classes; %d partitions",
        meta["num_nodes"],
        meta["num_edges"],
        meta["num_classes"],
        p.runs,
    )


@PAPER.stage("validate")
def validate(ctx: StageContext) -> None:
    """Labels in range, features finite, no self-loops or duplicate edges, edges undirected, every node in
    exactly one client per run, every client >= least_samples nodes with at least one train node."""
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    g = np.load(ctx.paths.prepared / "graph.npz")
    meta = json.loads((ctx.paths.prepared / "meta.json").read_text())
    n, C, runs, K = meta["num_nodes"], meta["num_classes"], meta["runs"], meta["num_clients"]
    x, y, e = g["x"], g["y"], g["edge_index"]
    nodes = pd.DataFrame({"y": y, "nonfinite_features": (~np.isfinite(x)).sum(axis=1)})
    edges = pd.DataFrame({"src": e[0], "dst": e[1]})
    edges["self_loop"] = edges.src == edges.dst
    edges["multiplicity"] = edges.groupby(["src", "dst"]).src.transform("size")
    pairs = set(zip(e[0].tolist(), e[1].tolist(), strict=True))
    edges["reverse_present"] = [(b, a) in pairs for a, b in zip(e[0].tolist(), e[1].tolist(), strict=True)]
    part = pd.read_csv(ctx.paths.prepared / "partition.csv")
    assign = part.groupby(["run", "node"]).size().rename("assignments").reset_index()
    assign = assign.merge(
        pd.MultiIndex.from_product([range(runs), range(n)], names=["run", "node"]).to_frame(index=False),
        how="right",
        on=["run", "node"],
    ).fillna({"assignments": 0})
    clients = (
        part.groupby(["run", "client"])
        .agg(nodes=("node", "size"), train_nodes=("split", lambda s: int((s == 0).sum())))
        .reset_index()
    )
    summaries = [
        validate_frame(
            nodes,
            "nodes",
            [Column("y", values=tuple(range(C))), Column("nonfinite_features", values=(0,))],
            min_rows=n,
        ),
        validate_frame(
            edges,
            "edges",
            [
                Column("src", min=0, max=n - 1),
                Column("dst", min=0, max=n - 1),
                Column("self_loop", values=(False,)),
                Column("multiplicity", values=(1,)),
                Column("reverse_present", values=(True,)),
            ],
        ),
        validate_frame(assign, "assignments", [Column("assignments", values=(1,))], min_rows=runs * n),
        validate_frame(
            clients,
            "clients",
            [
                Column("client", values=tuple(range(K))),
                Column("nodes", min=meta["least_samples"]),
                Column("train_nodes", min=1),
            ],
            min_rows=runs * K,
        ),
        validate_frame(part, "partition", [Column("split", values=(0, 1, 2))], min_rows=runs * n),
    ]
    write_validation(ctx.out, summaries)


def load_federated(prepared, run: int):
    """The graph and run ``run``'s partition as a :class:`models.ghost.api.FederatedGraph`."""
    import numpy as np
    import pandas as pd

    from models.ghost.api import federate
    from models.ghost.graph import make_graph
    from models.ghost.partition import Partition

    g = np.load(prepared / "graph.npz")
    graph = make_graph(g["edge_index"], g["x"], g["y"])
    part = pd.read_csv(prepared / "partition.csv")
    part = part[part.run == run].sort_values("node")
    k = int(part.client.max()) + 1
    return federate(graph, Partition(part.client.to_numpy(), part.split.to_numpy(), k))


@PAPER.stage("train")
def train(ctx: StageContext) -> None:
    """Per run r (seed + r): both modes' proxies; GHOST in both modes and without retention in the headline
    mode; local GCNs (common init) and their one-shot FedAvg; the centralised GCN. All saved as safetensors."""
    import dataclasses

    from models.ghost import api
    from models.ghost.store import gcn_shape, generator_shape, save_module

    cfg: GhostConfig = ctx.params.train
    main, other = headline(cfg)
    runs = json.loads((ctx.paths.prepared / "meta.json").read_text())["runs"]
    for r in range(runs):
        seed = ctx.seed + r
        fed = load_federated(ctx.paths.prepared, r)
        out = ctx.out / f"run{r}"
        history: dict = {"clients": {}, "server": {}}
        for mode in MODES:
            mcfg = dataclasses.replace(cfg, faithful_to_code=(mode == "code"))
            gens, history["clients"][mode] = api.train_proxies(fed, mcfg, seed)
            for k, g in enumerate(gens):
                save_module(g, out / "generators" / mode / f"client{k:02d}.safetensors", generator_shape(g))
            variants = [(f"ghost_{mode}", True)] + ([(f"ghost_{mode}_noret", False)] if mode == main else [])
            for name, retention in variants:
                model, order, hist = api.train_global(fed, gens, mcfg, seed, retention=retention)
                save_module(model, out / "models" / f"{name}.safetensors", gcn_shape(model))
                history["server"][name] = {"order": order, "steps": hist}
                if name == f"ghost_{main}":
                    ghost = model
        local = api.train_local(fed, cfg, seed)
        for k, m in enumerate(local):
            save_module(m, out / "models" / f"local_{k:02d}.safetensors", gcn_shape(m))
        avg = api.fedavg(local, [c.graph.num_nodes for c in fed.clients])
        save_module(avg, out / "models" / "fedavg.safetensors", gcn_shape(avg))
        central = api.train_central(fed, cfg, seed)
        save_module(central, out / "models" / "central.safetensors", gcn_shape(central))
        (out / "history.json").write_text(json.dumps(history) + "\n")
        ctx.log.info(
            "run %d: GHOST (%s) %.3f, FedAvg %.3f", r, main, api.evaluate(ghost, fed), api.evaluate(avg, fed)
        )
    (ctx.out / "meta.json").write_text(json.dumps({"runs": runs, "headline": main, "other": other}) + "\n")


def _load(run_dir, name: str):
    from models.ghost.store import load_gcn

    return load_gcn(run_dir / "models" / f"{name}.safetensors")


@PAPER.stage("evaluate")
def evaluate(ctx: StageContext) -> None:
    """Accuracy of every model on the server's test graph, GHOST's and the local models' per-client accuracy,
    proxy fidelity of both modes' generators, the server's training curves and the label histograms."""
    import numpy as np
    import pandas as pd

    from models.ghost import api
    from models.ghost.store import load_generator

    e = ctx.params.evaluate
    meta = json.loads((ctx.paths.trained / "meta.json").read_text())
    acc, per_client, fidelity, server, labels = [], [], [], [], []
    for r in range(meta["runs"]):
        fed = load_federated(ctx.paths.prepared, r)
        run_dir = ctx.paths.trained / f"run{r}"
        names = sorted(p.stem for p in (run_dir / "models").glob("*.safetensors"))
        models = {n: _load(run_dir, n) for n in names}
        accuracy = {n: api.evaluate(m, fed) for n, m in models.items()}
        local = [accuracy[n] for n in names if n.startswith("local_")]
        acc += [
            {"run": r, "method": n, "accuracy": a} for n, a in accuracy.items() if not n.startswith("local_")
        ]
        acc.append({"run": r, "method": "local", "accuracy": float(np.mean(local))})
        sizes = [c.graph.num_nodes for c in fed.clients]
        ghost_pc = api.per_client_accuracy(models[f"ghost_{meta['headline']}"], fed)
        fedavg_pc = api.per_client_accuracy(models["fedavg"], fed)
        for k, local_acc in enumerate(local):
            per_client.append(
                {
                    "run": r,
                    "client": k,
                    "nodes": sizes[k],
                    "ghost": ghost_pc[k],
                    "fedavg": fedavg_pc[k],
                    "local_on_server_test": local_acc,
                }
            )
        for mode in MODES:
            gens = [load_generator(p) for p in sorted((run_dir / "generators" / mode).glob("*.safetensors"))]
            rows = api.proxy_fidelity(gens, fed, e.fidelity_samples, e.fidelity_min_train, seed=ctx.seed + r)
            fidelity += [{"run": r, "mode": mode, **row} for row in rows]
        hist = json.loads((run_dir / "history.json").read_text())
        for name, h in hist["server"].items():
            server += [{"run": r, "method": name, "step": i, **s} for i, s in enumerate(h["steps"])]
        counts = fed.histograms(split=None)
        labels += [
            {"run": r, "client": k, "class": c, "nodes": int(counts[k, c])}
            for k in range(counts.shape[0])
            for c in range(counts.shape[1])
        ]
    out = ctx.out
    pd.DataFrame(acc).to_csv(out / "accuracy.csv", index=False)
    pd.DataFrame(per_client).to_csv(out / "per_client.csv", index=False)
    pd.DataFrame(fidelity).to_csv(out / "fidelity.csv", index=False)
    pd.DataFrame(server).to_csv(out / "server_history.csv", index=False)
    pd.DataFrame(labels).to_csv(out / "labels.csv", index=False)
    (out / "meta.json").write_text(
        json.dumps({**meta, **json.loads((ctx.paths.prepared / "meta.json").read_text())}, indent=2) + "\n"
    )
    ctx.log.info("%s", pd.DataFrame(acc).groupby("method").accuracy.mean().round(3).to_dict())


@PAPER.stage("report", sections=STAGES)
def report(ctx: StageContext) -> None:
    from icml25.reporting import write_report

    write_report(ctx, PAPER, build_report(ctx))


METHOD_LABELS = {
    "ghost_paper": "GHOST (paper)",
    "ghost_code": "GHOST (faithful_to_code)",
    "ghost_paper_noret": "GHOST (paper) w/o retention",
    "ghost_code_noret": "GHOST (faithful_to_code) w/o retention",
    "fedavg": "one-shot FedAvg",
    "local": "local-only (mean over clients)",
    "central": "centralised GCN (bound)",
}


def build_report(ctx: StageContext):
    """Claims, tables and figures from data/ghost/evaluated (nothing typed in)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from icml25.reporting import Report, fmt, table

    ev = ctx.paths.evaluated
    cfg: GhostConfig = ctx.params.train
    prep = ctx.params.prepare
    meta = json.loads((ev / "meta.json").read_text())
    main = meta["headline"]
    acc = pd.read_csv(ev / "accuracy.csv")
    fid = pd.read_csv(ev / "fidelity.csv")
    pc = pd.read_csv(ev / "per_client.csv")
    srv = pd.read_csv(ev / "server_history.csv")
    labels = pd.read_csv(ev / "labels.csv")
    C = meta["num_classes"]
    stats = acc.groupby("method").accuracy.agg(["mean", "std", "min", "max"])
    mean = stats["mean"].to_dict()
    g = f"ghost_{main}"
    best_base = max(mean["fedavg"], mean["local"])
    base_name = "one-shot FedAvg" if mean["fedavg"] >= mean["local"] else "local-only"
    fid_main = fid[fid["mode"] == main]
    fidelity = float(fid_main.closest.mean()) if len(fid_main) else float("nan")

    rep = Report()
    rep.values = {
        "beats_baselines": mean[g] - best_base,
        "above_chance": mean[g] - 1.0 / C,
        "proxy_fidelity": fidelity,
    }
    per_run = acc.pivot(index="run", columns="method", values="accuracy")
    wins = int((per_run[g] > per_run[["fedavg", "local"]].max(axis=1)).sum())
    rep.reasons["beats_baselines"] = (
        f"GHOST ({main}) {fmt(mean[g])} vs {base_name} {fmt(best_base)} (means over {meta['runs']} runs); GHOST "
        f"is ahead of both baselines in {wins} of {meta['runs']} runs (worst run: {fmt(float(per_run[g].min()), 3)})"
    )
    rep.reasons["above_chance"] = f"GHOST ({main}) {fmt(mean[g])}, chance 1/{C} = {fmt(1.0 / C)}"
    rep.reasons["proxy_fidelity"] = (
        f"{int(fid_main.closest.sum())} of {len(fid_main)} (client, class) pairs over {meta['runs']} runs"
        if len(fid_main)
        else "no (client, class) pair has enough train nodes"
    )

    blocks = srv[srv.step >= cfg.server_steps]  # from the second block on, where retention is active
    ratio = {
        name: float((part.retention / part.nll.clip(lower=1e-12)).median())
        for name, part in blocks.groupby("method")
    }
    norm_ratio = {
        name: float((part.norm_term / part.nll.clip(lower=1e-12)).median())
        for name, part in blocks.groupby("method")
    }
    rep.metrics = {
        "accuracy_mean": {m: float(v) for m, v in mean.items()},
        "accuracy_std": {m: float(v) for m, v in stats["std"].fillna(0.0).items()},
        "proxy_fidelity": {m: float(part.closest.mean()) for m, part in fid.groupby("mode")},
        "retention_over_nll_median": ratio,
        "chance": 1.0 / C,
    }
    rep.claims_text = """
- One round of communication: each client uploads a proxy model (a class-conditional feature generator fitted
  with a feature loss and a fused Gromov-Wasserstein term to its own graph); the server trains a global GNN on
  proxy graphs alone, client by client, and consolidates the parameters that carry topological knowledge (the
  topology-consistency criterion and a retention penalty) against catastrophic forgetting.
- Table 1: GHOST beats state-of-the-art one-shot FL and FGL methods on seven real graphs (Cora, CiteSeer,
  PubMed, Chameleon, Amazon-Photo, Coauthor-CS, ogbn-arxiv) under strong label skew (Dirichlet alpha = 0.05,
  10 clients, 20/40/40 splits). The numbers themselves could not be retrieved here (spec, section c).
- Ablations: retention matters (GHOST vs GHOST without the retention term).
"""

    order = [m for m in METHOD_LABELS if m in mean]
    rows = []
    for m in order:
        runs_acc = acc[acc.method == m].sort_values("run").accuracy.tolist()
        rows.append(
            {
                "method": METHOD_LABELS[m],
                "mean accuracy": float(mean[m]),
                "std": float(stats.loc[m, "std"]) if meta["runs"] > 1 else 0.0,
                "per run": ", ".join(fmt(a, 3) for a in runs_acc),
            }
        )
    fig, ax = plt.subplots(figsize=(9.5, 3.2))
    ax.bar(
        range(len(order)),
        [mean[m] for m in order],
        yerr=[stats.loc[m, "std"] if meta["runs"] > 1 else 0.0 for m in order],
        capsize=4,
        color=["#c44e52" if m.startswith("ghost") else "#4c72b0" for m in order],
    )
    ax.axhline(1.0 / C, color="k", ls="--", lw=1, label=f"chance 1/{C}")
    ax.set_xticks(range(len(order)), [METHOD_LABELS[m].replace(" (", "\n(") for m in order], fontsize=7)
    ax.set_ylabel("test accuracy (server test graph)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    acc_md = rep.figure("accuracy.png", fig, f"accuracy per method: mean and std over {meta['runs']} runs")
    plt.close(fig)

    l0 = labels[labels.run == 0].pivot(index="client", columns="class", values="nodes")
    fig, ax = plt.subplots(figsize=(7, 3))
    bottom = np.zeros(len(l0))
    for c in l0.columns:
        ax.bar(l0.index, l0[c], bottom=bottom, label=f"class {c}")
        bottom += l0[c].to_numpy()
    ax.set_xlabel("client")
    ax.set_ylabel("nodes")
    ax.set_xticks(l0.index)
    ax.legend(fontsize=7, ncols=min(C, 6))
    lab_md = rep.figure(
        "label_distribution.png",
        fig,
        f"label distribution per client (run 0, Dirichlet alpha = {prep.alpha})",
    )
    plt.close(fig)

    pc0 = pc[pc.run == 0]
    held = {
        k: ", ".join(str(int(c)) for c in part[part.nodes > 0]["class"])
        for k, part in labels[labels.run == 0].groupby("client")
    }
    pc_rows = [
        {
            "client": int(r.client),
            "nodes": int(r.nodes),
            "classes held": held[int(r.client)],
            f"GHOST ({main}) on its test nodes": r.ghost,
            "FedAvg on its test nodes": r.fedavg,
            "its local model on the server test graph": r.local_on_server_test,
        }
        for r in pc0.itertuples()
    ]
    fid_rows = [
        {
            "mode": mode + (" (headline)" if mode == main else ""),
            "pairs": len(part),
            "closest to own centroid": float(part.closest.mean()),
            "mean cos to own centroid": float(part.cos_own.mean()),
            "mean best cos to another centroid": float(part.cos_best_other.mean()),
        }
        for mode, part in fid.groupby("mode")
    ]
    ret_rows = [
        {
            "method": METHOD_LABELS.get(m, m),
            "median lambda_r * retention / NLL": ratio[m],
            "median lambda_n * omega / NLL (constant, no gradient)": norm_ratio[m],
        }
        for m in sorted(ratio)
    ]
    main_label = (
        "the paper's method" if main == "paper" else "the official code's behaviour (faithful_to_code)"
    )
    rep.measured = (
        f"Data: {meta['source']} graph, {meta['num_nodes']} nodes, {meta['num_edges']} edges, {C} classes, "
        f"{meta['num_features']} features; {meta['num_clients']} clients, Dirichlet alpha = {prep.alpha}, "
        f"{meta['runs']} runs (run r: partition and training seed {ctx.seed} + r). The claims use {main_label}.\n\n"
        + table(rows)
        + "\n"
        + acc_md
        + "\n"
        + lab_md
        + "\nPer-client accuracy (run 0):\n\n"
        + table(pc_rows)
        + "\nProxy fidelity (mean of "
        + f"{ctx.params.evaluate.fidelity_samples} generated vectors per (client, class) with >= "
        + f"{ctx.params.evaluate.fidelity_min_train} train nodes), all runs:\n\n"
        + table(fid_rows)
        + "\nSize of the server's extra terms relative to the NLL (median over the steps of the second block on, "
        "all runs). In the paper's reading Omega is zero on conv2, which L_topo does not involve, so retention "
        "acts on conv1 only; the official code's stale gradient adds the last NLL step's gradient to Omega.\n\n"
        + table(ret_rows)
        + f"\nGHOST ({main}) with vs without retention: {fmt(mean[g])} vs {fmt(mean.get(g + '_noret', float('nan')))}; "
        f"paper vs faithful_to_code: {fmt(mean['ghost_paper'])} vs {fmt(mean['ghost_code'])}; centralised bound "
        f"{fmt(mean['central'])} (not gated).\n"
    )
    rep.differences = f"""
- Data: a stochastic block model ({prep.num_nodes} nodes, {C} classes, p_in = {prep.p_in}, p_out = {prep.p_out},
  features mu_y + {prep.noise} eps in {prep.num_features} dimensions) instead of the paper's seven real graphs;
  `papers.ghost.prepare.source: planetoid` reads Cora/CiteSeer/PubMed from local Planetoid raw files instead
  (no downloads here). The spec expected a GCN near 85% on this SBM; the centralised GCN measures
  {fmt(mean["central"])}, so the graph is easier than planned.
- Baselines: the paper compares with published one-shot FL/FGL methods whose list and numbers were not
  retrievable; here the baselines are local-only GCNs, one-shot FedAvg (node-count weighted average of the local
  GCNs trained from one common initialisation, {cfg.local_epochs} epochs) and a centralised GCN (trained on the
  global graph without the test nodes), all with the GHOST backbone.
- Paper vs official code (`papers.ghost.train.faithful_to_code`, now `{str(cfg.faithful_to_code).lower()}`; both are
  trained and reported): the code's client FGW term compares the real graph with the identity (`A_new // 2`),
  counts each pseudo-graph self-loop twice, multiplies lambda_r and lambda_n by 1e-11, computes Omega on top of
  the last optimiser step's stale gradient, and asks every generator for all classes in equal numbers (also
  classes the client never saw). The paper's reading uses the kNN adjacency as C2, one self-loop, lambda_r =
  {cfg.lambda_r} as stated, Omega from L_topo alone, and labels in each client's own train-label proportions.
- The lambda_n * omega term is a constant in both modes (omega is computed once per block; the official code holds
  it as a Python float), so it never changes training; its size is logged above.
- The criterion's edge loop is vectorised (a sum over the edge list, self-loops weighted by their multiplicity);
  the GCN propagates with a sparse normalised adjacency equal to GCNConv's (tested). Generators keep dropout on
  when sampling, as the official code never switches them to eval mode.
- Scale: {cfg.client_epochs} client epochs, M = {cfg.repeats}, T_G = {cfg.server_steps} as in the paper; CPU only.
"""
    return rep
