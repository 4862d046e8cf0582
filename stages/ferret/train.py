"""Train: every method on ``seeds`` seeds (the claims' methods) and ``report_methods`` on ``report_seeds``
(models/ferret/federated.py: one Lightning module whose training step is one round, clients in process). Runs go
to ``workers`` forked processes; each seeds itself from ``ctx.seed_for("run", seed)`` (shared by every method of
that seed: the same initial weights, selections and minibatches), so the artifacts do not depend on the number
of workers. Writes ``history.csv`` (one row per method, seed and round), ``models/<method>_s<seed>.safetensors``
(the final global model) and ``meta.json`` (d and the blocks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _task(args: tuple) -> dict:
    import time

    from models.common.weights import save_weights
    from models.ferret.federated import run
    from models.ferret.io import load_data

    name, meth, cfg, seed, k, path, out = args
    start = time.perf_counter()
    rows, net = run(load_data(path), meth, cfg, seed)
    save_weights(
        out / f"{name}_s{k}.safetensors",
        dict(net.state_dict()),
        {"kind": "ferret-mlp", "method": name, "seed": k, "hidden": cfg.hidden, "rounds": cfg.rounds},
    )
    return {"rows": rows, "seconds": time.perf_counter() - start}


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25 import parallel
    from models.ferret.federated import Config, method

    tp = ctx.params.train
    cfg = Config(
        rounds=tp.rounds,
        per_round=tp.per_round,
        local_steps=tp.local_steps,
        batch=tp.batch,
        lr=tp.lr,
        slr=tp.slr,
        code_slr=tp.code_slr,
        clip=tp.clip,
        zo_steps=tp.zo_steps,
        zo_lr=tp.zo_lr,
        zo_eps=tp.zo_eps,
        zo_pool=tp.zo_pool,
        hidden=tp.hidden,
    )
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    out = ctx.out / "models"
    out.mkdir()
    plan = [(m, k) for m in tp.methods for k in range(tp.seeds)]
    plan += [(m, k) for m in tp.report_methods if m not in tp.methods for k in range(tp.report_seeds)]
    tasks = [
        (m, method(m, tp.K), cfg, ctx.seed_for("run", k), k, ctx.paths.prepared / "data.npz", out)
        for m, k in plan
    ]
    ctx.log.info("%d runs of %d rounds on %d worker(s)", len(tasks), tp.rounds, min(tp.workers, len(tasks)))
    start = time.perf_counter()
    frames: list[pd.DataFrame | None] = [None] * len(tasks)
    for done, (i, res) in enumerate(parallel.imap(_task, tasks, tp.workers, preload=("lightning",)), 1):
        m, k = plan[i]
        frames[i] = pd.DataFrame(res["rows"]).assign(method=m, seed=k)
        last = res["rows"][-1]
        ctx.log.info(
            "[%d/%d] %s seed %d: accuracy %.3f, uplink %.0f scalars per client (%.1f s; %.0f s so far)",
            done,
            len(tasks),
            m,
            k,
            last["accuracy"],
            frames[i].uplink.mean(),
            res["seconds"],
            time.perf_counter() - start,
        )
    history = pd.concat(frames, ignore_index=True)
    cols = ["method", "seed", "round", "accuracy", "loss", "uplink", "recon_error", "client_s", "seconds"]
    history[cols].to_csv(ctx.out / "history.csv", index=False)
    from models.ferret.federated import mlp

    net = mlp(int(meta["features"]), tp.hidden, int(meta["classes"]), 0)
    ctx.write_json(
        "meta.json",
        {
            "dim": sum(p.numel() for p in net.parameters()),
            "blocks": {n: p.numel() for n, p in net.named_parameters()},
            "runs": len(tasks),
            "methods": list(tp.methods),
            "report_methods": [m for m in tp.report_methods if m not in tp.methods],
        },
    )
