"""The multi-label metrics of the MVML literature, for scores F (n x q) and labels Y in {0, 1} (n x q).

AP: label-ranking average precision (scikit-learn's LRAP); ranking loss: the share of (relevant, irrelevant) pairs
ordered wrongly; coverage: how far down the ranking one must go to cover every relevant label, minus 1 (the MVML
papers' convention; scikit-learn's coverage_error is 1-based); one-error: the share of rows whose top-ranked label
is irrelevant; Hamming loss and micro-F1 of the label sets F >= threshold. Rows without a relevant label follow
scikit-learn's conventions: AP 1, ranking loss 0, coverage - 1 = -1; one-error skips them. Yeast has none; about
9% of the synthetic rows do, which lowers their ranking loss and coverage alike for every method."""

from __future__ import annotations

import numpy as np

NAMES = ("ap", "ranking_loss", "coverage", "one_error", "hamming", "micro_f1")
HIGHER_IS_BETTER = {"ap": True, "ranking_loss": False, "coverage": False, "one_error": False, "hamming": False,
                    "micro_f1": True}  # fmt: skip


def average_precision(y: np.ndarray, f: np.ndarray) -> float:
    """Label-ranking average precision, vectorised (scikit-learn's LRAP ranks row by row with scipy, about 100x
    slower at Yeast's size): for each relevant label j of a row, |{relevant k: f_k >= f_j}| / |{k: f_k >= f_j}|,
    averaged over j, then over rows; a row with no or only relevant labels scores 1, as in scikit-learn."""
    y = np.asarray(y) == 1
    ge = f[:, None, :] >= f[:, :, None]  # ge[i, j, k] = f_ik >= f_ij
    rank_all = ge.sum(2)
    rank_rel = (ge & y[:, None, :]).sum(2)
    per = np.where(y, rank_rel / rank_all, 0.0).sum(1) / np.maximum(y.sum(1), 1)
    trivial = (y.sum(1) == 0) | (y.sum(1) == y.shape[1])
    return float(np.where(trivial, 1.0, per).mean())


def one_error(y: np.ndarray, f: np.ndarray) -> float:
    """The share of rows with a relevant label whose top-scored label is irrelevant."""
    has = y.sum(1) > 0
    top = f.argmax(1)
    return float((y[np.arange(len(y)), top] == 0)[has].mean()) if has.any() else 0.0


def all_metrics(y: np.ndarray, f: np.ndarray, threshold: float = 0.5) -> dict[str, float]:
    from sklearn.metrics import (
        coverage_error,
        f1_score,
        hamming_loss,
        label_ranking_loss,
    )

    y = np.asarray(y, dtype=int)
    pred = (f >= threshold).astype(int)
    return {
        "ap": average_precision(y, f),
        "ranking_loss": float(label_ranking_loss(y, f)),
        "coverage": float(coverage_error(y, f) - 1.0),
        "one_error": one_error(y, f),
        "hamming": float(hamming_loss(y, pred)),
        "micro_f1": float(f1_score(y, pred, average="micro", zero_division=0)),
    }
