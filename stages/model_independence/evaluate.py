"""Every statistic on every pair (pvalues.csv), phi_MATCH on all pairs of the first models (heatmap.csv), and
summary.json: every number the claims and tables read (KS tests against uniform, minima over the independent
pairs, PERMTEST's rank, the adversarial phi_U, the accuracies); accuracy.json carried from train. The models'
shapes and the number of pairs come from the trained checkpoints themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from models.model_independence import experiment as ex
    from models.model_independence.lit import load_split

    e = ctx.params.evaluate
    options = {"metric": e.match_metric, "sides": e.spearman_sides, "dead_units": e.dead_units}
    ckpts = ex.load_checkpoints(ctx.paths.trained / "checkpoints")
    weights = {n: c.weights for n, c in ckpts.items()}
    n_blocks = ckpts["base"].n_blocks
    x_test, _ = load_split(ctx.paths.prepared, "test")
    acts = ex.activations(weights, x_test[: e.n_inputs], n_blocks)

    rows = ex.pair_tests(
        weights, acts, n_blocks, permutations=e.permutations, seed=ctx.seed_for("permtest"), **options
    )
    heat = ex.heatmap(acts, ex.heatmap_names(list(ckpts), e.heatmap_models), **options)
    ctx.carry(ctx.paths.trained, "accuracy.json")
    ex.write_evaluated(
        ctx.out, rows, heat, ctx.read_json(ctx.paths.trained / "accuracy.json"), e.permutations
    )
    ctx.log.info("%d pairs x 4 statistics, %d heatmap pairs", len(rows) // 4, len(heat))
