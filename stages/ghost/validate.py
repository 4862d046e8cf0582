"""Great Expectations on every prepared graph draw and partition: labels in range, features finite, no self-loops
or duplicate edges, edges undirected, every node in exactly one client per run, every client >= least_samples
nodes with at least one train node."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation
    from models.ghost.experiment import graph_file

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    runs, K = meta["runs"], meta["num_clients"]
    node_frames, edge_frames, assign_frames = [], [], []
    for name, info in meta["graphs"].items():
        for r in range(runs):
            g = np.load(graph_file(ctx.paths.prepared, name, r))
            x, y, e = g["x"], g["y"], g["edge_index"]
            n = len(y)
            node_frames.append(
                pd.DataFrame(
                    {
                        "graph": name,
                        "run": r,
                        "y_in_range": (y >= 0) & (y < info["num_classes"]),
                        "nonfinite_features": (~np.isfinite(x)).sum(axis=1),
                    }
                )
            )
            edges = pd.DataFrame({"src": e[0], "dst": e[1]})
            edges["in_range"] = (edges.src >= 0) & (edges.src < n) & (edges.dst >= 0) & (edges.dst < n)
            edges["self_loop"] = edges.src == edges.dst
            edges["multiplicity"] = edges.groupby(["src", "dst"]).src.transform("size")
            pairs = set(zip(e[0].tolist(), e[1].tolist(), strict=True))
            edges["reverse_present"] = [
                (b, a) in pairs for a, b in zip(e[0].tolist(), e[1].tolist(), strict=True)
            ]
            edge_frames.append(edges)
            assign_frames.append(pd.DataFrame({"graph": name, "run": r, "node": np.arange(n)}))
    nodes = pd.concat(node_frames)
    edges = pd.concat(edge_frames)
    part = pd.read_csv(ctx.paths.prepared / "partition.csv")
    assign = part.groupby(["graph", "run", "node"]).size().rename("assignments").reset_index()
    assign = assign.merge(pd.concat(assign_frames), how="right", on=["graph", "run", "node"]).fillna(
        {"assignments": 0}
    )
    clients = (
        part.groupby(["graph", "run", "client"])
        .agg(nodes=("node", "size"), train_nodes=("split", lambda s: int((s == 0).sum())))
        .reset_index()
    )
    G = len(meta["graphs"])
    expected = sum(
        runs * n if isinstance(n, int) else sum(n) for n in (i["num_nodes"] for i in meta["graphs"].values())
    )
    summaries = [
        validate_frame(
            nodes,
            "nodes",
            [Column("y_in_range", values=(True,)), Column("nonfinite_features", values=(0,))],
            min_rows=expected,
        ),
        validate_frame(
            edges,
            "edges",
            [
                Column("in_range", values=(True,)),
                Column("self_loop", values=(False,)),
                Column("multiplicity", values=(1,)),
                Column("reverse_present", values=(True,)),
            ],
        ),
        validate_frame(assign, "assignments", [Column("assignments", values=(1,))], min_rows=expected),
        validate_frame(
            clients,
            "clients",
            [
                Column("client", values=tuple(range(K))),
                Column("nodes", min=meta["least_samples"]),
                Column("train_nodes", min=1),
            ],
            min_rows=G * runs * K,
        ),
        validate_frame(part, "partition", [Column("split", values=(0, 1, 2))], min_rows=expected),
    ]
    write_validation(ctx.out, summaries)
