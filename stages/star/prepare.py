"""Prepare: the skill world's tasks and demonstrations (``train.npz``, ``test.npz``: every demo's actions back to
back with their offsets, task and start; per primitive its demo, index and the state before it), ``tasks.json``
(each task's primitives, goal displacement and final gripper) and ``meta.json``; or, with ``source: hdf5``, the
``actions`` of a user's LIBERO-style file (every ``test_every``-th demo held out; no tasks, so no stage 2).

Streams: ``ctx.rng("tasks")`` for the task sequences, ``ctx.rng("demos", split)`` for the demos."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _hdf5(ctx: StageContext) -> None:
    import numpy as np

    from icml25.errors import UserError
    from models.star.api import check_demos, read_hdf5

    pp = ctx.params.prepare
    path = ctx.input_path("file", pp.file)
    demos = read_hdf5(path)
    check_demos(demos, pp.horizon, source=str(path))
    names = list(demos)
    if len(names) < 2:
        raise UserError(f"{path}: {len(names)} demo; need at least 2 (one is held out)")
    test = [n for i, n in enumerate(names) if i % pp.test_every == pp.test_every - 1] or names[-1:]
    for split, chosen in (("train", [n for n in names if n not in test]), ("test", test)):
        lengths = [len(demos[n]) for n in chosen]
        np.savez(
            ctx.out / f"{split}.npz",
            actions=np.concatenate([demos[n] for n in chosen]),
            demo_offset=np.cumsum([0, *lengths]).astype(np.int64),
            demo_task=np.zeros(len(chosen), np.int64),
            demo_start=np.zeros((len(chosen), 2), np.float32),
        )
    ctx.write_json("tasks.json", [])
    ctx.write_json(
        "meta.json",
        {
            "source": "hdf5",
            "horizon": pp.horizon,
            "action_dim": int(demos[names[0]].shape[1]),
            "tasks": 0,
            "demos": {"train": len(names) - len(test), "test": len(test)},
            "test_demos": test,
        },
    )
    ctx.log.info(
        "%s: %d demos (%d held out), action dim %d", pp.file, len(names), len(test), demos[names[0]].shape[1]
    )


def run(ctx: StageContext) -> None:
    import numpy as np

    from icml25.errors import UserError
    from models.star.world import ACTION_DIM, NAMES, make_tasks
    from models.star.world import demos as make_demos

    pp = ctx.params.prepare
    if pp.source == "hdf5":
        _hdf5(ctx)
        return
    if pp.min_primitives > pp.max_primitives:
        raise UserError(
            f"prepare.min_primitives = {pp.min_primitives} exceeds prepare.max_primitives = {pp.max_primitives}"
        )
    tasks = make_tasks(ctx.rng("tasks"), pp.tasks, (pp.min_primitives, pp.max_primitives), pp.horizon)
    counts = {"train": pp.demos, "test": pp.test_demos}
    for split, per_task in counts.items():
        data = make_demos(tasks, per_task, ctx.rng("demos", split), pp.horizon, pp.noise, pp.start)
        np.savez(ctx.out / f"{split}.npz", **data)
        ctx.log.info("%s: %d demos, %d steps", split, len(data["demo_task"]), len(data["actions"]))
    ctx.write_json(
        "tasks.json",
        [
            {
                "primitives": list(t.primitives),
                "horizon": t.horizon,
                "names": [NAMES[p] for p in t.primitives],
                "displacement": t.displacement.tolist(),
                "gripper": t.gripper,
            }
            for t in tasks
        ],
    )
    ctx.write_json(
        "meta.json",
        {
            "source": "simulated",
            "horizon": pp.horizon,
            "action_dim": ACTION_DIM,
            "tasks": len(tasks),
            "demos": {k: v * len(tasks) for k, v in counts.items()},
            "demos_per_task": counts,
            "start": pp.start,
            "noise": pp.noise,
        },
    )
