"""GX suites on what prepare wrote: every data file holds its arrays (y, u; the true latents x for simulated
sets; the held-out y_test, u_test, x_test for the linear set) as 3-d floats; then one row per file and split:
trials and bins agree across its arrays, every value is finite, the inputs are one per latent (B = I), and the
clamped entries of the true latents equal B u exactly (the do-clamp the simulator promises)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _file_rows(name: str, seed: int, arrays: dict) -> list[dict]:
    import numpy as np

    rows = []
    for suffix in ("", "_test"):
        y, u, x = (arrays.get(f"{k}{suffix}") for k in ("y", "u", "x"))
        if y is None or u is None:
            continue
        parts = [a for a in (y, u, x) if a is not None]
        row = {
            "file": f"{name}_s{seed}.npz",
            "split": "test" if suffix else "train",
            "trials": int(y.shape[0]),
            "bins": int(y.shape[1]),
            "neurons": int(y.shape[2]),
            "inputs": int(u.shape[2]),
            "shapes_agree": all(a.shape[:2] == y.shape[:2] for a in parts),
            "finite": bool(all(np.isfinite(a).all() for a in parts)),
            "intervened": float((u != 0).any(axis=2).mean()),
            "clamp_error": None,
        }
        if x is not None:
            row["inputs_match_latents"] = bool(u.shape[2] == x.shape[2])
            if row["shapes_agree"] and row["inputs_match_latents"] and row["finite"]:
                on = u != 0  # B = I: B u = u
                row["clamp_error"] = float(np.abs(x[on] - u[on]).max()) if on.any() else 0.0
        else:
            row["inputs_match_latents"] = True  # a user's recordings: the model takes one latent per input
        rows.append(row)
    return rows


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.validation import Column, npz_arrays, ok_columns, read_meta, validate_frame, write_validation
    from models.issm.experiment import HELD_OUT, REQUIRED, TRUTH

    meta = read_meta(ctx.paths.prepared / "meta.json")
    simulated = meta.get("source") == "simulated"
    expect = {
        name: list(REQUIRED)
        + (list(TRUTH) if simulated else [])
        + (list(HELD_OUT) if name == "linear" else [])
        for name in meta["sets"]
    }
    names = list(dict.fromkeys(k for keys in expect.values() for k in keys))
    files, rows = [], []
    for name, keys in expect.items():
        expected = dict.fromkeys(keys, ("float", 3))
        for seed in range(int(meta["seeds"])):
            arrays, status = npz_arrays(ctx.paths.prepared / f"{name}_s{seed}.npz", expected)
            files.append({"file": f"{name}_s{seed}.npz", **dict.fromkeys(names, "ok"), **status})
            rows += _file_rows(name, seed, arrays)
    summaries = [
        validate_frame(
            pd.DataFrame(files), "data files", [Column("file", kind="string"), *ok_columns(names)], key="file"
        )
    ]
    columns = [
        Column("file", kind="string"),
        Column("split", kind="string", values=("train", "test")),
        Column("trials", kind="integer", min=1),
        Column("bins", kind="integer", min=2),
        Column("neurons", kind="integer", min=1),
        Column("inputs", kind="integer", min=1),
        Column("shapes_agree", kind="bool", values=(True,)),
        Column("finite", kind="bool", values=(True,)),
        Column("intervened", min=0.0, max=1.0),
        Column("clamp_error", min=0.0, max=0.0, nullable=not simulated),
        Column("inputs_match_latents", kind="bool", values=(True,)),
    ]
    frame = pd.DataFrame(rows, columns=[c.name for c in columns])
    summaries.append(validate_frame(frame, "arrays", columns, min_rows=1, key=("file", "split")))
    write_validation(ctx.out, summaries)
