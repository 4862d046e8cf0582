"""The graph (a seeded SBM, or Planetoid from local raw files in data/ghost/input/) and one Dirichlet partition per
run (stream "partition", r):
graph.npz, partition.csv (run, node, client, split) and meta.json."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.errors import UserError
    from models.ghost.graph import load_planetoid, make_sbm
    from models.ghost.partition import PartitionError, make_partition

    p = ctx.params.prepare
    if p.source == "sbm":
        graph = make_sbm(
            p.num_nodes, p.num_classes, p.num_features, p.p_in, p.p_out, p.noise, ctx.seed_for("graph")
        )
    else:
        root = ctx.input_path("planetoid_root", p.planetoid_root)
        try:
            graph = load_planetoid(root, p.planetoid_name)
        except FileNotFoundError as exc:
            raise UserError(str(exc)) from None
    np.savez(ctx.out / "graph.npz", x=graph.x.numpy(), y=graph.y.numpy(), edge_index=graph.edge_index.numpy())
    frames = []
    for r in range(p.runs):
        try:
            part = make_partition(
                graph, p.num_clients, p.alpha, p.least_samples, seed=ctx.seed_for("partition", r)
            )
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
    ctx.write_json("meta.json", meta)
    ctx.log.info(
        "graph: %d nodes, %d edges, %d classes; %d partitions",
        meta["num_nodes"],
        meta["num_edges"],
        meta["num_classes"],
        p.runs,
    )
