"""GX suites on what prepare wrote: the sources table (one row per seed and source, noise in [0, 1], non-empty
pools), every pool file (each array present with its type and rank; features in [0, 1] and finite, labels in the
source's class set for digits or in 0..C-1 for CSV sources, train and test of the same width), and the planted
problems (the means, and the loss bound max_{||theta|| <= R, z} l(theta; z) <= 1 for every source)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import Column, npz_arrays, ok_columns, read_meta, validate_frame, write_validation
    from models.ucb_ogd.planted import NOISE, RADIUS
    from models.ucb_ogd.pools import ARRAYS

    meta = read_meta(ctx.paths.prepared / "meta.json")
    seeds, K, C = int(meta["seeds"]), int(meta["sources"]), int(meta["classes"])
    sources = read_csv(ctx.paths.prepared / "sources.csv")
    columns = [
        Column("seed", kind="integer", values=tuple(range(seeds))),
        Column("source", kind="integer", values=tuple(range(K))),
        Column("name", kind="string"),
        Column("classes", kind="string"),
        Column("noise", min=0.0, max=1.0),
        Column("n_train", kind="integer", min=1),
        Column("n_test", kind="integer", min=1),
    ]
    summaries = [validate_frame(sources, "sources", columns, rows=seeds * K, key=("seed", "source"))]

    kinds = {
        "train_X": ("float", 2),
        "train_y": ("integer", 1),
        "test_X": ("float", 2),
        "test_y": ("integer", 1),
    }
    expected = {f"{a}_{k}": kinds[a] for a in ARRAYS for k in range(K)}
    files, pools = [], []
    for seed in range(seeds):
        arrays, status = npz_arrays(ctx.paths.prepared / f"pools_s{seed}.npz", expected)
        files.append({"seed": seed, **status})
        classes = {}
        if meta["source"] == "digits" and summaries[0]["success"]:
            mine = sources[sources.seed == seed]
            classes = {
                int(k): {int(c) for c in str(cs).split()}
                for k, cs in zip(mine.source, mine.classes, strict=True)
            }
        for k in range(K):
            for split in ("train", "test"):
                X, y = arrays.get(f"{split}_X_{k}"), arrays.get(f"{split}_y_{k}")
                if X is None or y is None:
                    continue
                allowed = classes.get(k, set(range(C)))
                pools.append(
                    {
                        "seed": seed,
                        "source": k,
                        "split": split,
                        "rows": int(len(y)),
                        "rows_match": bool(len(X) == len(y)),
                        "features": int(X.shape[1]),
                        "finite": bool(np.isfinite(X).all()),
                        "x_min": float(X.min()) if X.size else 0.0,
                        "x_max": float(X.max()) if X.size else 0.0,
                        "labels_ok": bool(set(np.unique(y).tolist()) <= allowed),
                    }
                )
    summaries.append(
        validate_frame(
            pd.DataFrame(files),
            "pool files",
            [Column("seed", kind="integer"), *ok_columns(expected)],
            rows=seeds,
            key="seed",
        )
    )
    width = {p["features"] for p in pools}
    columns = [
        Column("seed", kind="integer"),
        Column("source", kind="integer"),
        Column("split", kind="string", values=("train", "test")),
        Column("rows", kind="integer", min=1),
        Column("rows_match", kind="bool", values=(True,)),
        Column("features", kind="integer", values=(max(width),) if width else None),
        Column("finite", kind="bool", values=(True,)),
        Column("x_min", min=0.0, max=1.0),
        Column("x_max", min=0.0, max=1.0),
        Column("labels_ok", kind="bool", values=(True,)),
    ]
    good = sum(all(v == "ok" for k, v in f.items() if k != "seed") for f in files)
    frame = pd.DataFrame(pools, columns=[c.name for c in columns])
    summaries.append(
        validate_frame(frame, "pools", columns, rows=good * K * 2, key=("seed", "source", "split"))
    )

    planted = read_csv(ctx.paths.prepared / "planted.csv")
    columns = [
        Column("K", kind="integer", values=tuple(meta["regret_sources"])),
        Column("source", kind="integer", min=0),
        Column("mu_x", min=-RADIUS, max=RADIUS),
        Column("mu_y", min=-RADIUS, max=RADIUS),
    ]
    rows = sum(meta["regret_sources"])
    summary = validate_frame(planted, "planted", columns, rows=rows, key=("K", "source"))
    summaries.append(summary)
    if summary["success"]:
        bounds = []
        for K_p, g in planted.groupby("K"):
            norms = np.hypot(g.mu_x, g.mu_y)
            scale = (RADIUS + norms.max() + NOISE) ** 2  # C: l(theta; z) = ||theta - z||^2 / C
            bounds += [
                {"K": int(K_p), "source": int(s), "loss_bound": float((RADIUS + n + NOISE) ** 2 / scale)}
                for s, n in zip(g.source, norms, strict=True)
            ]
        summaries.append(
            validate_frame(
                pd.DataFrame(bounds),
                "planted loss bound",
                [
                    Column("K", kind="integer"),
                    Column("source", kind="integer"),
                    Column("loss_bound", min=0.0, max=1.0),
                ],
                rows=rows,
                key=("K", "source"),
            )
        )
    write_validation(ctx.out, summaries)
