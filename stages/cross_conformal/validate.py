"""GX suites: the simulation files (every array there, of its type and rank), per simulated replicate (rows,
finiteness, ||beta||^2, equal folds, the n mod K surplus left out), the real table (its columns by name, the
target last, finite numbers, the rows prepare wrote) and its splits (every array there; train and test partition
the rows; equal folds).

The real table's columns come from the data definition, never from the file: the diabetes features of
models/cross_conformal/data.py then ``target``; for a user's CSV (``real_source: csv``) ``target`` last and as
many feature columns as prepare's meta.json records."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

#: Finite: a NaN fails the not-null check, an infinity these bounds.
FINITE = {"min": -1e300, "max": 1e300}


def _simulation_rows(d: dict, p: int, n: int, K: int) -> list[dict]:
    import numpy as np

    from models.cross_conformal.data import fold_summary

    return [
        {
            "p": p,
            "rows": int(d["X"].shape[1]),
            "features_match": int(d["X"].shape[2] == p and d["beta"].shape[1] == p),
            "finite": int(np.all(np.isfinite(d["X"][b])) and np.all(np.isfinite(d["y"][b]))),
            "beta_norm2": float(d["beta"][b] @ d["beta"][b]),
            "split_is_permutation": int(np.array_equal(np.sort(d["split"][b]), np.arange(n))),
            **fold_summary(d["folds"][b], K),
        }
        for b in range(d["y"].shape[0])
    ]


def _sim_shapes(d: dict, B: int) -> str:
    """Whether every array holds the B replicates and X, y and beta agree (the replicate rows index them): "ok",
    or how they disagree."""
    X, y = d["X"], d["y"]
    if not all(a.shape[0] == B for a in d.values()):
        return f"replicates {sorted({a.shape[0] for a in d.values()})}, expected {B}"
    if X.shape[1] != y.shape[1] or X.shape[2] != d["beta"].shape[1]:
        return f"X {X.shape}, y {y.shape}, beta {d['beta'].shape} disagree"
    return "ok"


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import (
        Column,
        Others,
        failed_table,
        npz_arrays,
        ok_columns,
        read_meta,
        validate_frame,
        write_validation,
    )
    from models.cross_conformal.data import DIABETES_FEATURES, REAL_TARGET, fold_summary, sim_name

    meta = read_meta(ctx.paths.prepared / "meta.json")
    sim, real = meta["simulation"], meta["real"]
    n, K, B = sim["n"], sim["folds"], sim["replications"]
    sim_arrays = {
        "X": ("float", 3),
        "y": ("float", 2),
        "beta": ("float", 2),
        "folds": ("integer", 2),
        "split": ("integer", 2),
    }
    files, rows, good = [], [], 0
    for p in sim["p_grid"]:
        d, status = npz_arrays(ctx.paths.prepared / sim_name(p), sim_arrays)
        status["shapes"] = _sim_shapes(d, B) if len(d) == len(sim_arrays) else "not checked"
        files.append({"file": sim_name(p), **status})
        if all(v == "ok" for v in status.values()):
            rows += _simulation_rows(d, p, n, K)
            good += 1
    names = [sim_name(p) for p in sim["p_grid"]]
    summaries = [
        validate_frame(
            pd.DataFrame(files),
            "simulation files",
            [Column("file", kind="string", values=tuple(names)), *ok_columns([*sim_arrays, "shapes"])],
            rows=len(names),
            key="file",
        )
    ]
    columns = [
        Column("p", kind="integer", values=tuple(sim["p_grid"])),
        Column("rows", kind="integer", values=(n + sim["n_test"],)),
        Column("features_match", kind="integer", values=(1,)),
        Column("finite", kind="integer", values=(1,)),
        Column("beta_norm2", min=sim["signal"] * (1 - 1e-9), max=sim["signal"] * (1 + 1e-9)),
        Column("split_is_permutation", kind="integer", values=(1,)),
        Column("fold_spread", kind="integer", values=(0,)),
        Column("folds_seen", kind="integer", values=(K,)),
        Column("dropped", kind="integer", values=(n % K,)),
        Column("label_ok", kind="integer", values=(1,)),
    ]
    frame = pd.DataFrame(rows, columns=[c.name for c in columns])
    summaries.append(validate_frame(frame, "simulation", columns, rows=good * B))  # the files that passed

    try:
        frame = read_csv(ctx.paths.prepared / "real.csv")
    except ValueError as exc:
        frame = None
        summaries.append(failed_table("real table", str(exc)))
    if frame is not None:
        target = Column(REAL_TARGET, **FINITE)
        if real["name"] == "diabetes":  # the bundled table: every column known by name, the target last
            features = [Column(c, **FINITE) for c in DIABETES_FEATURES]
            summaries.append(
                validate_frame(frame, "real table", [*features, target], rows=real["rows"], ordered=True)
            )
        else:  # a user's CSV: its feature columns are known by number only
            others = Others(real["features"], Column("<feature>", **FINITE))
            summaries.append(validate_frame(frame, "real table", [target], rows=real["rows"], others=others))
            last = pd.DataFrame({"last_column": [str(frame.columns[-1]) if len(frame.columns) else ""]})
            summaries.append(
                validate_frame(
                    last, "real table layout", [Column("last_column", kind="string", values=(REAL_TARGET,))]
                )
            )

    split_arrays = {k: ("integer", 2) for k in ("train", "test", "split")}
    split_arrays.update({f"folds_K{K_real}": ("integer", 2) for K_real in real["folds"]})
    s, status = npz_arrays(ctx.paths.prepared / "real_splits.npz", split_arrays)
    status["shapes"] = (
        "ok"
        if len(s) == len(split_arrays) and all(a.shape[0] == real["splits"] for a in s.values())
        else "not checked"
        if len(s) != len(split_arrays)
        else f"splits {sorted({a.shape[0] for a in s.values()})}, expected {real['splits']}"
    )
    summaries.append(
        validate_frame(
            pd.DataFrame([{"file": "real_splits.npz", **status}]),
            "real splits file",
            [
                Column("file", kind="string", values=("real_splits.npz",)),
                *ok_columns([*split_arrays, "shapes"]),
            ],
            rows=1,
            key="file",
        )
    )
    columns = [
        Column("partition", kind="integer", values=(1,)),
        Column("split_is_permutation", kind="integer", values=(1,)),
    ]
    for K_real in real["folds"]:
        columns += [
            Column(f"K{K_real}_fold_spread", kind="integer", values=(0,)),
            Column(f"K{K_real}_folds_seen", kind="integer", values=(K_real,)),
            Column(f"K{K_real}_dropped", kind="integer", values=(real["n_train"] % K_real,)),
            Column(f"K{K_real}_label_ok", kind="integer", values=(1,)),
        ]
    rows, usable_splits = [], all(v == "ok" for v in status.values())
    if usable_splits:
        for b in range(real["splits"]):
            both = np.concatenate([s["train"][b], s["test"][b]])
            row = {"partition": int(np.array_equal(np.sort(both), np.arange(real["rows"])))}
            row["split_is_permutation"] = int(
                np.array_equal(np.sort(s["split"][b]), np.arange(real["n_train"]))
            )
            for K_real in real["folds"]:
                f = fold_summary(s[f"folds_K{K_real}"][b], K_real)
                row.update({f"K{K_real}_{k}": v for k, v in f.items()})
            rows.append(row)
    frame = pd.DataFrame(rows, columns=[c.name for c in columns])
    summaries.append(
        validate_frame(frame, "real splits", columns, rows=real["splits"] if usable_splits else 0)
    )
    write_validation(ctx.out, summaries)
