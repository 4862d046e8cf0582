"""Great Expectations gates: each paper's validate stage checks what prepare wrote before anything trains.

Suites are written in code as :class:`Column` rules (name, type, range or set) and a row count, and run on an
ephemeral GX context (analytics and progress bars off), one per process. A failed suite raises
:class:`~icml25.errors.ValidationFailed` naming every bad column, so DVC stops the pipeline there: ``train``
depends on ``validation.json``, which is only written when every table passed.

What a suite checks, in order:

1. The table: its row count (exact, or a floor and a ceiling) and its columns, by name: exactly the expected
   set (``ExpectTableColumnsToMatchSet`` with ``exact_match``; missing and unexpected columns are reported by
   name), in order when the readers take columns by position, and a count of the columns a data definition
   knows only by number (:class:`Others`: a user's own feature columns).
2. Each column's type (:data:`KINDS`): one ``ExpectColumnPairValuesToBeInSet`` on a table of (expected kind,
   observed kind) per column, so a text cell in a numeric column (pandas reads that column as strings) fails
   naming the column, with the offending cells as examples. Columns that are missing or of the wrong type get
   no value checks (their values would be compared as strings, or raise).
3. The values: not null (unless ``nullable``; one expectation for all columns), in [min, max], in ``values``.

Speed: GX costs tens of milliseconds per expectation, so columns that share a rule (the 64 pixels of a digit)
are checked together on the long form of the table (``column``, ``value``), and the failing rows GX returns
(``unexpected_index_list``) are mapped back to the names of the bad columns. Types are checked per column
before that melt (a melt mixes dtypes), and a rule groups only columns of one kind. GX takes seconds to
import: it is imported inside :func:`validate_frame` only.

Prepared NumPy files are described by :func:`npz_arrays` (each expected array: ``"ok"``, or what is wrong with
it), so that a stage validates the description as a table, and builds its derived tables only from files whose
arrays are all there with the right type.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .errors import ValidationFailed
from .io import write_json

#: A column's expected type -> the observed kinds that satisfy it (see :func:`observed_kind`). ``number`` is an
#: int or a float (never a bool or text), ``integer`` an int only, ``string`` text, ``bool`` True/False.
KINDS: dict[str, tuple[str, ...]] = {
    "number": ("integer", "float"),
    "integer": ("integer",),
    "string": ("string",),
    "bool": ("bool",),
}
#: The checks a failure can come from; ``columns`` and ``type`` failures make a table unusable (see
#: :func:`usable`).
STRUCTURE = ("columns", "type")


@dataclass(frozen=True)
class Column:
    """Expectations on one column: it exists, holds values of ``kind`` (:data:`KINDS`), has no nulls (unless
    ``nullable``), lies in [min, max] or in ``values``."""

    name: str
    min: float | None = None
    max: float | None = None
    values: tuple[Any, ...] | None = None
    nullable: bool = False
    kind: str = "number"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Column {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}")

    @property
    def rule(self) -> tuple:
        """What columns checked together share (nulls are checked for all columns at once)."""
        return (self.kind, self.min, self.max, self.values)


@dataclass(frozen=True)
class Others:
    """Columns a data definition knows only by number (a user's own feature columns): exactly ``count`` of them
    besides the named ones, each held to ``like``'s kind and rule (its name is only a label)."""

    count: int
    like: Column = Column("<other>")


def observed_kind(series: Any) -> str:
    """What a column holds: ``integer``, ``float``, ``bool``, ``string`` (text), ``empty`` (no values to
    judge), ``mixed`` (values of several types), or another dtype's name."""
    import pandas as pd
    from pandas.api import types as t

    dtype = series.dtype
    if t.is_bool_dtype(dtype):
        return "bool"
    if t.is_integer_dtype(dtype):
        return "integer"
    if t.is_float_dtype(dtype):
        return "float"
    if isinstance(dtype, pd.CategoricalDtype) or not (t.is_object_dtype(dtype) or t.is_string_dtype(dtype)):
        return str(dtype)
    inferred = t.infer_dtype(series, skipna=True)
    return {
        "string": "string",
        "integer": "integer",
        "floating": "float",
        "mixed-integer-float": "float",
        "boolean": "bool",
        "empty": "empty",
    }.get(inferred, "mixed")


def _fits(value: Any, kind: str) -> bool:
    import numbers

    import numpy as np

    if kind == "string":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool | np.bool_)
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return False
    if kind == "integer":
        return isinstance(value, numbers.Integral)
    return True


def _offending(series: Any, kind: str, n: int = 3) -> list[Any]:
    """Up to ``n`` values of ``series`` that are not of ``kind``: the text cells of a numeric column (the cells
    that do not read as numbers), the fractions or nulls of an integer one."""
    import numpy as np
    import pandas as pd

    values = series.dropna()
    if kind in ("number", "integer") and values.dtype.kind == "f":  # a float column where ints are expected
        bad = values[values != np.round(values)]
        return (bad if len(bad) else series[series.isna()]).head(n).tolist()
    if kind in ("number", "integer") and not pd.api.types.is_numeric_dtype(values.dtype):
        bad = values[pd.to_numeric(values, errors="coerce").isna()]
        if len(bad):
            return bad.head(n).tolist()
    out = list(itertools.islice((v for v in values.tolist() if not _fits(v, kind)), n))
    return out or values.head(n).tolist()


def _rule_expectations(rule: tuple) -> list[Any]:
    import great_expectations as gx

    _, lo, hi, values = rule
    exp = gx.expectations
    out: list[Any] = []
    if lo is not None or hi is not None:
        out.append(exp.ExpectColumnValuesToBeBetween(column="value", min_value=lo, max_value=hi))
    if values is not None:
        out.append(exp.ExpectColumnValuesToBeInSet(column="value", value_set=list(values)))
    return out


_SERIAL = itertools.count()


@functools.cache
def _context() -> tuple[Any, Any]:
    """One ephemeral GX context and one whole-dataframe batch definition per process (creating a context costs
    about a second; a data asset per table, or suites kept in the context, tens of milliseconds each)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas("pandas").add_dataframe_asset(name="tables")
    return context, asset.add_batch_definition_whole_dataframe("all")


def _row_expectation(rows: int | None, min_rows: int, max_rows: int | None) -> tuple[Any, str]:
    import great_expectations as gx

    if rows is not None:
        return gx.expectations.ExpectTableRowCountToEqual(value=rows), f"expected {rows}"
    if max_rows is None:
        check = gx.expectations.ExpectTableRowCountToBeBetween(min_value=min_rows)
        return check, f"expected at least {min_rows}"
    check = gx.expectations.ExpectTableRowCountToBeBetween(min_value=min_rows, max_value=max_rows)
    return check, f"expected {min_rows} to {max_rows}"


def validate_frame(
    frame: Any,
    name: str,
    columns: Sequence[Column],
    min_rows: int = 1,
    *,
    rows: int | None = None,
    max_rows: int | None = None,
    ordered: bool = False,
    others: Others | None = None,
    key: str | Sequence[str] = (),
) -> dict[str, Any]:
    """Run the suite on a pandas DataFrame; returns the summary (``success``, failures by column).

    ``columns``: every column of the table, by name (an unexpected column fails), unless ``others`` allows a
    number of unnamed ones. ``rows``: the exact row count (else at least ``min_rows``, at most ``max_rows``).
    ``ordered``: the columns must come in the order of ``columns`` (a reader takes them by position).
    ``key``: the column(s) naming a row (a file, a graph and run): a failure names its first bad rows by them."""
    import great_expectations as gx
    import pandas as pd

    keys = [key] if isinstance(key, str) else list(key)
    if ordered and others is not None:
        raise ValueError("validate_frame: ordered columns need every column named (no others)")
    _, batches = _context()

    def run(table: Any, part: str, expectations: list[Any]) -> list[Any]:
        batch = batches.get_batch(batch_parameters={"dataframe": table})
        suite = gx.ExpectationSuite(name=f"{name}-{part}-{next(_SERIAL)}")
        for e in expectations:
            suite.add_expectation(e)
        return batch.validate(suite, result_format={"result_format": "COMPLETE"}).results

    failures: list[dict[str, Any]] = []
    n_expectations = 0
    named = [c.name for c in columns]
    expected_columns = list(columns)
    table_checks = [
        gx.expectations.ExpectTableColumnsToMatchSet(column_set=named, exact_match=others is None)
    ]
    if others is not None:  # the unnamed columns: counted, and held to others.like
        n_columns = len(named) + others.count
        expected_columns += [replace(others.like, name=c) for c in frame.columns if c not in set(named)]
        table_checks.append(gx.expectations.ExpectTableColumnCountToEqual(value=n_columns))
        count_text = f"expected {n_columns} ({', '.join(named)} and {others.count} more)"
    if ordered:
        table_checks.append(gx.expectations.ExpectTableColumnsToMatchOrderedList(column_list=named))
    row_check, row_text = _row_expectation(rows, min_rows, max_rows)
    table_checks.insert(0, row_check)
    set_ok = True
    for check, r in zip(table_checks, run(frame, "table", table_checks), strict=True):
        n_expectations += 1
        if r.success:
            continue
        kind = r.expectation_config.type
        observed = _plain((r.result or {}).get("observed_value"))
        if check is row_check:
            failures.append(_failure("rows", kind, None, f"{observed} rows, {row_text}", observed=observed))
        elif isinstance(check, gx.expectations.ExpectTableColumnsToMatchSet):
            set_ok = False
            mismatched = ((r.result or {}).get("details") or {}).get("mismatched") or {}
            for c in mismatched.get("missing") or []:
                failures.append(_failure("columns", kind, c, "missing column"))
            for c in (mismatched.get("unexpected") or []) if others is None else []:
                failures.append(_failure("columns", kind, c, "unexpected column"))
        elif isinstance(check, gx.expectations.ExpectTableColumnCountToEqual):
            failures.append(
                _failure("columns", kind, None, f"{observed} columns, {count_text}", observed=observed)
            )
        elif set_ok:  # the order, once the set is right
            failures.append(
                _failure("columns", kind, None, f"columns out of order: expected {named}", observed=observed)
            )

    present = [c for c in expected_columns if c.name in frame.columns]
    typed = {c.name for c in present}
    if present:
        types = pd.DataFrame(
            {
                "column": [c.name for c in present],
                "expected": [c.kind for c in present],
                "observed": [observed_kind(frame[c.name]) for c in present],
            }
        )
        allowed = [(k, v) for k, vs in KINDS.items() for v in (*vs, "empty")]
        check = gx.expectations.ExpectColumnPairValuesToBeInSet(
            column_A="expected", column_B="observed", value_pairs_set=allowed
        )
        for r in run(types, "types", [check]):
            n_expectations += 1
            if r.success:
                continue
            for j in (r.result or {}).get("unexpected_index_list") or []:
                row = types.loc[j["index"] if isinstance(j, dict) else j]
                examples = _offending(frame[row["column"]], row["expected"])
                typed.discard(row["column"])
                failures.append(
                    _failure(
                        "type",
                        r.expectation_config.type,
                        row["column"],
                        f"expected {row['expected']}, found {row['observed']}"
                        + (f", e.g. {_show(examples[0])}" if examples else ""),
                        observed=row["observed"],
                        examples=[_plain(v) for v in examples],
                    )
                )

    groups: dict[tuple, list[str]] = defaultdict(list)
    for c in expected_columns:
        if c.name in typed:
            groups[c.rule].append(c.name)
    checks = [
        (
            [c.name for c in expected_columns if c.name in typed and not c.nullable],
            [gx.expectations.ExpectColumnValuesToNotBeNull(column="value")],
        ),
        *((names, _rule_expectations(rule)) for rule, names in groups.items()),
    ]
    for i, (names, expectations) in enumerate(checks):
        if not names or not expectations:
            continue
        long = frame[names].melt(var_name="column", value_name="value")  # nulls: of any kinds together
        for r in run(long, f"rule{i}", expectations):
            n_expectations += 1
            if r.success:
                continue
            bad_rows = [
                j["index"] if isinstance(j, dict) else j
                for j in (r.result or {}).get("unexpected_index_list") or []
            ]
            bad = long.loc[bad_rows]
            for column, part in bad.groupby("column", sort=True):
                examples = part["value"].head(3).tolist()
                where = _row_keys(
                    frame, keys, [int(j) % len(frame) for j in part.index]
                )  # melt: column-major
                failures.append(
                    _failure(
                        "values",
                        r.expectation_config.type,
                        column,
                        f"{r.expectation_config.type}, {len(part)} bad rows"
                        + (f" ({', '.join(where)})" if where else "")
                        + f", e.g. {_show(examples[0])}",
                        unexpected_count=int(len(part)),
                        examples=[_plain(v) for v in examples],
                        **({"rows": where} if where else {}),
                    )
                )
    return {
        "table": name,
        "rows": int(len(frame)),
        "success": not failures,
        "expectations": n_expectations,
        "failures": failures,
    }


def _row_keys(frame: Any, keys: list[str], rows: list[int], n: int = 3) -> list[str]:
    """``key=value`` labels of the first ``n`` of ``rows`` (positions in ``frame``), by the ``keys`` columns."""
    keys = [k for k in keys if k in frame.columns]
    if not keys:
        return []
    labels = []
    for i in dict.fromkeys(rows):
        labels.append(" ".join(f"{k}={frame[k].iloc[i]}" for k in keys))
        if len(labels) == n:
            break
    return labels


def _failure(check: str, expectation: str, column: Any, detail: str, **extra: Any) -> dict[str, Any]:
    return {
        "check": check,
        "expectation": expectation,
        "column": None if column is None else str(column),
        "detail": detail,
        **extra,
    }


def usable(summary: dict[str, Any]) -> bool:
    """Whether a validated table has every expected column with the right type (its values may still fail):
    what a stage needs before it computes derived tables from it."""
    return not any(f["check"] in STRUCTURE for f in summary["failures"])


def _show(v: Any) -> str:
    """A value as a message shows it: text quoted, anything else as printed."""
    return repr(v) if isinstance(v, str) else str(_plain(v) if hasattr(v, "item") else v)


def _plain(v: Any) -> Any:
    if hasattr(v, "item") and not isinstance(v, str | bytes):
        try:
            v = v.item()
        except (ValueError, TypeError):
            pass
    try:
        json.dumps(v, allow_nan=False)
        return v
    except (TypeError, ValueError):
        return str(v)


# ------------------------------------------------------------------------------ NumPy files
def array_kind(a: Any) -> str:
    """An array's kind in the words of :data:`KINDS`: ``float``, ``integer``, ``bool``, ``string`` (text) or
    the dtype's name."""
    return {"f": "float", "i": "integer", "u": "integer", "b": "bool", "U": "string", "S": "string"}.get(
        a.dtype.kind, str(a.dtype)
    )


def npz_arrays(path: Path, expected: dict[str, tuple[str, int]]) -> tuple[dict[str, Any], dict[str, str]]:
    """The arrays of the ``.npz`` file ``path`` that ``expected`` names (name -> (kind: ``float``,
    ``integer``, ``number`` or ``bool``, number of dimensions)), and a description of each: ``"ok"``, or what
    is wrong (``missing``, ``no such file``, ``unreadable file``, ``pickled objects``, ``string, expected
    float``, ``2-d, expected 3-d``). Only the arrays described ``"ok"`` are returned."""
    import numpy as np

    arrays: dict[str, Any] = {}
    if not Path(path).is_file():
        return arrays, dict.fromkeys(expected, "no such file")
    try:
        data = np.load(path, allow_pickle=False)
        names = set(data.files)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:  # truncated or garbled
        return arrays, dict.fromkeys(expected, f"unreadable file ({type(exc).__name__}); re-run prepare")
    status = {}
    with data:
        for key, (kind, ndim) in expected.items():
            if key not in names:
                status[key] = "missing"
                continue
            try:
                a = data[key]
            except ValueError:  # object arrays need pickle, which is never allowed here
                status[key] = "pickled objects"
                continue
            except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
                status[key] = f"unreadable ({type(exc).__name__}); re-run prepare"
                continue
            found = array_kind(a)
            if found not in KINDS.get(kind, (kind,)):
                status[key] = f"{found}, expected {kind}"
            elif a.ndim != ndim:
                status[key] = f"{a.ndim}-d, expected {ndim}-d"
            else:
                status[key] = "ok"
                arrays[key] = a
    return arrays, status


def ok_columns(names: Iterable[str]) -> list[Column]:
    """Columns of a file-description table (:func:`npz_arrays`): each must read ``"ok"``."""
    return [Column(n, kind="string", values=("ok",)) for n in names]


def failed_table(name: str, detail: str) -> dict[str, Any]:
    """The summary of a table whose file could not be read at all (``detail`` says why)."""
    failure = _failure("columns", "readable file", None, detail)
    return {"table": name, "rows": 0, "success": False, "expectations": 0, "failures": [failure]}


def read_meta(path: Path) -> Any:
    """prepare's record of what it wrote (meta.json), or ValidationFailed naming the file."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValidationFailed(
            f"validation failed: {Path(path).name}: no such file (re-run prepare)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ValidationFailed(f"validation failed: {Path(path).name}: unreadable ({exc})") from None


def write_validation(out: Path, summaries: Sequence[dict[str, Any]]) -> None:
    """Write ``validation.json`` when every table passed; otherwise raise naming the bad columns."""
    bad = [
        f"{s['table']}.{f['column'] if f['column'] is not None else '<table>'} ({f['detail']})"
        for s in summaries
        for f in s["failures"]
    ]
    if bad:
        raise ValidationFailed("validation failed: " + "; ".join(bad))
    write_json(out / "validation.json", {"success": True, "tables": list(summaries)})
