"""Per run r (stream "train", r): both modes' proxies; GHOST in both modes and without retention in the headline
mode; local GCNs (common init) and their one-shot FedAvg; the centralised GCN (models/ghost/experiment.py
`train_run`). Saved as safetensors under run<r>/ with the training histories (history.json)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from models.ghost import api
    from models.ghost.config import headline
    from models.ghost.experiment import load_federated, train_run
    from models.ghost.store import gcn_shape, generator_shape, save_module

    cfg = ctx.params.train
    main, other = headline(cfg)
    runs = ctx.read_json(ctx.paths.prepared / "meta.json")["runs"]
    for r in range(runs):
        fed = load_federated(ctx.paths.prepared, r)
        trained = train_run(fed, cfg, seed=ctx.seed_for("train", r))
        out = ctx.out / f"run{r}"
        for mode, gens in trained.generators.items():
            for k, g in enumerate(gens):
                save_module(g, out / "generators" / mode / f"client{k:02d}.safetensors", generator_shape(g))
        for name, model in trained.models.items():
            save_module(model, out / "models" / f"{name}.safetensors", gcn_shape(model))
        ctx.write_json(f"run{r}/history.json", trained.history)
        ctx.log.info(
            "run %d: GHOST (%s) %.3f, FedAvg %.3f",
            r,
            main,
            api.evaluate(trained.ghost, fed),
            api.evaluate(trained.models["fedavg"], fed),
        )
    ctx.write_json("meta.json", {"runs": runs, "headline": main, "other": other})
