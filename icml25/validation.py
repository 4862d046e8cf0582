"""Great Expectations gates: each paper's validate stage checks what prepare wrote before anything trains.

Suites are written in code (:class:`Column` rules and a row-count floor), run on an ephemeral GX context with
analytics and progress bars off, and summarised in ``validation.json``. A failed suite raises
:class:`~icml25.errors.ValidationFailed` naming every bad column, so DVC stops the pipeline there: ``train``
depends on validation.json, which is only written when the suite passes.

Great Expectations takes seconds to import: it is imported inside :func:`validate_frame` only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ValidationFailed


@dataclass(frozen=True)
class Column:
    """Expectations on one column: it exists, has no nulls (unless ``nullable``), lies in [min, max] or in
    ``values``."""

    name: str
    min: float | None = None
    max: float | None = None
    values: tuple[Any, ...] | None = None
    nullable: bool = False


def _expectations(columns: Sequence[Column], min_rows: int) -> list[Any]:
    import great_expectations as gx

    exp = gx.expectations
    out: list[Any] = [exp.ExpectTableRowCountToBeBetween(min_value=min_rows)]
    for c in columns:
        out.append(exp.ExpectColumnToExist(column=c.name))
        if not c.nullable:
            out.append(exp.ExpectColumnValuesToNotBeNull(column=c.name))
        if c.min is not None or c.max is not None:
            out.append(exp.ExpectColumnValuesToBeBetween(column=c.name, min_value=c.min, max_value=c.max))
        if c.values is not None:
            out.append(exp.ExpectColumnValuesToBeInSet(column=c.name, value_set=list(c.values)))
    return out


def validate_frame(frame: Any, name: str, columns: Sequence[Column], min_rows: int = 1) -> dict[str, Any]:
    """Run the suite on a pandas DataFrame; returns the summary (``success``, failures by column)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas("pandas").add_dataframe_asset(name=name)
    batch = asset.add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name=f"{name}-suite")
    for expectation in _expectations(columns, min_rows):
        suite.add_expectation(expectation)
    result = batch.validate(context.suites.add(suite))
    failures = []
    for r in result.results:
        if r.success:
            continue
        cfg = r.expectation_config
        failures.append({"expectation": cfg.type, "column": cfg.kwargs.get("column"),
                         "unexpected_count": (r.result or {}).get("unexpected_count"),
                         "partial_unexpected_list": [_plain(v) for v in
                                                     (r.result or {}).get("partial_unexpected_list", [])[:5]]})
    return {"table": name, "rows": int(len(frame)), "success": bool(result.success),
            "expectations": len(result.results), "failures": failures}


def _plain(v: Any) -> Any:
    try:
        json.dumps(v)
        return v
    except TypeError:
        return str(v)


def write_validation(out: Path, summaries: Sequence[dict[str, Any]]) -> None:
    """Write ``validation.json`` when every table passed; otherwise raise naming the bad columns."""
    bad = [f"{s['table']}.{f['column'] or '<table>'} ({f['expectation']}"
           + (f", {f['unexpected_count']} bad rows" if f.get("unexpected_count") else "") + ")"
           for s in summaries for f in s["failures"]]
    if bad:
        raise ValidationFailed("validation failed: " + "; ".join(bad))
    (out / "validation.json").write_text(json.dumps({"success": True, "tables": list(summaries)}, indent=2) + "\n")
