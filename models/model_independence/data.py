"""The digits data of the CPU reproduction: scikit-learn's bundled 8x8 digits (1,797 images, pixel intensities
0..16, labels 0-9), kept as a table with one column per pixel (``p0`` .. ``p63``) and ``label``.

Torch-free, so that the prepare and validate stages (and anything that only needs the layout) stay light; the
Lightning loaders of :mod:`.lit` read the same layout.
"""

from __future__ import annotations

from typing import Any

PIXELS = [f"p{i}" for i in range(64)]
PIXEL_MAX = 16.0
SPLITS = ("train", "test")


def digits_frame() -> Any:
    """``sklearn.datasets.load_digits`` (bundled, no download) as a DataFrame: int64 pixels ``p0``..``p63`` and
    an int64 ``label``."""
    import pandas as pd
    from sklearn.datasets import load_digits

    digits = load_digits()
    frame = pd.DataFrame(digits.data.astype("int64"), columns=PIXELS)
    frame["label"] = digits.target.astype("int64")
    return frame


def stratified_split(frame: Any, test_fraction: float, seed: int) -> tuple[Any, Any]:
    """(train, test): scikit-learn's ``train_test_split`` stratified on ``label``, ``test_fraction`` of the
    rows held out, shuffled by ``random_state=seed``."""
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(frame, test_size=test_fraction, random_state=seed, stratify=frame["label"])
    return train, test
