"""Great Expectations on the prepared graph and partitions: labels in range, features finite, no self-loops or
duplicate edges, edges undirected, every node in exactly one client per run, every client >= least_samples nodes
with at least one train node."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    g = np.load(ctx.paths.prepared / "graph.npz")
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
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
