"""Reading a user's CSV file with one-line errors (the papers' command-line tools and CSV loaders)."""

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
