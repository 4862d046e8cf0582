"""Great Expectations on every prepared graph draw and partition: each draw's arrays there with their types and
shapes (x float nodes x features, y integer, edge_index integer 2 x edges; the nodes and features meta.json
records), labels in range, features finite, no self-loops or duplicate edges, edges undirected; partition.csv's
columns by name and type (graph, run, node, client, split) with one row per node and run, every node in exactly
one client per run, every client >= least_samples nodes with at least one train node."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

GRAPH_ARRAYS = {"x": ("float", 2), "y": ("integer", 1), "edge_index": ("integer", 2)}


def _nodes(info: dict, r: int) -> int:
    """The nodes of run r's draw as meta.json records them (one count, or one per run)."""
    n = info["num_nodes"]
    return n if isinstance(n, int) else n[r]


def _shapes(g: dict, nodes: int, features: int) -> str:
    x, y, e = g["x"], g["y"], g["edge_index"]
    if len(y) != nodes or x.shape != (nodes, features):
        return f"x {x.shape}, y {y.shape}, expected ({nodes}, {features}) and ({nodes},)"
    if e.shape[0] != 2:
        return f"edge_index {e.shape}, expected (2, edges)"
    return "ok"


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import (
        Column,
        failed_table,
        npz_arrays,
        ok_columns,
        read_meta,
        usable,
        validate_frame,
        write_validation,
    )
    from models.ghost.experiment import graph_file

    meta = read_meta(ctx.paths.prepared / "meta.json")
    runs, K = meta["runs"], meta["num_clients"]
    graphs = tuple(meta["graphs"])
    graph_col, run_col = (
        Column("graph", kind="string", values=graphs),
        Column("run", kind="integer", values=tuple(range(runs))),
    )
    files, node_frames, edge_frames, assign_frames = [], [], [], []
    all_good = True
    for name, info in meta["graphs"].items():
        for r in range(runs):
            g, status = npz_arrays(graph_file(ctx.paths.prepared, name, r), GRAPH_ARRAYS)
            n = _nodes(info, r)
            status["shapes"] = (
                _shapes(g, n, info["num_features"]) if len(g) == len(GRAPH_ARRAYS) else "not checked"
            )
            files.append({"graph": name, "run": r, **status})
            if any(v != "ok" for v in status.values()):
                all_good = False
                continue
            x, y, e = g["x"], g["y"], g["edge_index"]
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
    good = [(f["graph"], f["run"]) for f in files if all(f[k] == "ok" for k in (*GRAPH_ARRAYS, "shapes"))]
    good_nodes = sum(_nodes(meta["graphs"][name], r) for name, r in good)
    summaries = [
        validate_frame(
            pd.DataFrame(files),
            "graph files",
            [graph_col, run_col, *ok_columns([*GRAPH_ARRAYS, "shapes"])],
            rows=len(graphs) * runs,
            key=("graph", "run"),
        )
    ]

    def frame(parts: list, columns: list) -> pd.DataFrame:
        return pd.concat(parts) if parts else pd.DataFrame(columns=[c.name for c in columns])

    columns = [
        graph_col,
        run_col,
        Column("y_in_range", kind="bool", values=(True,)),
        Column("nonfinite_features", kind="integer", values=(0,)),
    ]
    summaries.append(validate_frame(frame(node_frames, columns), "nodes", columns, rows=good_nodes))
    columns = [
        Column("src", kind="integer"),
        Column("dst", kind="integer"),
        Column("in_range", kind="bool", values=(True,)),
        Column("self_loop", kind="bool", values=(False,)),
        Column("multiplicity", kind="integer", values=(1,)),
        Column("reverse_present", kind="bool", values=(True,)),
    ]
    # every undirected edge twice: meta.json's mean edges per run, over the runs (once every draw is readable)
    edges_expected = sum(2 * round(i["num_edges_mean"] * runs) for i in meta["graphs"].values())
    summaries.append(
        validate_frame(
            frame(edge_frames, columns), "edges", columns, **({"rows": edges_expected} if all_good else {})
        )
    )

    expected = sum(_nodes(info, r) for info in meta["graphs"].values() for r in range(runs))
    columns = [
        graph_col,
        run_col,
        Column("node", kind="integer", min=0),
        Column("client", kind="integer", values=tuple(range(K))),
        Column("split", kind="integer", values=(0, 1, 2)),
    ]
    try:
        part = read_csv(ctx.paths.prepared / "partition.csv")
    except ValueError as exc:
        summaries.append(failed_table("partition", str(exc)))
        write_validation(ctx.out, summaries)
        return
    summary = validate_frame(part, "partition", columns, rows=expected)
    summaries.append(summary)
    if usable(summary):  # the per-node and per-client tables need the columns, with their types
        assign = part.groupby(["graph", "run", "node"]).size().rename("assignments").reset_index()
        assign = assign.merge(frame(assign_frames, columns[:3]), how="right", on=["graph", "run", "node"])
        assign["assignments"] = assign["assignments"].fillna(0).astype("int64")
        clients = (
            part.groupby(["graph", "run", "client"])
            .agg(nodes=("node", "size"), train_nodes=("split", lambda s: int((s == 0).sum())))
            .reset_index()
        )
        summaries += [
            validate_frame(
                assign,
                "assignments",
                [
                    graph_col,
                    run_col,
                    Column("node", kind="integer"),
                    Column("assignments", kind="integer", values=(1,)),
                ],
                rows=good_nodes,
            ),
            validate_frame(
                clients,
                "clients",
                [
                    graph_col,
                    run_col,
                    Column("client", kind="integer", values=tuple(range(K))),
                    Column("nodes", kind="integer", min=meta["least_samples"]),
                    Column("train_nodes", kind="integer", min=1),
                ],
                rows=len(graphs) * runs * K,
            ),
        ]
    write_validation(ctx.out, summaries)
