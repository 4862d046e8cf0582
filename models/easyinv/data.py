"""Images in [-1, 1], shaped (n, 1, H, W): scikit-learn's digits (8x8, values 0..16), or a folder of images
(grayscale, resized to size x size with bilinear filtering; the paper uses nearly square COCO photos)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")


def digits(rng: np.random.Generator, train: int, test: int) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    x = load_digits().images.astype(np.float32) / 16.0 * 2.0 - 1.0
    if train + test > len(x):
        raise ValueError(f"train + test = {train + test} exceeds the {len(x)} digits")
    order = rng.permutation(len(x))
    return x[order[:train], None], x[order[train : train + test], None]


def read_image(path: Path, size: int) -> np.ndarray:
    """One image as (1, size, size) in [-1, 1]; ValueError naming the file if it cannot be read."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im = im.convert("L").resize((size, size), Image.BILINEAR)
            a = np.asarray(im, dtype=np.float32)
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable image ({str(exc).splitlines()[0]})") from None
    return (a / 255.0 * 2.0 - 1.0)[None]


def folder(path: Path, size: int) -> np.ndarray:
    if not Path(path).is_dir():
        raise ValueError(f"{path}: no such folder")
    files = sorted(p for p in Path(path).iterdir() if p.suffix.lower() in SUFFIXES)
    if not files:
        raise ValueError(f"{path}: no images ({', '.join(SUFFIXES)})")
    return np.stack([read_image(p, size) for p in files])
