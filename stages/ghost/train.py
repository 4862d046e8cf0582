"""Per graph g and run r (stream "train", g, r): the proxies for every FGW structure the variants need, GHOST and
(with ``ablation``) each switch flipped on its own, all five flipped, the bundle with the label switch kept and no
retention, local GCNs (common init), their one-shot FedAvg and the centralised GCN (models/ghost/experiment.py
`train_run`). Saved as safetensors under <g>/run<r>/ with the training histories (history.json).

``workers`` forked processes of one torch thread each (icml25/parallel.py) train different (graph, run) pairs
side by side; every training seeds itself from its own stream, so the artifacts do not depend on the number of
workers or the order in which runs finish (tested)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from icml25.stage import StageContext
    from models.ghost.config import GhostConfig


def train_one(prepared: Path, out: Path, graph: str, run: int, seed: int, cfg: GhostConfig) -> dict:
    """Train graph ``graph``'s run ``run`` and write its artifacts under ``out``/<graph>/run<run>/; returns a line
    for the log."""
    import json
    import time

    from models.ghost import api
    from models.ghost.experiment import load_federated, train_run
    from models.ghost.store import gcn_shape, generator_shape, save_module

    start = time.perf_counter()
    fed = load_federated(prepared, graph, run)
    trained = train_run(fed, cfg, seed=seed)
    folder = out / graph / f"run{run}"
    for structure, gens in trained.generators.items():
        for k, g in enumerate(gens):
            save_module(
                g, folder / "generators" / structure / f"client{k:02d}.safetensors", generator_shape(g)
            )
    for name, model in trained.models.items():
        save_module(model, folder / "models" / f"{name}.safetensors", gcn_shape(model))
    (folder / "history.json").write_text(json.dumps(trained.history))
    return {
        "graph": graph,
        "run": run,
        "ghost": api.evaluate(trained.ghost, fed),
        "fedavg": api.evaluate(trained.models["fedavg"], fed),
        "seconds": time.perf_counter() - start,
    }


def _task(args: tuple) -> dict:
    return train_one(*args)


def run(ctx: StageContext) -> None:
    import time

    from icml25 import parallel
    from models.ghost.config import variants

    cfg = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    runs, graphs = meta["runs"], list(meta["graphs"])
    tasks = [
        (ctx.paths.prepared, ctx.out, g, r, ctx.seed_for("train", g, r), cfg)
        for g in graphs
        for r in range(runs)
    ]
    ctx.log.info(
        "%d graphs x %d runs, %d server models per run, %d worker(s)",
        len(graphs),
        runs,
        len(variants(cfg)),
        min(cfg.workers, len(tasks)),
    )
    start = time.perf_counter()
    for done, (_, res) in enumerate(parallel.imap(_task, tasks, cfg.workers, preload=("lightning",)), 1):
        ctx.log.info(
            "[%d/%d] %s run %d: GHOST %.3f, FedAvg %.3f (%.0f s; %.0f s so far)",
            done,
            len(tasks),
            res["graph"],
            res["run"],
            res["ghost"],
            res["fedavg"],
            res["seconds"],
            time.perf_counter() - start,
        )
    ctx.write_json("meta.json", {"runs": runs, "graphs": graphs, "fgw_structure": cfg.fgw_structure})
