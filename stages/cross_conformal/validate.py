"""GX suites: per simulated replicate (rows, finiteness, ||beta||^2, equal folds, the n mod K surplus left out),
the real table (finite numbers) and its splits (train and test partition the rows; equal folds)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.io import load_npz
    from icml25.validation import Column, validate_frame, write_validation
    from models.cross_conformal.data import fold_summary, sim_name

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    sim, real = meta["simulation"], meta["real"]
    n, K = sim["n"], sim["folds"]
    rows = []
    for p in sim["p_grid"]:
        d = load_npz(ctx.paths.prepared / sim_name(p))
        for b in range(d["y"].shape[0]):
            rows.append(
                {
                    "p": p,
                    "rows": int(d["X"].shape[1]),
                    "features_match": int(d["X"].shape[2] == p and d["beta"].shape[1] == p),
                    "finite": int(np.all(np.isfinite(d["X"][b])) and np.all(np.isfinite(d["y"][b]))),
                    "beta_norm2": float(d["beta"][b] @ d["beta"][b]),
                    "split_is_permutation": int(np.array_equal(np.sort(d["split"][b]), np.arange(n))),
                    **fold_summary(d["folds"][b], K),
                }
            )
    columns = [
        Column("p", values=tuple(sim["p_grid"])),
        Column("rows", values=(n + sim["n_test"],)),
        Column("features_match", values=(1,)),
        Column("finite", values=(1,)),
        Column("beta_norm2", min=sim["signal"] * (1 - 1e-9), max=sim["signal"] * (1 + 1e-9)),
        Column("split_is_permutation", values=(1,)),
        Column("fold_spread", values=(0,)),
        Column("folds_seen", values=(K,)),
        Column("dropped", values=(n % K,)),
        Column("label_ok", values=(1,)),
    ]
    summaries = [validate_frame(pd.DataFrame(rows), "simulation", columns, min_rows=2)]
    frame = pd.read_csv(ctx.paths.prepared / "real.csv")
    columns = [Column(c, min=-1e300, max=1e300) for c in frame.columns]
    summaries.append(validate_frame(frame, "real table", columns, min_rows=real["n_train"] + real["n_test"]))
    s = load_npz(ctx.paths.prepared / "real_splits.npz")
    rows = []
    for b in range(real["splits"]):
        both = np.concatenate([s["train"][b], s["test"][b]])
        row = {"partition": int(np.array_equal(np.sort(both), np.arange(real["rows"])))}
        row["split_is_permutation"] = int(np.array_equal(np.sort(s["split"][b]), np.arange(real["n_train"])))
        for K_real in real["folds"]:
            f = fold_summary(s[f"folds_K{K_real}"][b], K_real)
            row.update({f"K{K_real}_{k}": v for k, v in f.items()})
        rows.append(row)
    columns = [Column("partition", values=(1,)), Column("split_is_permutation", values=(1,))]
    for K_real in real["folds"]:
        columns += [
            Column(f"K{K_real}_fold_spread", values=(0,)),
            Column(f"K{K_real}_folds_seen", values=(K_real,)),
            Column(f"K{K_real}_dropped", values=(real["n_train"] % K_real,)),
            Column(f"K{K_real}_label_ok", values=(1,)),
        ]
    summaries.append(validate_frame(pd.DataFrame(rows), "real splits", columns, min_rows=1))
    write_validation(ctx.out, summaries)
