"""Prepare: the features and labels (scikit-learn's digits, pixels / 16; a user's CSV, standardised by the
training rows; or Dolly-style JSONL, hashed words of instruction and context with the category as the label),
a random train/test split and a Dirichlet(alpha) label split of the training rows over the clients (each with
at least ``min_rows`` rows). Writes ``data.npz`` (x_train, y_train, client, x_test, y_test), ``partition.csv``
(rows per client and class), ``meta.json`` and, for Dolly, ``dolly.jsonl`` (each record with its split and client:
the texts the paper profile's language model tunes on). Nothing is downloaded: the digits ship with scikit-learn."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _source(ctx: StageContext):  # -> x, y, description, standardise, Dolly records (or None)
    from icml25.errors import UserError
    from models.ferret.data import digits, from_csv, from_dolly

    pp = ctx.params.prepare
    if pp.source == "digits":
        x, y, described = digits()
        return x, y, described, False, None
    name = pp.csv if pp.source == "csv" else pp.dolly
    if not name:
        raise UserError(f"papers.ferret.prepare.{pp.source}: empty; name a file under data/ferret/input/")
    path = ctx.input_path(pp.source, name)
    if pp.source == "csv":
        x, y, described = from_csv(path, pp.target)
        return x, y, described, True, None
    x, y, described, records = from_dolly(path, pp.dolly_features)
    return x, y, described, True, records


def run(ctx: StageContext) -> None:
    import json

    import numpy as np
    import pandas as pd

    from models.ferret.data import DOLLY_FIELDS, federate

    pp = ctx.params.prepare
    x, y, described, scale, records = _source(ctx)
    data = federate(
        x,
        y,
        n_test=round(pp.test_fraction * len(y)),
        clients=pp.clients,
        alpha=pp.alpha,
        g=ctx.rng("data"),
        scale=scale,
        min_rows=pp.min_rows,
    )
    np.savez(
        ctx.out / "data.npz",
        x_train=data.x_train,
        y_train=data.y_train,
        client=data.client,
        x_test=data.x_test,
        y_test=data.y_test,
    )
    if records is not None:  # the texts, for the paper profile's language model (train.model: smollm2)
        split = np.empty(len(records), dtype=object)
        owner = np.full(len(records), -1)
        split[data.train_index], split[data.test_index] = "train", "test"
        owner[data.train_index] = data.client
        with open(ctx.out / "dolly.jsonl", "w", encoding="utf-8") as f:
            for rec, sp, c in zip(records, split, owner, strict=True):
                f.write(
                    json.dumps({**{k: rec[k] for k in DOLLY_FIELDS}, "split": sp, "client": int(c)}) + "\n"
                )
    counts = pd.crosstab(data.client, data.y_train).reindex(
        index=range(pp.clients), columns=range(data.classes), fill_value=0
    )
    part = counts.stack().rename("rows").reset_index()
    part.columns = ["client", "label", "rows"]
    part.to_csv(ctx.out / "partition.csv", index=False)
    sizes = counts.sum(1)
    ctx.write_json(
        "meta.json",
        {
            "source": pp.source,
            "data": described,
            "train_rows": len(data.y_train),
            "test_rows": len(data.y_test),
            "features": int(data.x_train.shape[1]),
            "classes": data.classes,
            "clients": pp.clients,
            "alpha": pp.alpha,
            "min_rows": pp.min_rows,
            "standardised": scale,
            "client_rows": {"min": int(sizes.min()), "max": int(sizes.max())},
        },
    )
    ctx.log.info(
        "%s: %d train / %d test rows, %d clients (%d to %d rows each)",
        described,
        len(data.y_train),
        len(data.y_test),
        pp.clients,
        sizes.min(),
        sizes.max(),
    )
