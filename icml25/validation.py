"""Great Expectations gates: each paper's validate stage checks what prepare wrote before anything trains.

Suites are written in code as :class:`Column` rules and a row-count floor, and run on an ephemeral GX context
(analytics and progress bars off), one per process. A failed suite raises :class:`~icml25.errors.ValidationFailed` naming every
bad column, so DVC stops the pipeline there: ``train`` depends on ``validation.json``, which is only written when
every table passed.

Speed: GX costs tens of milliseconds per expectation, so columns that share a rule (the 64 pixels of a digit)
are checked together on the long form of the table (``column``, ``value``), and the failing rows GX returns
(``unexpected_index_list``) are mapped back to the names of the bad columns. Column presence is one
``ExpectTableColumnsToMatchSet``. GX takes seconds to import: it is imported inside :func:`validate_frame` only.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ValidationFailed
from .io import write_json


@dataclass(frozen=True)
class Column:
    """Expectations on one column: it exists, has no nulls (unless ``nullable``), lies in [min, max] or in
    ``values``."""

    name: str
    min: float | None = None
    max: float | None = None
    values: tuple[Any, ...] | None = None
    nullable: bool = False

    @property
    def rule(self) -> tuple:
        return (self.min, self.max, self.values, self.nullable)


def _rule_expectations(rule: tuple) -> list[Any]:
    import great_expectations as gx

    lo, hi, values, nullable = rule
    exp = gx.expectations
    out: list[Any] = [] if nullable else [exp.ExpectColumnValuesToNotBeNull(column="value")]
    if lo is not None or hi is not None:
        out.append(exp.ExpectColumnValuesToBeBetween(column="value", min_value=lo, max_value=hi))
    if values is not None:
        out.append(exp.ExpectColumnValuesToBeInSet(column="value", value_set=list(values)))
    return out


_SERIAL = itertools.count()


@functools.cache
def _context() -> tuple[Any, Any]:
    """One ephemeral GX context (and its pandas data source) per process: creating one costs about a second."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context, context.data_sources.add_pandas("pandas")


def validate_frame(frame: Any, name: str, columns: Sequence[Column], min_rows: int = 1) -> dict[str, Any]:
    """Run the suite on a pandas DataFrame; returns the summary (``success``, failures by column)."""
    import great_expectations as gx

    context, source = _context()

    def run(table: Any, asset: str, expectations: list[Any]) -> list[Any]:
        unique = f"{name}-{asset}-{next(_SERIAL)}"  # one context per process: every asset and suite is new
        batch = (
            source.add_dataframe_asset(name=unique)
            .add_batch_definition_whole_dataframe("all")
            .get_batch(batch_parameters={"dataframe": table})
        )
        suite = gx.ExpectationSuite(name=unique)
        for e in expectations:
            suite.add_expectation(e)
        return batch.validate(context.suites.add(suite), result_format={"result_format": "COMPLETE"}).results

    failures: list[dict[str, Any]] = []
    n_expectations = 0
    table_checks = [
        gx.expectations.ExpectTableRowCountToBeBetween(min_value=min_rows),
        gx.expectations.ExpectTableColumnsToMatchSet(column_set=[c.name for c in columns], exact_match=False),
    ]
    for r in run(frame, "table", table_checks):
        n_expectations += 1
        if r.success:
            continue
        missing = ((r.result or {}).get("details") or {}).get("mismatched", {}).get("missing")
        if missing:
            failures += [{"expectation": r.expectation_config.type, "column": c} for c in missing]
        else:
            failures.append(
                {
                    "expectation": r.expectation_config.type,
                    "column": None,
                    "observed": _plain((r.result or {}).get("observed_value")),
                }
            )

    groups: dict[tuple, list[str]] = defaultdict(list)
    for c in columns:
        if c.name in frame.columns:
            groups[c.rule].append(c.name)
    for i, (rule, names) in enumerate(groups.items()):
        long = frame[names].melt(var_name="column", value_name="value")
        for r in run(long, f"rule{i}", _rule_expectations(rule)):
            n_expectations += 1
            if r.success:
                continue
            rows = [
                j["index"] if isinstance(j, dict) else j
                for j in (r.result or {}).get("unexpected_index_list") or []
            ]
            bad = long.loc[rows]
            for column, part in bad.groupby("column", sort=True):
                failures.append(
                    {
                        "expectation": r.expectation_config.type,
                        "column": column,
                        "unexpected_count": int(len(part)),
                        "examples": [_plain(v) for v in part["value"].head(3).tolist()],
                    }
                )
    return {
        "table": name,
        "rows": int(len(frame)),
        "success": not failures,
        "expectations": n_expectations,
        "failures": failures,
    }


def _plain(v: Any) -> Any:
    try:
        json.dumps(v, allow_nan=False)
        return v
    except (TypeError, ValueError):
        return str(v)


def write_validation(out: Path, summaries: Sequence[dict[str, Any]]) -> None:
    """Write ``validation.json`` when every table passed; otherwise raise naming the bad columns."""
    bad = [
        f"{s['table']}.{f['column'] or '<table>'} ({f['expectation']}"
        + (f", {f['unexpected_count']} bad rows" if f.get("unexpected_count") else "")
        + ")"
        for s in summaries
        for f in s["failures"]
    ]
    if bad:
        raise ValidationFailed("validation failed: " + "; ".join(bad))
    write_json(out / "validation.json", {"success": True, "tables": list(summaries)})
