"""GX suites on what prepare wrote: each split's arrays exist with their kinds and ranks; one row per demo (its
task id within the task list, its steps and H-step chunks, finite actions; for the simulated world the action
ranges: |dx|, |dy| <= 0.3 and gripper commands within 0.1 of +-1, and primitive alignment: steps = primitives x
H); one row per split and task: the demo count prepare promised."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

MOTION_MAX = 0.3  # the bell profile peaks at 0.2 per step; the noise is 0.01
GRIP_TOL = 0.1


def _demo_rows(split: str, arrays: dict, meta: dict, tasks: list[dict]) -> list[dict]:
    import numpy as np

    H, simulated = int(meta["horizon"]), meta["source"] == "simulated"
    offsets, actions = arrays["demo_offset"], arrays["actions"]
    prims = np.bincount(arrays["prim_demo"], minlength=len(offsets) - 1) if "prim_demo" in arrays else None
    rows = []
    for i in range(len(offsets) - 1):
        a = actions[offsets[i] : offsets[i + 1]]
        t = int(arrays["demo_task"][i])
        finite = bool(np.isfinite(a).all())
        row = {
            "split": split,
            "demo": i,
            "task": t,
            "steps": len(a),
            "chunks": max(len(a) - H + 1, 0),
            "chunk_width": int(a.shape[1]) if a.ndim == 2 else -1,
            "finite": finite,
            "motion_max": None,
            "grip_error": None,
            "aligned": None,
        }
        if simulated and finite and len(a):
            row["motion_max"] = float(np.abs(a[:, :2]).max())
            row["grip_error"] = float(np.abs(np.abs(a[:, 2]) - 1.0).max())
            expected = len(tasks[t]["primitives"]) if 0 <= t < len(tasks) else -1
            row["aligned"] = bool(prims is not None and prims[i] == expected and len(a) == expected * H)
        rows.append(row)
    return rows


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.validation import Column, npz_arrays, ok_columns, read_meta, validate_frame, write_validation

    meta = read_meta(ctx.paths.prepared / "meta.json")
    tasks = ctx.read_json(ctx.paths.prepared / "tasks.json")
    simulated = meta["source"] == "simulated"
    expected = {"actions": ("float", 2), "demo_offset": ("integer", 1), "demo_task": ("integer", 1)}
    if simulated:
        expected |= {"prim_demo": ("integer", 1), "prim_index": ("integer", 1), "prim_state": ("float", 2)}
    files, demos = [], []
    for split in ("train", "test"):
        arrays, status = npz_arrays(ctx.paths.prepared / f"{split}.npz", expected)
        files.append({"file": f"{split}.npz", **status})
        if all(v == "ok" for v in status.values()):
            demos += _demo_rows(split, arrays, meta, tasks)
    summaries = [
        validate_frame(
            pd.DataFrame(files),
            "data files",
            [Column("file", kind="string"), *ok_columns(expected)],
            key="file",
        )
    ]
    n_tasks = max(int(meta["tasks"]), 1)
    columns = [
        Column("split", kind="string", values=("train", "test")),
        Column("demo", kind="integer", min=0),
        Column("task", kind="integer", values=tuple(range(n_tasks))),
        Column("steps", kind="integer", min=int(meta["horizon"])),
        Column("chunks", kind="integer", min=1),
        Column("chunk_width", kind="integer", values=(int(meta["action_dim"]),)),
        Column("finite", kind="bool", values=(True,)),
        Column("motion_max", min=0.0, max=MOTION_MAX, nullable=not simulated),
        Column("grip_error", min=0.0, max=GRIP_TOL, nullable=not simulated),
        Column("aligned", kind="bool", values=(True,), nullable=not simulated),
    ]
    frame = pd.DataFrame(demos, columns=[c.name for c in columns])
    summaries.append(validate_frame(frame, "demos", columns, min_rows=2, key=("split", "demo")))
    if simulated:
        per_task = meta["demos_per_task"]
        counts = [
            {
                "split": s,
                "task": t,
                "demos": int(((frame.split == s) & (frame.task == t)).sum()),
                "expected": per_task[s],
            }
            for s in ("train", "test")
            for t in range(n_tasks)
        ]
        count_frame = pd.DataFrame(counts)
        summaries.append(
            validate_frame(
                count_frame.assign(matches=count_frame.demos == count_frame.expected),
                "demo counts",
                [
                    Column("split", kind="string", values=("train", "test")),
                    Column("task", kind="integer", min=0),
                    Column("demos", kind="integer", min=1),
                    Column("expected", kind="integer", min=1),
                    Column("matches", kind="bool", values=(True,)),
                ],
                rows=2 * n_tasks,
                key=("split", "task"),
            )
        )
    write_validation(ctx.out, summaries)
