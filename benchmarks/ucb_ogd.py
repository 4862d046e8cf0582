"""Speed and memory of UCB-OGD (run by hand: python benchmarks/ucb_ogd.py); writes benchmarks/results/ucb_ogd.json,
which the report renders.

- Rounds per second of UCB-OGD on the label-shifted digits sources (K = 5, T = 4,000 rounds; the experiments'
  loop ``models.ucb_ogd.ogd.run_rounds``: UCB select, draw, loss and gradient of multinomial logistic regression,
  bandit update, OGD step and projection), the median of 5 runs on the same pre-drawn streams, against
  scikit-learn's ``SGDClassifier(loss="log_loss").partial_fit`` called once per sample on the same stream (the
  4,000 samples UCB-OGD collected, in its order, without the bias column; ``classes=range(10)`` on the first
  call). One such pass takes about 20 s on two cores (some 5 ms per call: per call, one-vs-rest over 10
  classes through joblib plus input validation), so it runs once, timed in 8 equal parts, and the rate is the
  median part's. The ratio is ours / scikit-learn's rounds per second (the issue's goal: >= 1).
- Peak memory allocated during one such run (tracemalloc: Python and NumPy allocations, not the interpreter or
  the libraries already loaded), measured in a separate, untimed run (scikit-learn's over its first 200
  samples: tracemalloc slows it several-fold and its state does not grow with the stream).
- The selection cost per round: ``UCBSampler.select()`` + ``update(k, loss)`` for K = 5 and K = 100 over 20,000
  rounds of pre-drawn losses in [0, 1] (best of 5).
- The stage times of the last quick-profile `dvc repro`, when there is one (from .dvc/tmp/icml25-timing).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._common import stage_times, stage_times_text, timed, traced_peak_mib, write  # noqa: E402
from models.ucb_ogd import UCBSampler  # noqa: E402
from models.ucb_ogd.learners import SoftmaxLearner  # noqa: E402
from models.ucb_ogd.ogd import run_rounds, step_size  # noqa: E402
from models.ucb_ogd.sources import digits_pools  # noqa: E402

T = 4000
RADIUS = 10.0
REPEAT = 5
SELECT_ROUNDS = 20000
SGD_CHUNKS = 8
SGD_PEAK = 200  # scikit-learn's peak over the first samples (its state does not grow with the stream)


def digits_setup():
    rng = np.random.default_rng(0)
    pool_rng, stream_rng = rng.spawn(2)
    pools = digits_pools(pool_rng)
    streams = pools.streams(T, stream_rng)
    eta = step_size(RADIUS, SoftmaxLearner.grad_bound(pools.x_bound, pools.n_classes), T)
    return pools, streams, eta


def ucb_ogd_run(pools, streams, eta):
    learner = SoftmaxLearner(pools.n_features, pools.n_classes)
    sampler = UCBSampler(pools.n_sources)
    return run_rounds(sampler, learner, streams.fresh().take, T, eta, RADIUS)


def collected_stream(log, streams):
    """The samples UCB-OGD annotated, in its order (features without the bias column, labels)."""
    used = np.zeros(log.n_sources, dtype=np.int64)
    X, y = [], []
    for k in log.source:
        X.append(streams.X[k][used[k], :-1])
        y.append(streams.y[k][used[k]])
        used[k] += 1
    return np.asarray(X), np.asarray(y)


def sgd_run(X, y, chunks: int = 1) -> list[float]:
    """One pass of partial_fit, one sample per call, over the stream; the wall seconds of each of ``chunks``
    equal consecutive parts of it (one pass takes about 20 s on two cores: too slow to repeat)."""
    from sklearn.linear_model import SGDClassifier

    clf = SGDClassifier(loss="log_loss")
    bounds = np.linspace(0, len(y), chunks + 1).round().astype(int)
    seconds = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        start = time.perf_counter()
        for i in range(lo, hi):
            if i == 0:
                clf.partial_fit(X[:1], y[:1], classes=np.arange(10))
            else:
                clf.partial_fit(X[i : i + 1], y[i : i + 1])
        seconds.append(time.perf_counter() - start)
    return seconds


def selection_us(K: int) -> float:
    rng = np.random.default_rng(K)
    means = rng.uniform(0.2, 0.8, K)
    losses = np.clip(means + 0.2 * rng.standard_normal((SELECT_ROUNDS, K)), 0.0, 1.0).tolist()

    def play():
        s = UCBSampler(K)
        for row in losses:
            k = s.select()
            s.update(k, row[k])

    best = min(timed(play, repeat=1)[0] for _ in range(REPEAT))
    return best / SELECT_ROUNDS * 1e6


def main() -> None:
    import sklearn

    start = time.perf_counter()
    pools, streams, eta = digits_setup()
    log = ucb_ogd_run(pools, streams, eta)  # warm-up; its stream feeds scikit-learn
    X, y = collected_stream(log, streams)
    sgd_run(X[:20], y[:20])  # warm-up (imports)
    ours, ours_best = timed(lambda: ucb_ogd_run(pools, streams, eta), repeat=REPEAT)
    ours_peak = traced_peak_mib(lambda: ucb_ogd_run(pools, streams, eta))
    chunk_s = sgd_run(X, y, chunks=SGD_CHUNKS)
    ref = sum(chunk_s)
    ref_median = float(np.median(chunk_s)) * SGD_CHUNKS  # the median chunk's rate, as seconds for T samples
    ref_peak = traced_peak_mib(lambda: sgd_run(X[:SGD_PEAK], y[:SGD_PEAK]))
    ratio = ref_median / ours
    shares = ", ".join(f"{n} {c}" for n, c in zip(pools.names, log.counts(), strict=True))
    rows = [
        {
            "what": f"rounds per second, digits K = 5, T = {T}",
            "UCB-OGD": f"{T / ours:,.0f} /s ({1e6 * ours / T:.1f} us per round; median of {REPEAT} runs)",
            "scikit-learn SGDClassifier.partial_fit": f"{T / ref_median:,.0f} /s ({1e6 * ref_median / T:.0f} us "
            f"per sample; median of {SGD_CHUNKS} parts of one pass)",
            "ratio": f"{ratio:.0f}x (goal >= 1)",
        },
        {
            "what": "peak memory allocated during a run (tracemalloc)",
            "UCB-OGD": f"{ours_peak:.2f} MiB (T = {T})",
            "scikit-learn SGDClassifier.partial_fit": f"{ref_peak:.2f} MiB (first {SGD_PEAK} samples)",
            "ratio": "",
        },
    ]
    for K in (5, 100):
        us = selection_us(K)
        rows.append(
            {
                "what": f"selection cost, UCBSampler.select() + update(), K = {K} ({SELECT_ROUNDS:,} rounds)",
                "UCB-OGD": f"{us:.2f} us per round",
                "scikit-learn SGDClassifier.partial_fit": "",
                "ratio": "",
            }
        )
    stages = stage_times("ucb_ogd")
    if stages:
        rows.append(
            {
                "what": "quick profile, `dvc repro` (last run's stage wall times)",
                "UCB-OGD": f"{sum(stages.values()):.0f} s",
                "scikit-learn SGDClassifier.partial_fit": stage_times_text(stages),
                "ratio": "",
            }
        )
    for r in rows:
        print(r, flush=True)
    write(
        "ucb_ogd",
        ["what", "UCB-OGD", "scikit-learn SGDClassifier.partial_fit", "ratio"],
        rows,
        note=(
            f"Two cores. The same {T} samples in the same order for both (the ones UCB-OGD collected: {shares} "
            f"labels per source); UCB-OGD's time includes choosing the source and drawing the sample, "
            f"scikit-learn's only the fit (default SGDClassifier: one-vs-rest over 10 classes, optimal learning "
            f"rate; scikit-learn {sklearn.__version__}). UCB-OGD: median of {REPEAT} runs (best "
            f"{1e6 * ours_best / T:.1f} us per round). scikit-learn: one pass, {1e6 * ref / T:.0f} us per sample "
            f"over all of it, the row gives the median of its {SGD_CHUNKS} parts. tracemalloc counts Python and "
            f"NumPy allocations during the run (not the loaded libraries). Selection cost: best of {REPEAT}. "
            f"Benchmark wall time {time.perf_counter() - start:.0f} s."
        ),
    )


if __name__ == "__main__":
    main()
