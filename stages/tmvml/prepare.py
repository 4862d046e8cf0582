"""Prepare: the real set (Yeast from the river package, two views Att1-79 and Att80-103, 14 labels; or a user's
CSV with ``source: mulan``) with a seeded assignment of its rows to ``folds`` folds (``real.npz``: x0, x1, ...,
y, fold); the spec's synthetic draws (``synthetic.npz``: per variant, seed and training size, the train and test
views and labels; variant ``spec``: three views of widths 30/40/50 PCA'd to ``synthetic_dim`` on the training rows
plus a noise view; ``shared``: the views in shared coordinates, no PCA); the planted tensors (``planted.npz``: G*
of tubal rank 1, 20 x 4 x 8, and G* + noise per seed); ``meta.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _real(ctx: StageContext):
    from icml25.errors import UserError
    from models.tmvml.data import read_table, read_yeast

    pp = ctx.params.prepare
    if pp.source == "yeast":
        views, y, labels = read_yeast()
        return views, y, labels, "Yeast (river 0.26.1's yeast.csv.gz): views Att1-79 and Att80-103"
    if not pp.mulan:
        raise UserError("papers.tmvml.prepare.mulan: empty; name a CSV under data/tmvml/input/")
    if not pp.mulan_views or not pp.mulan_labels:
        raise UserError(
            "papers.tmvml.prepare.mulan_views and mulan_labels: name the views' and labels' columns"
        )
    path = ctx.input_path("mulan", pp.mulan)
    views, y, labels = read_table(path, [v for v in pp.mulan_views.split(";")], pp.mulan_labels)
    return views, y, labels, f"{path.name}: views {pp.mulan_views}, labels {pp.mulan_labels}"


def run(ctx: StageContext) -> None:
    import numpy as np

    from icml25.errors import UserError
    from models.tmvml.data import pca_views, planted, synthetic

    pp = ctx.params.prepare
    views, y, labels, described = _real(ctx)
    n = len(y)
    if n < 2 * pp.folds:
        raise UserError(f"{described}: {n} rows, too few for {pp.folds} folds")
    fold = ctx.rng("folds").permutation(n) % pp.folds
    np.savez(ctx.out / "real.npz", y=y, fold=fold, **{f"x{v}": x for v, x in enumerate(views)})
    syn, draws, width = {}, 0, 0
    for variant in ("spec", "shared"):
        for k in range(pp.synthetic_seeds):
            for n_train in pp.synthetic_train:
                g = ctx.rng("synthetic", variant, k, n_train)
                xs, ys = synthetic(
                    g, n_train + pp.synthetic_test, q=pp.synthetic_labels, shared=variant == "shared"
                )
                tr = [x[:n_train] for x in xs]
                te = [x[n_train:] for x in xs]
                if variant == "spec":
                    tr, te = pca_views(tr, te, pp.synthetic_dim)
                key = f"{variant}_s{k}_n{n_train}"
                for v, (a, b) in enumerate(zip(tr, te, strict=True)):
                    syn[f"{key}_train_x{v}"], syn[f"{key}_test_x{v}"] = a, b
                syn[f"{key}_train_y"], syn[f"{key}_test_y"] = ys[:n_train], ys[n_train:]
                draws, width = draws + 1, len(tr)
    np.savez(ctx.out / "synthetic.npz", **syn)
    tensors = {}
    for k in range(pp.planted_seeds):
        tensors[f"star_s{k}"], tensors[f"noisy_s{k}"] = planted(ctx.rng("planted", k), noise=pp.planted_noise)
    np.savez(ctx.out / "planted.npz", **tensors)
    ctx.write_json(
        "meta.json",
        {
            "source": pp.source,
            "data": described,
            "rows": n,
            "views": [int(x.shape[1]) for x in views],
            "labels": labels,
            "folds": pp.folds,
            "label_rate": float(y.mean()),
            "synthetic": sorted({k.rsplit("_train", 1)[0] for k in syn if "_train_y" in k}),
            "synthetic_views": width,
            "planted_seeds": pp.planted_seeds,
        },
    )
    ctx.log.info("%s: %d rows, views %s, %d labels, %d folds; %d synthetic draws; %d planted tensors", described, n,
                 [x.shape[1] for x in views], y.shape[1], pp.folds, draws, pp.planted_seeds)  # fmt: skip
