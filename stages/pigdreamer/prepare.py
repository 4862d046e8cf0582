"""Prepare: the environment's settings (``env.json``, with the evaluation seed) and the layouts of the evaluation
episodes (``layouts.csv``: start, goal, the hazard map as a 0/1 string, the hazard band and the best blind
route's expected cost, models/pigdreamer/env.py). Evaluation rebuilds the same episodes from the seed and checks
them against this table. Training episodes are drawn inside training from each agent's own stream."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from icml25.errors import UserError
    from models.pigdreamer.agent import EnvConfig
    from models.pigdreamer.env import layouts

    p = ctx.params.prepare
    if p.hazards > p.size * p.size - 2:
        raise UserError(
            f"prepare.hazards {p.hazards} exceeds the {p.size * p.size - 2} cells besides start and goal"
        )
    env = EnvConfig(size=p.size, horizon=p.horizon, hazards=p.hazards, visibility=p.visibility,
                    step_penalty=p.step_penalty)  # fmt: skip
    seed = ctx.seed_for("evaluation episodes")
    frame = layouts(env.make(p.episodes, seed))
    frame.to_csv(ctx.out / "layouts.csv", index=False)
    ctx.write_json("env.json", {"env": asdict(env), "episodes": p.episodes, "seed": seed})
    ctx.log.info("%d evaluation layouts (%dx%d, %d hazards); best blind route: expected cost %.3f on average",
                 len(frame), p.size, p.size, p.hazards, frame.blind_cost.mean())  # fmt: skip
