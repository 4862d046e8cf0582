"""Train: every variant x seed (models/pigdreamer/agent.py, ppo.py), split into one stack per worker, each stack
one Lightning module on a forked process (an agent's weights, environments and noise are its own whatever its
stack: tests/papers/pigdreamer/test_method.py). Writes ``agents/<variant>_s<seed>.safetensors``, ``history.csv``
(per update and agent: return, cost and success of the episodes finished in the rollout, lambda) and
``meta.json`` (the settings, seconds per stack)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _train(args: tuple) -> dict:
    import logging
    import time

    from models.common.training import Progress
    from models.pigdreamer.ppo import save_agent, train

    plan, specs, updates, env, ppo, out, log_every, log_name, stack = args
    start = time.perf_counter()
    log = logging.getLogger(
        log_name
    )  # a forked worker inherits the stage's handlers: progress shows as it comes
    names = ", ".join(f"{v}{i}" for i, v in plan)

    def report(step: int, rec: dict) -> None:
        log.info("stack %d (%s) update %d/%d: cost %s, success %s (%.0f s)", stack, names, rec["update"], updates,
                 ", ".join(f"{c:.2f}" for c in rec["cost"]), ", ".join(f"{c:.2f}" for c in rec["success"]),
                 time.perf_counter() - start)  # fmt: skip

    module = train(specs, updates, env, ppo, callbacks=[Progress(log_every, report)])
    for k, (i, v) in enumerate(plan):
        save_agent(out / f"{v}_s{i}.safetensors", module.net, k, env, ppo, module.lam[k], updates)
    return {"history": module.history, "seconds": time.perf_counter() - start}


def run(ctx: StageContext) -> None:
    import time

    import pandas as pd

    from icml25 import parallel
    from icml25.errors import UserError
    from models.pigdreamer.agent import VARIANTS, AgentSpec, EnvConfig, PPOConfig

    tp = ctx.params.train
    bad = [v for v in tp.variants if v not in VARIANTS]
    if bad or not tp.variants:
        raise UserError(f"train.variants {list(tp.variants)}: each one of {', '.join(VARIANTS)}")
    if tp.envs % tp.minibatches:
        raise UserError(f"train.minibatches {tp.minibatches} must divide train.envs {tp.envs}")
    env = EnvConfig(**ctx.read_json(ctx.paths.prepared / "env.json")["env"])
    ppo = PPOConfig(envs=tp.envs, rollout=tp.rollout, epochs=tp.epochs, minibatches=tp.minibatches, lr=tp.lr, anneal_lr=tp.anneal_lr,
                    gamma=tp.gamma, gae_lambda=tp.gae_lambda, entropy_coef=tp.entropy_coef, hidden=tp.hidden,
                    cost_limit=tp.cost_limit, lagrange_lr=tp.lagrange_lr, align_weight=tp.align_weight)  # fmt: skip
    out = ctx.out / "agents"
    out.mkdir()
    seeds = [ctx.seed_for("agent", k) % 2**31 for k in range(tp.seeds)]
    plan = [(i, v) for i in range(tp.seeds) for v in tp.variants]
    # the agents split into one stack per worker: stacking changes nothing in an agent's computation
    n = min(tp.workers, len(plan))
    chunks = [plan[len(plan) * j // n : len(plan) * (j + 1) // n] for j in range(n)]
    every = max(1, tp.updates // 4) * tp.epochs * tp.minibatches
    tasks = [(c, [AgentSpec(v, seeds[i]) for i, v in c], tp.updates, env, ppo, out, every, ctx.log.name, j)
             for j, c in enumerate(chunks)]  # fmt: skip
    ctx.log.info("%d agents (%s x %d seeds), %d PPO updates of %d x %d steps each, in %d stack(s) on as many "
                 "worker(s)", len(plan), "/".join(tp.variants), tp.seeds, tp.updates, tp.envs, tp.rollout, n)  # fmt: skip
    start = time.perf_counter()
    rows, seconds = [], []
    for done, (j, res) in enumerate(parallel.imap(_train, tasks, tp.workers, preload=("lightning",)), 1):
        names = ", ".join(f"{v}{i}" for i, v in chunks[j])
        for rec in res["history"]:
            for k, (i, v) in enumerate(chunks[j]):
                rows.append({"seed": i, "variant": v, "update": rec["update"], "return": rec["return"][k],
                             "cost": rec["cost"][k], "success": rec["success"][k], "lambda": rec["lambda"][k]})  # fmt: skip
        seconds.append(res["seconds"])
        ctx.log.info("[%d/%d] stack %d (%s) trained (%.1f s; %.0f s so far)", done, len(tasks), j, names,
                     res["seconds"], time.perf_counter() - start)  # fmt: skip
    pd.DataFrame(rows).sort_values(["seed", "variant", "update"]).to_csv(ctx.out / "history.csv", index=False)
    ctx.write_json("meta.json", {"variants": list(tp.variants), "seeds": tp.seeds, "agent_seeds": seeds,
                                 "updates": tp.updates, "stack_seconds": seconds,
                                 "env": env.__dict__, "ppo": ppo.__dict__})  # fmt: skip
