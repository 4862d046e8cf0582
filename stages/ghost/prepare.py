"""Every graph's draw and Dirichlet partition per run: the SBM drawn afresh per run (stream "graph", "sbm", r), the
digits k-NN graph on a fresh subsample of sklearn's bundled images per run (stream "graph", "digits", r), or
Planetoid from local raw files in data/ghost/input/ (the same graph every run); partitions from stream
"partition", graph, r. Writes <graph>/run<r>.npz, partition.csv (graph, run, node, client, split) and
meta.json."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.errors import UserError
    from models.ghost.graph import load_planetoid, make_digits_knn, make_sbm
    from models.ghost.partition import PartitionError, make_partition

    p = ctx.params.prepare
    if len(set(p.graphs)) != len(p.graphs) or not p.graphs:
        raise UserError(f"papers.ghost.prepare.graphs: name each graph once, got {list(p.graphs)}")
    planetoid = None
    if "planetoid" in p.graphs:
        root = ctx.input_path("planetoid_root", p.planetoid_root)
        try:
            planetoid = load_planetoid(root, p.planetoid_name)
        except FileNotFoundError as exc:
            raise UserError(str(exc)) from None
    frames, graphs = [], {}
    for name in p.graphs:
        info = {}
        for r in range(p.runs):
            if name == "sbm":
                g = make_sbm(
                    p.num_nodes,
                    p.num_classes,
                    p.num_features,
                    p.p_in,
                    p.p_out,
                    p.noise,
                    ctx.seed_for("graph", name, r),
                )
            elif name == "digits":
                g = make_digits_knn(p.digits_nodes, p.digits_knn, ctx.seed_for("graph", name, r))
            else:
                g = planetoid
            (ctx.out / name).mkdir(exist_ok=True)
            np.savez_compressed(
                ctx.out / name / f"run{r}.npz", x=g.x.numpy(), y=g.y.numpy(), edge_index=g.edge_index.numpy()
            )
            try:
                part = make_partition(
                    g, p.num_clients, p.alpha, p.least_samples, seed=ctx.seed_for("partition", name, r)
                )
            except PartitionError as exc:
                raise UserError(f"papers.ghost.prepare ({name}, run {r}): {exc}") from None
            frames.append(
                pd.DataFrame(
                    {
                        "graph": name,
                        "run": r,
                        "node": np.arange(g.num_nodes),
                        "client": part.client,
                        "split": part.split,
                    }
                )
            )
            info.setdefault("num_nodes", []).append(g.num_nodes)
            info.setdefault("num_edges", []).append(int(g.edge_index.shape[1]) // 2)
            info["num_classes"] = g.num_classes
            info["num_features"] = g.num_features
        graphs[name] = {
            "num_classes": info["num_classes"],
            "num_features": info["num_features"],
            "num_nodes": info["num_nodes"][0] if len(set(info["num_nodes"])) == 1 else info["num_nodes"],
            "num_edges_mean": float(np.mean(info["num_edges"])),
        }
        ctx.log.info(
            "%s: %s nodes, %.0f edges on average, %d classes; %d runs",
            name,
            graphs[name]["num_nodes"],
            graphs[name]["num_edges_mean"],
            info["num_classes"],
            p.runs,
        )
    pd.concat(frames).to_csv(ctx.out / "partition.csv", index=False)
    meta = {
        "graphs": graphs,
        "num_clients": p.num_clients,
        "least_samples": p.least_samples,
        "runs": p.runs,
    }
    ctx.write_json("meta.json", meta)
