"""The reproduction's drivers: every method on the same sample streams for one seed, and the summaries.

Methods (the sampler differs, OGD and the streams do not; ``models.ucb_ogd.sampler``):
``ucb_ogd`` (UCB over sources), ``uniform`` (uniform random source), ``greedy`` (argmax S_k / n_k), ``entropy``
(the source whose candidate has the highest predictive entropy; digits / CSV only) and ``oracle`` (argmax of the
true L_k(theta_t): on digits the mean clipped loss on a validation subset of ``val_size`` = 100 train-pool
points per source with noise drawn once; on the planted sources the closed form).

:func:`digits_seed` (digits or CSV pools): multinomial logistic regression from W = 0 on the ball
||W||_F <= R = 10, eta = 2R / (G sqrt T) with G = sqrt(2) sqrt(d + 1) / ln C; per method, per output (the
average and the last iterate) and per source: test accuracy (argmax over the C classes) and mean clipped test
loss on the source's test pool, and the labels it got; the allocation n_k(t) / t at ``checkpoints`` rounds.

:func:`regret_seed` (planted sources, separate runs for each T with eta = 2R / (G sqrt T); the stream of a
source is the same for every T, a run with horizon T reading its first draws):

    R_T = sum_{t=1}^T max_k L_k(theta_t) - T F*,

theta_t the iterate played at round t (theta_1 = 0, the model under which round t's loss is observed, before
its OGD step), F* = min_theta max_k L_k(theta) exact (``models.ucb_ogd.planted``). Every term is >= F*, so
R_T >= 0. The rows also carry R_T / sqrt(T K ln T) (the rate of the abstract's bound) and the worst-source risk
of the average and last iterates.

The summaries (over a frame of several seeds, a ``seed`` column added by the caller):
:func:`worst_source_table` (per seed and method: the worst-source test accuracy min_k acc_k, the hardest source =
the highest test loss under the uniform baseline's output model, K n_hard / T), :func:`worst_source_gain` and
:func:`hard_source_allocation` (the claims' means over seeds), :func:`loglog_slope` / :func:`regret_slopes`
(least squares of log R_T on log T, R_T the mean over seeds).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .learners import QuadraticLearner, SoftmaxLearner, augment
from .ogd import OUTPUTS, run_rounds, step_size
from .planted import Planted, planted
from .sampler import (
    EntropySampler,
    GreedySampler,
    OracleSampler,
    Sampler,
    UCBSampler,
    UniformSampler,
)
from .sources import SourcePools

METHODS = ("ucb_ogd", "uniform", "greedy", "entropy", "oracle")
REGRET_METHODS = ("ucb_ogd", "uniform")
HORIZONS = (250, 500, 1000, 2000, 4000, 8000)
#: A sampler factory for the ``ucb_ogd`` method: (K, rng) -> sampler (UCBSampler; a stub in the tests).
SamplerFactory = Callable[[int, np.random.Generator], Sampler]


def _ucb(K: int, rng: np.random.Generator) -> Sampler:
    return UCBSampler(K)


def make_sampler(
    method: str,
    K: int,
    rng: np.random.Generator,
    *,
    risks: Callable[[], np.ndarray] | None = None,
    take: Callable[[int], Any] | None = None,
    entropy: Callable[[Sequence[Any]], np.ndarray] | None = None,
    ucb_factory: SamplerFactory = _ucb,
) -> Sampler:
    """The sampler of ``method``; ``risks`` (oracle), ``take`` and ``entropy`` (entropy) as the method needs."""
    if method == "ucb_ogd":
        return ucb_factory(K, rng)
    if method == "uniform":
        return UniformSampler(K, rng)
    if method == "greedy":
        return GreedySampler(K)
    if method == "oracle":
        if risks is None:
            raise ValueError("the oracle needs the true risks")
        return OracleSampler(K, risks)
    if method == "entropy":
        if take is None or entropy is None:
            raise ValueError("entropy sampling needs candidates and a predictive entropy")
        return EntropySampler(K, take, entropy)
    raise ValueError(f"unknown method {method!r}; one of {', '.join(METHODS)}")


def keyed(rng: np.random.Generator, *keys: int) -> np.random.Generator:
    """An independent child of ``rng`` named by integer ``keys`` (its seed sequence's spawn key extended by
    them), so that a method's or a horizon's generator does not depend on which others run beside it. Use it on
    a generator that is never ``spawn``-ed (the two could collide)."""
    ss = rng.bit_generator.seed_seq
    return np.random.default_rng(np.random.SeedSequence(ss.entropy, spawn_key=(*ss.spawn_key, *keys)))


def _check_methods(methods: Sequence[str], allowed: Sequence[str]) -> None:
    bad = [m for m in methods if m not in allowed]
    if bad:
        raise ValueError(f"unknown method(s) {', '.join(bad)}; one of {', '.join(allowed)}")


# ----------------------------------------------------------------------------------------- digits / CSV
def digits_seed(
    pools: SourcePools,
    horizon: int,
    rng: np.random.Generator,
    *,
    methods: Sequence[str] = METHODS,
    radius: float = 10.0,
    grad_bound: float | None = None,
    grad_of_clipped: bool = False,
    val_size: int = 100,
    checkpoints: int = 20,
    ucb_factory: SamplerFactory = _ucb,
) -> dict[str, Any]:
    """Every method on the same streams of one seed (module docstring).

    ``rng`` is spawned into the streams (T draws per source), the oracle's validation subset and the samplers'
    generator (one child per method, :func:`keyed` by its index in :data:`METHODS`). Returns ``sources``
    (DataFrame: method, output, source, name, accuracy, loss, n_labels), ``allocation`` (DataFrame: method, t,
    source, share), ``rounds`` ({method: RoundLog}),
    ``seconds`` ({method: wall time}) and ``eta``, ``grad_bound``."""
    import pandas as pd

    _check_methods(methods, METHODS)
    K = pools.n_sources
    stream_rng, val_rng, sampler_rng = rng.spawn(3)
    streams = pools.streams(horizon, stream_rng)
    Xv, yv, offsets = pools.validation(val_size, val_rng)
    G = grad_bound or SoftmaxLearner.grad_bound(pools.x_bound, pools.n_classes)
    eta = step_size(radius, G, horizon)
    tests = [augment(X) for X in pools.test_X]
    at = np.unique(np.linspace(1, horizon, checkpoints).round().astype(int))

    rows, alloc, logs, seconds = [], [], {}, {}
    for method in methods:
        srng = keyed(sampler_rng, METHODS.index(method))
        start = time.perf_counter()
        learner = SoftmaxLearner(pools.n_features, pools.n_classes)
        s = streams.fresh()

        def risks(learner: SoftmaxLearner = learner) -> np.ndarray:
            return np.add.reduceat(SoftmaxLearner.losses(learner.W, Xv, yv), offsets) / np.diff(
                np.append(offsets, len(yv))
            )

        def entropy(cands: Sequence[Any], learner: SoftmaxLearner = learner) -> np.ndarray:
            return SoftmaxLearner.entropy(learner.W, np.stack([x for x, _ in cands]))

        sampler = make_sampler(
            method, K, srng, risks=risks, take=s.take, entropy=entropy, ucb_factory=ucb_factory
        )
        draw = sampler.annotate if isinstance(sampler, EntropySampler) else s.take
        log = run_rounds(sampler, learner, draw, horizon, eta, radius, grad_of_clipped=grad_of_clipped)
        logs[method] = log
        counts = log.counts()
        for output in OUTPUTS:
            W = learner.output(output)
            for k in range(K):
                acc = float(np.mean(SoftmaxLearner.predict(W, tests[k]) == pools.test_y[k]))
                loss = float(np.mean(SoftmaxLearner.losses(W, tests[k], pools.test_y[k])))
                rows.append(
                    dict(
                        method=method,
                        output=output,
                        source=k,
                        name=pools.names[k],
                        accuracy=acc,
                        loss=loss,
                        n_labels=int(counts[k]),
                    )
                )
        for t, share in zip(at, log.shares(at), strict=True):
            alloc += [dict(method=method, t=int(t), source=k, share=float(share[k])) for k in range(K)]
        seconds[method] = time.perf_counter() - start
    return {
        "sources": pd.DataFrame(rows),
        "allocation": pd.DataFrame(alloc),
        "rounds": logs,
        "seconds": seconds,
        "eta": eta,
        "grad_bound": G,
    }


def worst_source_table(frame: Any, output: str = "average") -> Any:
    """Per seed and method: ``worst_acc`` = min over sources of the test accuracy, ``worst_loss`` = max over
    sources of the test loss, ``hard`` = the hardest source of the seed (the highest test loss under the
    ``uniform`` baseline's model), ``hard_ratio`` = K n_hard / T (the labels on it relative to a uniform share).
    ``frame``: the ``sources`` frames of :func:`digits_seed` with a ``seed`` column."""
    f = frame[frame.output == output].reset_index(drop=True)
    K = f.source.nunique()
    uni = f[f.method == "uniform"]
    if uni.empty:
        raise ValueError("the hardest source is defined by the uniform baseline: run method 'uniform'")
    hard = uni.loc[uni.groupby("seed").loss.idxmax(), ["seed", "source"]].set_index("seed").source
    g = f.groupby(["seed", "method"], sort=False)
    out = g.agg(
        worst_acc=("accuracy", "min"), worst_loss=("loss", "max"), labels=("n_labels", "sum")
    ).reset_index()
    out["hard"] = out.seed.map(hard).astype(int)
    n_hard = f.set_index(["seed", "method", "source"]).n_labels
    out["hard_ratio"] = [
        K * n_hard[(s, m, h)] / n
        for s, m, h, n in zip(out.seed, out.method, out.hard, out.labels, strict=True)
    ]
    return out


def worst_source_gains(table: Any, method: str = "ucb_ogd", baseline: str = "uniform") -> Any:
    """Per seed: worst-source accuracy (method) - worst-source accuracy (baseline) (a Series named ``gain``)."""
    w = table.pivot(index="seed", columns="method", values="worst_acc")
    return (w[method] - w[baseline]).rename("gain")


def worst_source_gain(table: Any, method: str = "ucb_ogd", baseline: str = "uniform") -> float:
    """Mean over seeds of worst-source accuracy (method) - worst-source accuracy (baseline)."""
    return float(worst_source_gains(table, method, baseline).mean())


def hard_source_allocation(table: Any, method: str = "ucb_ogd") -> float:
    """Mean over seeds of K n_hard / T for ``method`` (the hardest source under the uniform baseline)."""
    return float(table[table.method == method].hard_ratio.mean())


# ----------------------------------------------------------------------------------------- planted regret
def regret_run(
    problem: Planted,
    sampler: Sampler | Callable[[QuadraticLearner], Sampler],
    streams: Any,
    horizon: int,
    *,
    grad_of_clipped: bool = False,
    F_star: float | None = None,
) -> dict[str, Any]:
    """One run on the planted sources (``sampler``: a sampler, or a function of the learner that returns one,
    for the oracle): R_T, R_T / sqrt(T K ln T), the worst-source risk of the average and last iterates, F*, eta
    and the round log."""
    learner = QuadraticLearner(problem.means.shape[1], problem.scale, record=horizon)
    if not isinstance(sampler, Sampler):
        sampler = sampler(learner)
    eta = step_size(problem.radius, problem.grad_bound, horizon)
    log = run_rounds(
        sampler, learner, streams.take, horizon, eta, problem.radius, grad_of_clipped=grad_of_clipped
    )
    F_star = problem.minimax().value if F_star is None else F_star
    regret = float(problem.worst(learner.played).sum() - horizon * F_star)
    return {
        "regret": regret,
        "normalized": regret / math.sqrt(horizon * problem.n_sources * math.log(horizon)),
        "worst_average": float(problem.worst(learner.average())),
        "worst_last": float(problem.worst(learner.last())),
        "F_star": F_star,
        "eta": eta,
        "log": log,
    }


def regret_seed(
    K: int,
    horizons: Sequence[int],
    rng: np.random.Generator,
    *,
    methods: Sequence[str] = REGRET_METHODS,
    grad_of_clipped: bool = False,
    ucb_factory: SamplerFactory = _ucb,
    problem: Planted | None = None,
) -> Any:
    """Separate runs for every T of ``horizons`` and every method on the planted problem with K sources, on the
    streams of one seed (module docstring). ``rng`` is spawned into one stream per source (max T draws) and the
    samplers' generator (one child per method and T, :func:`keyed` by the method's index in :data:`METHODS`
    and T). Returns a DataFrame: K, T, method, regret, normalized, F_star, worst_average, worst_last, share_<k>
    (n_k / T), seconds."""
    import pandas as pd

    from .sources import Streams

    _check_methods(methods, ("ucb_ogd", "uniform", "greedy", "oracle"))
    problem = problem or planted(K)
    K = problem.n_sources
    stream_rng, sampler_rng = rng.spawn(2)
    longest = max(horizons)
    streams = Streams([problem.draw(k, longest, r) for k, r in enumerate(stream_rng.spawn(K))])
    F_star = problem.minimax().value
    rows = []
    for method in methods:
        for T in horizons:
            start = time.perf_counter()
            srng = keyed(sampler_rng, METHODS.index(method), int(T))
            if method == "oracle":  # argmax of the closed-form L_k at the current iterate

                def sampler(learner: QuadraticLearner) -> Sampler:
                    return OracleSampler(K, lambda: problem.risks(learner.theta))

            else:
                sampler = make_sampler(method, K, srng, ucb_factory=ucb_factory)
            res = regret_run(
                problem, sampler, streams.fresh(), T, grad_of_clipped=grad_of_clipped, F_star=F_star
            )
            shares = res["log"].counts() / T
            rows.append(
                dict(
                    K=K,
                    T=T,
                    method=method,
                    **{k: res[k] for k in ("regret", "normalized", "F_star", "worst_average", "worst_last")},
                    **{f"share_{k}": float(shares[k]) for k in range(K)},
                    seconds=time.perf_counter() - start,
                )
            )
    return pd.DataFrame(rows)


def loglog_slope(horizons: Sequence[float], regrets: Sequence[float]) -> float:
    """The least-squares slope b of log R_T = a + b log T."""
    T, R = np.asarray(horizons, dtype=float), np.asarray(regrets, dtype=float)
    if len(T) < 2 or np.any(R <= 0) or np.any(T <= 0):
        raise ValueError("need at least two horizons and positive regrets for a log-log fit")
    return float(np.polyfit(np.log(T), np.log(R), 1)[0])


def regret_slopes(frame: Any) -> Any:
    """Per (K, method): the log-log slope of the mean over seeds of R_T against T. ``frame``: rows of
    :func:`regret_seed` (several seeds)."""
    import pandas as pd

    mean = frame.groupby(["K", "method", "T"], sort=False).regret.mean().reset_index()
    rows = [
        dict(K=K, method=m, slope=loglog_slope(g["T"], g.regret))
        for (K, m), g in mean.groupby(["K", "method"], sort=False)
    ]
    return pd.DataFrame(rows)
