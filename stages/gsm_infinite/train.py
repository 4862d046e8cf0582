"""Inference (nothing to train): every simulated reasoner on every symbolic set, max_samples attempts each for
the depth-limited one; and the real SmolLM2-135M, greedy, on a zero-noise symbolic slice
(models/gsm_infinite/harness.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from icml25.io import read_jsonl
    from models.gsm_infinite.generate import problem_set
    from models.gsm_infinite.harness import run_smollm2, simulate_reasoners

    tp = ctx.params.train
    replies = ctx.out / "replies"
    replies.mkdir()
    for path in sorted(ctx.paths.prepared.glob("symbolic*.jsonl")):
        simulate_reasoners(read_jsonl(path), replies, path.stem, ctx.seed, tp.max_samples)
        ctx.log.info("%s: simulated reasoners done", path.name)
    meta = {"real_model": None}
    if tp.real_model:
        problems = list(
            problem_set("symbolic", list(tp.real_ops), 0, tp.real_n, ctx.seed_for("real_problems"))
        )
        meta["real_model"] = run_smollm2(problems, replies / "real_smollm2.jsonl", tp.real_max_new_tokens)
        ctx.log.info("SmolLM2-135M: %d problems", len(problems))
    ctx.write_json("meta.json", meta)
