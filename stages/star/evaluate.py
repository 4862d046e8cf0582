"""Evaluate: every skill model on the held-out chunks (every H-step window of the test demos): per-depth
perplexity, active codes and code counts, reconstruction MSE (``skills.csv``, ``counts.csv``); on every RaRSQ
model the rotation checks (``checks.csv``: forward gap in float32, the float64 gap to vector-quantize-pytorch's
``rotate_to`` in value and input gradient, STE fallbacks); every CST variant in closed loop, ``episodes`` per task
from starts drawn by ``ctx.rng("episodes", seed)`` (the same for every variant of a seed) (``success.csv``);
``summary.json`` (the claims' numbers); ``history.csv`` carried from train."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.io import load_npz
    from icml25.tables import read_csv
    from models.star.api import SkillModel, load_cst
    from models.star.experiment import SKILL_VARIANTS, check_row, summarize
    from models.star.policy import rollout
    from models.star.world import Task, windows

    trained, ep = ctx.paths.trained, ctx.params.evaluate
    meta = ctx.read_json(trained / "meta.json")
    plan = read_csv(trained / "fits.csv")
    test = load_npz(ctx.paths.prepared / "test.npz")
    chunks, _ = windows(test["actions"], test["demo_offset"], int(meta["horizon"]))
    rows, counts, checks, skills = [], [], [], {}
    for f in plan[plan.stage == "skills"].itertuples():
        model = SkillModel.load(trained / "models" / f"{f.name}.safetensors")
        skills[f.name] = model
        u = model.usage(chunks)
        depths = model.config.depths
        rows.append(
            {
                "name": f.name,
                "seed": int(f.seed),
                "variant": f.variant,
                "mse": u["mse"],
                **{f"{k}_{d}": u[f"{k}_{d}"] for d in range(1, depths + 1) for k in ("perplexity", "active")},
            }
        )
        for d in range(1, depths + 1):
            counts += [
                {"seed": int(f.seed), "variant": f.variant, "depth": d, "code": k, "count": c}
                for k, c in enumerate(u[f"counts_{d}"])
            ]
        if SKILL_VARIANTS[f.variant][0] == "rotation":
            x = model.standardiser.forward(chunks)
            row = check_row(model.model, x, ctx.seed_for("upstream", int(f.seed)))
            checks.append({"name": f.name, "seed": int(f.seed), "variant": f.variant, **row})
        ctx.log.info("%s: MSE %.4f, depth-1 perplexity %.2f", f.name, u["mse"], u["perplexity_1"])
    success = []
    tasks = [
        Task(tuple(t["primitives"]), int(t["horizon"]))
        for t in ctx.read_json(ctx.paths.prepared / "tasks.json")
    ]
    for f in plan[plan.stage == "policy"].itertuples():
        policy = load_cst(trained / "models" / f"{f.name}.safetensors")
        sk = skills[f"skills_s{int(f.seed)}_rotation"]
        ok = rollout(
            policy,
            sk.model,
            sk.standardiser,
            tasks,
            ep.episodes,
            ctx.rng("episodes", int(f.seed)),
            meta["start"],
            ep.tolerance,
        )
        success += [
            {"seed": int(f.seed), "variant": f.variant, "task": t, "success": float(ok[t].mean())}
            for t in range(len(tasks))
        ]
        ctx.log.info("%s: success %.3f over %d episodes", f.name, ok.mean(), ok.size)
    pd.DataFrame(rows).to_csv(ctx.out / "skills.csv", index=False)
    pd.DataFrame(counts).to_csv(ctx.out / "counts.csv", index=False)
    check_frame = pd.DataFrame(
        checks,
        columns=[
            "name",
            "seed",
            "variant",
            "forward_gap",
            "peer_value_gap",
            "peer_gradient_gap",
            "fallbacks",
            "pairs",
        ],
    )
    check_frame.to_csv(ctx.out / "checks.csv", index=False)
    pd.DataFrame(success, columns=["seed", "variant", "task", "success"]).to_csv(
        ctx.out / "success.csv", index=False
    )
    ctx.write_json(
        "summary.json",
        {
            "source": meta["source"],
            "horizon": meta["horizon"],
            "seeds": meta["seeds"],
            "steps": meta["steps"],
            "cst_steps": meta["cst_steps"],
            "test_chunks": len(chunks),
            "codes": max((m.config.codes for m in skills.values()), default=0),
            "episodes": ep.episodes,
            "tolerance": ep.tolerance,
            **summarize(rows, checks, success),
        },
    )
    ctx.carry(trained, "history.csv")
