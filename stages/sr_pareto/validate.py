"""Great Expectations per data set: the file there with the rows and features meta.json records, n >= 2 x the
most constants an expression of the maximum length can hold ((L + 1) / 2 leaves); its columns by name (the
planted sets' x0, x1 and diabetes' bmi, bp, s5 from models/sr_pareto/data.py, then ``target``; a Friedman or
PMLB set: ``target`` and as many feature columns as meta.json records), every value a finite number, no
constant column."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

#: Finite: a NaN fails the not-null check, an infinity these bounds.
FINITE = {"min": -1e300, "max": 1e300}


def feature_names(ds: dict) -> tuple[str, ...] | None:
    """The feature columns of a prepared set as its data definition names them, or None when only their
    number is known (Friedman: the ``friedman_features`` prepare chose; PMLB: the user's file)."""
    from models.sr_pareto import data

    name = ds["name"]
    if name.removesuffix("_noisy") in data.PLANTED:
        return tuple(c for c in data.planted(name, 8, 0).columns if c != data.TARGET)
    if name == "diabetes" and ds["features"] == len(data.DIABETES_FEATURES):  # PMLB's Pima diabetes has 8
        return tuple(data.DIABETES_FEATURES)
    return None


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.tables import read_csv
    from icml25.validation import (
        Column,
        Others,
        failed_table,
        read_meta,
        usable,
        validate_frame,
        write_validation,
    )
    from models.sr_pareto.data import TARGET

    meta = read_meta(ctx.paths.prepared / "meta.json")
    need = 2 * ((meta["max_length"] + 1) // 2)
    sets = pd.DataFrame(
        {
            "name": [ds["name"] for ds in meta["datasets"]],
            "rows": [ds["rows"] for ds in meta["datasets"]],
            "features": [ds["features"] for ds in meta["datasets"]],
        }
    )
    summaries = [
        validate_frame(
            sets,
            "datasets",
            [
                Column("name", kind="string"),
                Column("rows", kind="integer", min=need),
                Column("features", kind="integer", min=1),
            ],
            rows=len(meta["datasets"]),
            key="name",
        )
    ]
    spread = []
    for ds in meta["datasets"]:
        try:
            frame = read_csv(ctx.paths.prepared / f"{ds['name']}.csv")
        except ValueError as exc:
            summaries.append(failed_table(ds["name"], str(exc)))
            continue
        target, names = Column(TARGET, **FINITE), feature_names(ds)
        if names is None:
            others = Others(ds["features"], Column("<feature>", **FINITE))
            summary = validate_frame(frame, ds["name"], [target], rows=ds["rows"], others=others)
        else:
            columns = [*(Column(c, **FINITE) for c in names), target]
            summary = validate_frame(frame, ds["name"], columns, rows=ds["rows"])
        summaries.append(summary)
        if usable(summary):
            spread += [
                {"dataset": ds["name"], "column": c, "distinct": frame[c].nunique()} for c in frame.columns
            ]
    spread_columns = [
        Column("dataset", kind="string"),
        Column("column", kind="string"),
        Column("distinct", kind="integer", min=2),
    ]
    frame = pd.DataFrame(spread, columns=[c.name for c in spread_columns])
    summaries.append(validate_frame(frame, "columns", spread_columns, min_rows=0, key=("dataset", "column")))
    write_validation(ctx.out, summaries)
