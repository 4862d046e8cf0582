"""Evaluate: every trained agent's final (sampling) policy on the prepared evaluation episodes (the same for all
agents; rebuilt from the prepared seed and checked against layouts.csv): return, cost, success, episode length,
the cost and reward critics' normalised errors MSE / Var against the discounted Monte-Carlo to-go of the episode
(models/pigdreamer/ppo.py, ``evaluate``), and the leakage check (the largest change of the actor's logits over
``leak_states`` evaluation states when the map is replaced by random values). Writes ``evaluation.csv`` and
``meta.json`` and carries train's ``history.csv`` and the layouts to the report."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25.errors import UserError
    from models.pigdreamer.env import layouts
    from models.pigdreamer.ppo import evaluate, load_agents

    tmeta = ctx.read_json(ctx.paths.trained / "meta.json")
    pmeta = ctx.read_json(ctx.paths.prepared / "env.json")
    plan = [(i, v) for i in range(int(tmeta["seeds"])) for v in tmeta["variants"]]
    net, metas, env, ppo = load_agents(
        [ctx.paths.trained / "agents" / f"{v}_s{i}.safetensors" for i, v in plan]
    )
    episodes, seed = int(pmeta["episodes"]), int(pmeta["seed"])
    prepared = pd.read_csv(ctx.paths.prepared / "layouts.csv", dtype={"map": str})
    rebuilt = layouts(env.make(episodes, seed))
    cols = ["start_row", "goal_row", "map"]
    if not prepared[cols].equals(rebuilt[cols]):
        raise UserError(
            "the evaluation episodes rebuilt from the prepared seed differ from layouts.csv (re-run prepare)"
        )
    start = time.perf_counter()
    res = evaluate(net, env, episodes, seed, ppo.gamma, ctx.params.evaluate.leak_states)
    rows = []
    for k, (i, v) in enumerate(plan):
        rows.append({"seed": i, "variant": v, **{name: float(res[name][k]) for name in res},
                     "lambda": float(metas[k]["lambda"])})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame.to_csv(ctx.out / "evaluation.csv", index=False)
    ctx.log.info(
        "%d agents x %d episodes evaluated (%.1f s)", len(plan), episodes, time.perf_counter() - start
    )
    for r in rows:
        ctx.log.info("seed %d %s: return %.3f, cost %.3f, success %.2f, cost-critic error %.3f", r["seed"],
                     r["variant"], r["return"], r["cost"], r["success"], r["critic_error_cost"])  # fmt: skip
    ctx.write_json("meta.json", {"episodes": episodes, "seed": seed, "cost_limit": ppo.cost_limit,
                                 "variants": tmeta["variants"], "seeds": tmeta["seeds"],
                                 "train_seconds": tmeta["stack_seconds"], "updates": tmeta["updates"],
                                 "env": tmeta["env"], "ppo": tmeta["ppo"],
                                 "blind_cost": float(prepared.blind_cost.mean()),
                                 "shortest_route": float((prepared.goal_col - prepared.start_col
                                                          + (prepared.goal_row - prepared.start_row).abs()).mean()),
                                 "leak_states": ctx.params.evaluate.leak_states})  # fmt: skip
    ctx.carry(ctx.paths.trained, "history.csv")
    ctx.carry(ctx.paths.prepared, "layouts.csv")
