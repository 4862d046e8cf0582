"""One JSONL file per (subset, context): n_per_op problems per op without noise, n_noisy per noisy op at each
context target (n_noisy_symbolic for the symbolic subset) (models/gsm_infinite/generate.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from models.gsm_infinite.generate import problem_set

    pp = ctx.params.prepare
    counts = {}
    for subset in pp.subsets:
        ops = pp.symbolic_ops if subset == "symbolic" else pp.realistic_ops
        noisy = pp.n_noisy_symbolic if subset == "symbolic" else pp.n_noisy
        plan = [(0, ops, pp.n_per_op)] + [(c, pp.noisy_ops, noisy) for c in pp.contexts]
        for context, op_list, n in plan:
            name = f"{subset}_c{context}.jsonl"
            counts[name] = ctx.write_jsonl(name, problem_set(subset, list(op_list), context, n, ctx.seed))
            ctx.log.info("%s: %d problems", name, counts[name])
    ctx.write_json("meta.json", {"sets": counts, "seed": ctx.seed})
