"""The OLS simulation per p (X, y with the test rows last, beta, each replicate's fold labels and split order)
and the real table (diabetes, or a CSV in data/cross_conformal/input/ behind ``real_source: csv``) with its random train/test splits and folds.
The real table and the fold settings are checked before anything is written."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np

    from icml25.errors import UserError
    from models.cross_conformal.data import diabetes_frame, ols_simulation, read_table, sim_name
    from models.cross_conformal.experiment import real_splits, replicate_folds
    from models.cross_conformal.regressor import check_folds

    pp = ctx.params.prepare
    if pp.real_source == "csv":  # check the real table before writing anything
        try:
            frame = read_table(ctx.input_path("real_csv", pp.real_csv), pp.real_target)
        except ValueError as exc:
            raise UserError(f"papers.cross_conformal.prepare: {exc}") from None
        name = pp.real_csv
    else:
        frame, name = diabetes_frame(), "diabetes"
    n_train = len(frame) - pp.real_test
    if n_train < 2 * max(pp.real_folds):
        raise UserError(
            f"papers.cross_conformal.prepare: {name} has {len(frame)} rows; real_test = {pp.real_test} leaves "
            f"{n_train} training rows, too few for K = {max(pp.real_folds)} folds"
        )
    try:
        check_folds(pp.n, pp.folds)
    except ValueError as exc:
        raise UserError(f"papers.cross_conformal.prepare: n = {pp.n}, folds = {pp.folds}: {exc}") from None
    for p in pp.p_grid:
        X, y, beta = ols_simulation(ctx.rng("simulation", p), pp.n, p, pp.replications, pp.n_test, pp.signal)
        folds, split = replicate_folds(pp.n, pp.folds, pp.replications, ctx.rng("folds", p))
        np.savez(ctx.out / sim_name(p), X=X, y=y, beta=beta, folds=folds, split=split)
    splits = real_splits(len(frame), n_train, pp.real_splits, pp.real_folds, ctx.rng("real_splits"))
    frame.to_csv(ctx.out / "real.csv", index=False)
    np.savez(ctx.out / "real_splits.npz", **splits)
    ctx.write_json(
        "meta.json",
        {
            "simulation": {
                "n": pp.n,
                "n_test": pp.n_test,
                "p_grid": list(pp.p_grid),
                "replications": pp.replications,
                "signal": pp.signal,
                "folds": pp.folds,
            },
            "real": {
                "name": name,
                "target": pp.real_target,
                "rows": len(frame),
                "features": len(frame.columns) - 1,
                "n_train": n_train,
                "n_test": pp.real_test,
                "splits": pp.real_splits,
                "folds": list(pp.real_folds),
            },
        },
    )
    ctx.log.info(
        "simulation: p in %s, %d replicates; real: %s (%d rows)",
        list(pp.p_grid),
        pp.replications,
        name,
        len(frame),
    )
