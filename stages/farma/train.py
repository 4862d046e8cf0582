"""Train: per seed, the base LM on the seed's corpus, then every reward model from a copy of it on the seed's pairs
(models/farma/experiment.py: FaRMA, ARGS, PARGS, CD and the report-only FaRMA variants; ``farma_more``: FaRMA
on seed 0's LM with ``prepare.more_pairs`` pairs, the data ablation). LMs first (one task per
seed), then the reward models (one task per seed and model), on ``workers`` forked processes; each task seeds
itself from ``ctx.seed_for`` so the artifacts do not depend on the number of workers. Writes
``models/<name>_s<seed>.safetensors``, ``history.csv`` (loss per step and phase), ``fits.csv`` (seconds, final
loss, FaRMA's max residual per model and seed) and ``meta.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _lm(args: tuple) -> dict:
    import time
    from types import SimpleNamespace

    import numpy as np

    from models.farma.experiment import save_net, seed_data, train_lm

    meta, cfg, k, seed, data, out = args
    start = time.perf_counter()
    corpus, _ = seed_data(np.load(data), k)
    dims = SimpleNamespace(tokens=int(meta["tokens"]), prompts=int(meta["prompts"]))  # what train_lm reads
    lm, hist = train_lm(dims, corpus, cfg, seed)
    save_net(out / f"lm_s{k}.safetensors", lm, model="lm", seed=k)
    return {"history": hist, "seconds": time.perf_counter() - start}


def _rm(args: tuple) -> dict:
    import time

    import numpy as np

    from models.farma.experiment import load_net, residual, save_net, seed_data, train_rm

    name, cfg, k, seed, data, out = args
    start = time.perf_counter()
    if name == "farma_more":  # the data ablation: FaRMA on seed 0's LM with prepare.more_pairs pairs
        with np.load(data.parent / "more_pairs.npz") as z:
            pairs = {key: z[key] for key in z.files}
    else:
        _, pairs = seed_data(np.load(data), k)
    lm = load_net(out / f"lm_s{k}.safetensors").train()
    net, hist = train_rm("farma" if name == "farma_more" else name, lm, pairs, cfg, seed)
    save_net(out / f"{name}_s{k}.safetensors", net, model=name, seed=k)
    res = residual(net.eval(), pairs) if net.out_dim > 1 else float("nan")
    return {"history": hist, "seconds": time.perf_counter() - start, "residual": res}


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25 import parallel
    from models.farma.experiment import RMS, Config

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    cfg = Config(
        emb=tp.emb,
        hidden=tp.hidden,
        lm_epochs=tp.lm_epochs,
        lm_lr=tp.lm_lr,
        rm_lr=tp.rm_lr,
        batch=tp.batch,
        alternations=tp.alternations,
        rm_epochs=tp.rm_epochs,
        beta=float(meta["beta"]),
        target_grad=tp.max_target_grad,
        reset_optimizer=tp.reset_optimizer,
    )
    seeds = int(meta["seeds"])
    out = ctx.out / "models"
    out.mkdir()
    data = ctx.paths.prepared / "data.npz"
    start = time.perf_counter()
    histories, fits = [], []

    def record(name: str, k: int, res: dict) -> None:
        h = pd.DataFrame(res["history"], columns=["phase", "loss"]).assign(model=name, seed=k)
        histories.append(h.rename_axis("step").reset_index())
        fits.append({"model": name, "seed": k, "seconds": res["seconds"], "final_loss": h.loss.iloc[-1],
                     "max_residual": res.get("residual", float("nan"))})  # fmt: skip

    lm_tasks = [(meta, cfg, k, ctx.seed_for("lm", k), data, out) for k in range(seeds)]
    ctx.log.info("base LM on %d seed(s), %d worker(s)", seeds, min(tp.workers, seeds))
    for i, res in parallel.imap(_lm, lm_tasks, tp.workers, preload=("lightning",)):
        record("lm", i, res)
        ctx.log.info("LM seed %d: final loss %.3f (%.1f s)", i, res["history"][-1][1], res["seconds"])
    # CD regresses R*, which a user's pairs do not have
    rms = [m for m in RMS if m != "cd" or meta["source"] == "synthetic"]
    more = [("farma_more", 0)] if meta.get("more_pairs") else []
    plan = more + [(m, k) for k in range(seeds) for m in rms]
    tasks = [(m, cfg, k, ctx.seed_for("rm", m, k), data, out) for m, k in plan]
    ctx.log.info(
        "%d reward models (%s) on %d worker(s)", len(tasks), ", ".join(rms), min(tp.workers, len(tasks))
    )
    for done, (i, res) in enumerate(parallel.imap(_rm, tasks, tp.workers, preload=("lightning",)), 1):
        m, k = plan[i]
        record(m, k, res)
        ctx.log.info(
            "[%d/%d] %s seed %d: final loss %.3f (%.1f s; %.0f s so far)",
            done, len(tasks), m, k, res["history"][-1][1], res["seconds"], time.perf_counter() - start,
        )  # fmt: skip
    pd.concat(histories, ignore_index=True)[["model", "seed", "step", "phase", "loss"]].to_csv(
        ctx.out / "history.csv", index=False
    )
    pd.DataFrame(fits).sort_values(["model", "seed"]).to_csv(ctx.out / "fits.csv", index=False)
    ctx.write_json(
        "meta.json",
        {
            "seeds": seeds,
            "models": ["lm", *rms, *(m for m, _ in more)],
            "config": cfg.__dict__,
            "source": meta["source"],
        },
    )
