"""Builtin sets (planted with the seed, Friedman 1-3 on a fixed feature subset, diabetes on bmi/bp/s5) or PMLB
files from ``pmlb_root`` (a folder inside data/sr_pareto/input/); one CSV per data set (features, ``target``) and
meta.json (the maximum length, the grammar's operators, each set's rows, features and planted expression)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    from icml25.errors import UserError
    from models.sr_pareto import data

    p = ctx.params.prepare
    frames = {}
    if p.source == "builtin":
        for name in p.datasets:
            frames[name] = data.builtin(name, p.n_rows, list(p.friedman_features), ctx.seed)
    else:
        if not p.pmlb_names:
            raise UserError("papers.sr_pareto.prepare.pmlb_names: empty; name the PMLB data sets to read")
        for name in p.pmlb_names:
            try:
                frames[name] = data.pmlb(ctx.input_path("pmlb_root", p.pmlb_root), name)
            except (FileNotFoundError, ValueError) as exc:
                raise UserError(str(exc)) from None
    sets = []
    for name, frame in frames.items():
        frame.to_csv(ctx.out / f"{name}.csv", index=False)
        sets.append(
            {
                "name": name,
                "rows": len(frame),
                "features": frame.shape[1] - 1,
                "planted": data.planted_info(name),
            }
        )
    ctx.write_json(
        "meta.json", {"max_length": p.max_length, "operators": list(p.operators), "datasets": sets}
    )
    ctx.log.info("%d data sets, lengths up to %d", len(sets), p.max_length)
