"""base (Adam), ft = base fine-tuned with SGD on a subset of classes, 2 n_pairs independent models trained like
base from their own seeds, and ft_perm = ft under a random output-preserving permutation (+ scaling); every
model saved as a checkpoint in the Llama weight layout, with the test accuracies (Lightning;
models/model_independence/lit.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from models.model_independence.checkpoints import save_checkpoint
    from models.model_independence.lit import GLULightning, accuracy, load_split
    from models.model_independence.permutations import output_preserving_transform
    from models.model_independence.training import fit, glu_config

    p, prepared = ctx.params.train, ctx.paths.prepared
    cfg = glu_config(p.d_model, p.d_hidden, p.n_blocks)
    order = ctx.seed_for("data_order")  # base and the independent models see the same data in the same order
    base = GLULightning(cfg, [ctx.seed_for("base_init")], optimizer="adam", lr=p.lr)
    fit(base, prepared, p.batch_size, p.base_steps, None, order)
    ft = GLULightning(cfg, [ctx.seed_for("base_init")], optimizer="sgd", lr=p.ft_lr)
    ft.net.load_member_weights([base.net.member(0)])
    fit(ft, prepared, p.batch_size, p.ft_steps, p.ft_classes, ctx.seed_for("finetune_order"))
    indep_seeds = [ctx.seed_for("independent_init", k) for k in range(2 * p.n_pairs)]
    indep = GLULightning(cfg, indep_seeds, optimizer="adam", lr=p.lr)
    fit(indep, prepared, p.batch_size, p.base_steps, None, order)

    models = {"base": base.net.member(0), "ft": ft.net.member(0)}
    models["ft_perm"] = output_preserving_transform(
        models["ft"], cfg.n_blocks, seed=ctx.seed_for("permutation"), scale=p.scale_permuted
    )
    for k in range(2 * p.n_pairs):
        models[f"indep_{k:02d}"] = indep.net.member(k)
    x, y = load_split(prepared, "test")
    acc = {"base": accuracy(base.net, x, y)[0], "ft": accuracy(ft.net, x, y)[0]}
    acc.update({f"indep_{k:02d}": a for k, a in enumerate(accuracy(indep.net, x, y))})
    for name, weights in models.items():
        save_checkpoint(ctx.out / "checkpoints" / name, cfg.to_json(), weights)
    ctx.write_json("accuracy.json", acc)
    ctx.log.info(
        "test accuracy: base %.3f, ft %.3f, independent mean %.3f",
        acc["base"],
        acc["ft"],
        sum(v for k, v in acc.items() if k.startswith("indep")) / (2 * p.n_pairs),
    )
