"""Train (here: simulate): the four systems (aggregated 8, PD 7+1, EPD 6,1,1 with and without IRP) on every
(seed, rate, images) workload, and the allocator's search (EPD + IRP for every (E, P, D), E + P + D = 8) on
the image counts of ``allocator_images``. Points run on ``workers`` forked processes (icml25/parallel.py); a
point's result depends only on its workload.

Writes ``requests.csv`` (per system and request: arrival, encode end, last shard at P, prefill start, first
token, finish, the no-queue TTFT bound, tokens), ``memory.csv`` (per system, point and GPU: peak GB),
``allocator.csv`` (per point and allocation: attainment, mean TTFT) and ``meta.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25 import parallel
    from icml25.tables import read_csv
    from models.epd_serving.cost import CostModel
    from models.epd_serving.experiment import Point, run_point
    from models.epd_serving.workload import Workload

    tp = ctx.params.train
    if len(tp.switch_start) != 3:
        from icml25.errors import UserError

        raise UserError(f"papers.epd_serving.train.switch_start: (E, P, D), got {list(tp.switch_start)}")
    cost = CostModel(**ctx.read_json(ctx.paths.prepared / "costs.json"))
    frame = read_csv(ctx.paths.prepared / "workloads.csv")
    tasks = []
    for (seed, rate, images), g in frame.groupby(["seed", "rate", "images"], sort=True):
        g = g.sort_values("request")
        w = Workload(
            g.arrival.to_numpy(float), g.images.to_numpy(int), g.text.to_numpy(int), g.output.to_numpy(int)
        )
        point = Point(int(seed), float(rate), int(images))
        tasks.append((point, w, cost, tp.ttft_slo, tp.tpot_slo, int(images) in tp.allocator_images, {}))
    ctx.log.info(
        "%d workloads x 4 systems (+ the allocator's 21 allocations on %s images)",
        len(tasks),
        list(tp.allocator_images),
    )
    start = time.perf_counter()
    parts: dict[str, list] = {"requests": [], "memory": [], "allocator": []}
    step = max(1, len(tasks) // 10)
    for done, (_, res) in enumerate(parallel.imap(run_point, tasks, tp.workers), 1):
        for k in parts:
            parts[k] += res[k]
        if done % step == 0 or done == len(tasks):
            ctx.log.info("[%d/%d] points simulated (%.0f s)", done, len(tasks), time.perf_counter() - start)
    order = ["system", "seed", "rate", "images"]
    pd.DataFrame(parts["requests"]).sort_values([*order, "request"]).to_csv(
        ctx.out / "requests.csv", index=False
    )
    pd.DataFrame(parts["memory"]).sort_values([*order, "role", "gpu"]).to_csv(
        ctx.out / "memory.csv", index=False
    )
    alloc = pd.DataFrame(
        parts["allocator"], columns=["seed", "rate", "images", "E", "P", "D", "attainment", "ttft_mean"]
    )
    alloc.sort_values(["seed", "rate", "images", "E", "P", "D"]).to_csv(
        ctx.out / "allocator.csv", index=False
    )
    switch_rows, switch_roles = [], []
    if (ctx.paths.prepared / "switching.csv").exists():
        from models.epd_serving.experiment import switching_run

        sw = read_csv(ctx.paths.prepared / "switching.csv")
        jobs = []
        for seed, g in sw.groupby("seed", sort=True):
            g = g.sort_values("request")
            w = Workload(
                g.arrival.to_numpy(float),
                g.images.to_numpy(int),
                g.text.to_numpy(int),
                g.output.to_numpy(int),
            )
            start_gpus = tuple(tp.switch_start)
            jobs.append(
                (
                    int(seed),
                    w,
                    cost,
                    start_gpus,
                    tp.switch_period,
                    tp.switch_migration,
                    tp.ttft_slo,
                    tp.tpot_slo,
                )
            )
        for _, res in parallel.imap(switching_run, jobs, tp.workers):
            switch_rows += res["rows"]
            switch_roles += res["roles"]
        ctx.log.info("role switching: %d seeds, static and switching", len(jobs))
    cols = ["seed", "mode", "phase", "images", "attainment", "ttft_mean", "switches"]
    pd.DataFrame(switch_rows, columns=cols).to_csv(ctx.out / "switching.csv", index=False)
    pd.DataFrame(switch_roles, columns=["seed", "time", "E", "P", "D"]).to_csv(
        ctx.out / "roles.csv", index=False
    )
    ctx.carry(ctx.paths.prepared, "costs.json")
    ctx.write_json(
        "meta.json",
        {
            **ctx.read_json(ctx.paths.prepared / "meta.json"),
            "ttft_slo": tp.ttft_slo,
            "tpot_slo": tp.tpot_slo,
            "switch_start": list(tp.switch_start),
            "switch_period": tp.switch_period,
            "switch_migration": tp.switch_migration,
        },
    )
