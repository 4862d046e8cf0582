"""Train: stage 1 (the skill autoencoders: RaRSQ and STE per seed from one initialisation, and the ablations),
then stage 2 (the CST variants per seed on that seed's RaRSQ codes of the primitive-aligned training chunks;
simulated world only: a user's HDF5 has no tasks). Both are Lightning fits on ``workers`` forked processes
(icml25/parallel.py); each fit seeds itself from ``ctx.seed_for("skills", seed)`` or ``ctx.seed_for("cst",
seed)``, shared by the variants of a seed, so the artifacts do not depend on the number of workers.

Writes ``models/skills_s<seed>_<variant>.safetensors`` (weights, config, standardisation),
``models/policy_s<seed>_<variant>.safetensors``, ``history.csv`` (per fit and step: loss terms, depth-1
perplexity of the minibatch, STE fallbacks; CE, L1 and exact-code accuracy), ``fits.csv`` and ``meta.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _skill_task(args: tuple) -> dict:
    from icml25.io import load_npz
    from models.star.experiment import run_skill_fit
    from models.star.world import windows

    fit, path, horizon, steps, seed, out, opts, sizes = args
    data = load_npz(path)
    chunks, _ = windows(data["actions"], data["demo_offset"], horizon)
    return run_skill_fit(fit, chunks, steps, seed, out, **opts, **sizes)


def _policy_task(args: tuple) -> dict:
    from icml25.io import load_npz
    from models.star.experiment import run_policy_fit

    fit, path, tasks, steps, seed, out, opts, sizes = args
    return run_policy_fit(fit, load_npz(path), tasks, steps, seed, out, **opts, **sizes)


def _run(ctx: StageContext, label: str, fn, fits: list, tasks: list, workers: int) -> list[dict]:
    import time

    from icml25 import parallel

    if not tasks:
        return []
    ctx.log.info("%s: %d fits on %d worker(s)", label, len(tasks), min(workers, len(tasks)))
    start = time.perf_counter()
    results: list = [None] * len(tasks)
    for done, (i, res) in enumerate(parallel.imap(fn, tasks, workers, preload=("lightning",)), 1):
        results[i] = res
        last = res["history"][-1]
        ctx.log.info(
            "[%d/%d] %s: loss %.3f (%.0f s; %.0f s so far)",
            done,
            len(tasks),
            fits[i].name,
            last["loss"],
            res["seconds"],
            time.perf_counter() - start,
        )
    return results


def run(ctx: StageContext) -> None:
    import pandas as pd

    from models.star.experiment import policy_plan, skill_plan

    tp = ctx.params.train
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    out = ctx.out / "models"
    out.mkdir()
    train_npz = ctx.paths.prepared / "train.npz"
    sizes = {
        "latent": tp.latent,
        "hidden": tp.hidden,
        "depths": tp.depths,
        "codes": tp.codes,
        "beta": tp.beta,
    }
    # the slowest fits (the library's EMA quantizer) first, so that no worker is left alone with one at the end
    skill_fits = sorted(skill_plan(tp.seeds, tuple(tp.ablations)), key=lambda f: f.variant != "library_ema")
    skill_tasks = [
        (
            f,
            train_npz,
            meta["horizon"],
            tp.steps,
            ctx.seed_for("skills", f.seed),
            out,
            {"batch": tp.batch, "lr": tp.lr},
            {**sizes, "init_sd": tp.init_sd},
        )
        for f in skill_fits
    ]
    skill_results = _run(ctx, "stage 1 (skills)", _skill_task, skill_fits, skill_tasks, tp.workers)
    policy_fits = policy_plan(tp.seeds, tuple(tp.cst_variants)) if meta["source"] == "simulated" else []
    policy_tasks = [
        (
            f,
            train_npz,
            meta["tasks"],
            tp.cst_steps,
            ctx.seed_for("cst", f.seed),
            out,
            {"batch": tp.cst_batch, "lr": tp.lr},
            {"d_model": tp.d_model, "layers": tp.layers},
        )
        for f in policy_fits
    ]
    policy_results = _run(ctx, "stage 2 (CST)", _policy_task, policy_fits, policy_tasks, tp.workers)
    frames, plan = [], []
    for stage, fits, results in (
        ("skills", skill_fits, skill_results),
        ("policy", policy_fits, policy_results),
    ):
        for f, r in zip(fits, results, strict=True):
            h = pd.DataFrame(r["history"])
            frames.append(
                h.assign(name=f.name, stage=stage, seed=f.seed, variant=f.variant, step=range(1, len(h) + 1))
            )
            plan.append({"name": f.name, "stage": stage, "seed": f.seed, "variant": f.variant})
    history = pd.concat(frames, ignore_index=True)
    lead = ["name", "stage", "seed", "variant", "step"]
    history[lead + [c for c in history.columns if c not in lead]].to_csv(ctx.out / "history.csv", index=False)
    pd.DataFrame(plan).to_csv(ctx.out / "fits.csv", index=False)
    ctx.write_json(
        "meta.json",
        {
            **meta,
            "seeds": tp.seeds,
            "steps": tp.steps,
            "cst_steps": tp.cst_steps,
            "ablations": [a for a in tp.ablations],
            "cst_variants": [v for v in tp.cst_variants] if policy_fits else [],
        },
    )
