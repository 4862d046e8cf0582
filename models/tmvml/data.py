"""The data: Yeast as the river package ships it, the spec's synthetic generator, planted low-tubal-rank tensors
and a reader for a user's multi-view multi-label CSV (the paper's Mulan sets, exported).

Yeast (river 0.26.1, ``river/datasets/yeast.csv.gz`` inside the installed package; nothing is downloaded): 2,417
genes, 103 features Att1-Att103 and 14 labels Class1-Class14. Two views as in the MVML literature: Att1-79 (gene
expression) and Att80-103 (phylogenetic profile).

Synthetic (the spec): Z ~ N(0, I_5); labels Y = 1[Z B + 0.3 e > tau] with B (5 x q) of rank 3 so labels co-occur
and tau_j the 70% point of column j's distribution (about 30% prevalence; ours); views X_v = Z A_v + 0.5 e_v of
widths ``dims``, plus one view of pure noise; ``shared=True`` uses one A for every view (views in shared
coordinates, where coupling the views' classifiers has something to share).

Planted: G* = A * B (the t-product of A (n1 x 1 x n3) and B (1 x n2 x n3), Gaussian), of tubal rank 1, plus
Gaussian noise of ``noise`` x RMS(G*).
"""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

YEAST_VIEWS = ((1, 79), (80, 103))  # 1-based, inclusive, over Att1..Att103


def yeast_path() -> Path:
    """Where the installed river package keeps yeast.csv.gz (found without importing river)."""
    from icml25.errors import UserError

    spec = importlib.util.find_spec("river")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "the river package is not installed: it ships the Yeast data (pip install river==0.26.1)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "yeast.csv.gz"
    if not path.is_file():
        raise UserError(f"{path}: not found in the installed river package")
    return path


def read_yeast(path: str | Path | None = None) -> tuple[list[np.ndarray], np.ndarray, list[str]]:
    """Yeast's two views and its labels from the packaged file (or ``path``, the same format)."""
    from icml25.errors import UserError

    path = Path(path) if path else yeast_path()
    try:
        with gzip.open(path, "rt") if path.suffix == ".gz" else open(path) as f:
            frame = pd.read_csv(f)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable Yeast CSV ({str(exc).splitlines()[0]})") from None
    att = [c for c in frame.columns if c.startswith("Att")]
    labels = [c for c in frame.columns if c.startswith("Class")]
    if len(att) != 103 or len(labels) != 14:
        raise UserError(f"{path}: {len(att)} Att and {len(labels)} Class columns; Yeast has 103 and 14")
    x = frame[att].to_numpy(float)
    y = frame[labels].to_numpy()
    if not np.isin(y, (0, 1)).all() or not np.isfinite(x).all():
        raise UserError(f"{path}: labels must be 0/1 and features finite")
    views = [x[:, a - 1 : b] for a, b in YEAST_VIEWS]
    return views, y.astype(int), labels


def synthetic(g: np.random.Generator, n: int, q: int = 8, dims: tuple[int, ...] = (30, 40, 50), latent: int = 5,
              label_rank: int = 3, noise_view: bool = True, shared: bool = False,
              label_noise: float = 0.3, view_noise: float = 0.5) -> tuple[list[np.ndarray], np.ndarray]:  # fmt: skip
    """n rows of the spec's generator (see the module docstring); the mixing matrices come from ``g`` first, so
    one generator's train and test draws must come from one call (split the rows afterwards)."""
    b = g.normal(size=(latent, label_rank)) @ g.normal(size=(label_rank, q))
    a_shared = g.normal(size=(latent, max(dims)))
    mix = [a_shared[:, :d] if shared else g.normal(size=(latent, d)) for d in dims]
    z = g.normal(size=(n, latent))
    score = z @ b + label_noise * g.normal(size=(n, q)) * np.sqrt((b**2).sum(0))
    tau = 0.5244 * np.sqrt((b**2).sum(0) * (1 + label_noise**2))  # the 70% point of N(0, sd^2)
    y = (score > tau).astype(int)
    views = [z @ a + view_noise * g.normal(size=(n, a.shape[1])) for a in mix]
    if noise_view:
        views.append(g.normal(size=(n, dims[0])))
    return views, y


def pca_views(train: list[np.ndarray], test: list[np.ndarray], d: int) -> tuple[list, list]:
    """Each view standardised and projected on its first d principal axes, both fitted on the training rows."""
    out_tr, out_te = [], []
    for a, b in zip(train, test, strict=True):
        mean, sd = a.mean(0), a.std(0)
        sd = np.where(sd > 1e-12, sd, 1.0)
        za, zb = (a - mean) / sd, (b - mean) / sd
        _, _, vt = np.linalg.svd(za, full_matrices=False)
        p = vt[: min(d, vt.shape[0])].T
        out_tr.append(za @ p)
        out_te.append(zb @ p)
    return out_tr, out_te


def t_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The t-product A * B: slice-wise matrix products in the Fourier domain along the third mode."""
    abar, bbar = np.fft.fft(a, axis=2), np.fft.fft(b, axis=2)
    c = np.einsum("ijk,jlk->ilk", abar, bbar)
    return np.real(np.fft.ifft(c, axis=2))


def planted(g: np.random.Generator, shape: tuple[int, int, int] = (20, 4, 8), rank: int = 1,
            noise: float = 0.3) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(G*, G* + noise): G* of tubal rank ``rank``, the noise Gaussian with sd ``noise`` x RMS(G*)."""
    n1, n2, n3 = shape
    star = t_product(g.normal(size=(n1, rank, n3)), g.normal(size=(rank, n2, n3)))
    rms = np.sqrt((star**2).mean())
    return star, star + noise * rms * g.normal(size=shape)


def parse_ranges(spec: str, columns: list[str], what: str) -> list[int]:
    """Column positions (0-based) of "1-79,80" (1-based, inclusive) or of column names "a,b,c"."""
    from icml25.errors import UserError

    out: list[int] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            raise UserError(f"{what} {spec!r}: an empty item")
        lo, dash, hi = part.partition("-")
        if dash and lo.strip().isdigit() and hi.strip().isdigit():
            a, b = int(lo), int(hi)
            if a < 1 or b < a:
                raise UserError(f"{what} {spec!r}: {part!r} is not a range a-b with 1 <= a <= b")
            if b > len(columns):
                raise UserError(f"{what} {spec!r}: {part!r} runs past the last column ({len(columns)})")
            out.extend(range(a - 1, b))
        elif part.isdigit():
            if not 1 <= int(part) <= len(columns):
                raise UserError(f"{what} {spec!r}: column {part} is outside 1-{len(columns)}")
            out.append(int(part) - 1)
        elif part in columns:
            out.append(columns.index(part))
        else:
            raise UserError(f"{what} {spec!r}: {part!r} is neither a 1-based range nor a column name")
    if len(set(out)) != len(out):
        raise UserError(f"{what} {spec!r}: a column is named twice")
    return out


def read_table(
    path: Path, views: list[str], labels: str
) -> tuple[list[np.ndarray], np.ndarray | None, list[str]]:
    """A user's CSV: the views' and the labels' columns by 1-based ranges or names (labels may be absent from a
    test file: pass labels=""). Overlapping or empty views, non-0/1 labels and NaNs are refused naming them."""
    from icml25.errors import UserError

    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    cols = list(frame.columns)
    idx = [parse_ranges(v, cols, f"view {i + 1}") for i, v in enumerate(views)]
    seen: dict[int, int] = {}
    for i, cs in enumerate(idx):
        for c in cs:
            if c in seen:
                raise UserError(f"views {seen[c] + 1} and {i + 1} overlap at column {cols[c]!r}")
            seen[c] = i
    lab = parse_ranges(labels, cols, "labels") if labels else []
    for c in lab:
        if c in seen:
            raise UserError(f"labels and view {seen[c] + 1} overlap at column {cols[c]!r}")
    xs = []
    for i, cs in enumerate(idx):
        block = frame.iloc[:, cs].apply(pd.to_numeric, errors="coerce").to_numpy(float)
        bad = ~np.isfinite(block)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise UserError(
                f"{path}: view {i + 1}, column {cols[cs[c]]!r}, row {r + 1}: missing or not a number"
            )
        xs.append(block)
    y = None
    if lab:
        raw = frame.iloc[:, lab].apply(pd.to_numeric, errors="coerce").to_numpy(float)
        bad = ~np.isin(raw, (0.0, 1.0))
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise UserError(
                f"{path}: label column {cols[lab[c]]!r}, row {r + 1}: {frame.iloc[r, lab[c]]} is not 0 or 1"
            )
        y = raw.astype(int)
    return xs, y, [cols[c] for c in lab]
