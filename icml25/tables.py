"""Tables: a user's CSV file (read and checked numeric, with one-line errors: the papers' command-line tools and
data loaders), and the CSV artifacts the stages write."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_csv(path: Path | str) -> Any:
    """The file as a pandas DataFrame, or ValueError naming the path: missing, or not a readable CSV file."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable CSV file ({str(exc).splitlines()[0]})") from None


def read_frame(path: Path | str, **kwargs: Any) -> Any:
    """A CSV artifact written by a stage as a DataFrame; an empty table (pandas writes a lone newline for a frame
    without columns) reads as an empty frame instead of raising."""
    import pandas as pd

    path = Path(path)
    return pd.read_csv(path, **kwargs) if path.stat().st_size > 1 else pd.DataFrame()


def numeric_table(
    frame: Any,
    target: str,
    where: str = "table",
    *,
    min_rows: int = 1,
    allow_missing_target: bool = False,
    reject_constant: bool = False,
) -> tuple[Any, Any, list[str]]:
    """(X rows x features, y, feature names) of a table whose columns are all numbers, or ValueError naming
    what is wrong (prefixed by ``where``): no target column, no feature column, a non-numeric column, NaN or
    infinite values (the first bad row, counted from 1), a constant column (when rejected), too few rows.
    ``allow_missing_target``: rows whose target is empty are allowed (they are the rows to predict)."""
    import numpy as np
    import pandas as pd

    if target not in frame.columns:
        raise ValueError(f"{where}: no column {target!r} (columns: {', '.join(map(str, frame.columns))})")
    features = [c for c in frame.columns if c != target]
    if not features:
        raise ValueError(f"{where}: no feature columns besides the target {target!r}")
    bad = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        raise ValueError(f"{where}: non-numeric column(s): {', '.join(map(str, bad))}")
    X = frame[features].to_numpy(float)
    y = frame[target].to_numpy(float)
    finite = np.isfinite(X).all(axis=1) & (np.isfinite(y) | allow_missing_target)
    rows = np.flatnonzero(~finite)
    if rows.size:
        raise ValueError(
            f"{where}: {rows.size} row(s) with NaN or infinite values (first: row {rows[0] + 1})"
        )
    if reject_constant:
        const = [c for c in [*features, target] if frame[c].nunique() < 2]
        if const:
            raise ValueError(f"{where}: constant column(s): {', '.join(map(str, const))}")
    if len(frame) < min_rows:
        raise ValueError(f"{where}: {len(frame)} rows; at least {min_rows} are needed")
    return X, y, features
