"""The batched variant through Lightning (the paper's deep-learning practice, for the report only).

Per round r = 1..T/b: the sampler picks a source k_r; the next b draws of source k_r's stream join the labelled
pool; the mean of their clipped losses under the current model is the bandit feedback (S_k += mean, n_k += 1: one
arm pull per batch); then ``steps`` SGD steps, each on a minibatch drawn uniformly with replacement from the
pool, each followed by the projection onto ||W||_F <= R. The model is the same multinomial logistic regression on
x~ = (x, 1) (a bias-free ``nn.Linear(d + 1, C)``, W = 0 at the start) with loss CE / ln C; the output is the last
iterate (the usual deep-learning practice). Ours: b = 16, 4 steps a round, minibatches of 32, and the step
lr = 2R / (G sqrt(rounds x steps)) (OGD's rule with the number of SGD steps as the horizon), as no source states
them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .experiment import METHODS, keyed
from .learners import SoftmaxLearner, augment
from .ogd import step_size
from .sampler import Sampler, UCBSampler, UniformSampler
from .sources import SourcePools, Streams


class BatchedUCBOGD(L.LightningModule):
    """One training step = one round (module docstring); manual optimisation."""

    def __init__(
        self,
        n_features: int,
        n_classes: int,
        sampler: Sampler,
        streams: Streams,
        rounds: int,
        batch: int,
        steps: int,
        minibatch: int,
        lr: float,
        radius: float,
        seed: int,
    ) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.linear = nn.Linear(n_features + 1, n_classes, bias=False)
        nn.init.zeros_(self.linear.weight)
        self.sampler, self.streams = sampler, streams
        self.batch, self.steps, self.minibatch = batch, steps, minibatch
        self.lr, self.radius = lr, radius
        self.scale = 1.0 / math.log(n_classes)
        self.pool_X = torch.zeros(rounds * batch, n_features + 1)
        self.pool_y = torch.zeros(rounds * batch, dtype=torch.long)
        self.size = 0
        self.gen = torch.Generator().manual_seed(seed)
        self.history: list[dict[str, float]] = []

    def losses(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.linear(X), y, reduction="none") * self.scale

    def training_step(self, batch: Any, batch_idx: int) -> None:
        k = self.sampler.select()
        Xb, yb = self.streams.take_batch(k, self.batch)
        X, y = torch.as_tensor(Xb, dtype=torch.float32), torch.as_tensor(yb, dtype=torch.long)
        with torch.no_grad():
            feedback = float(self.losses(X, y).clamp(max=1.0).mean())
        self.sampler.update(k, feedback)
        self.pool_X[self.size : self.size + len(y)] = X
        self.pool_y[self.size : self.size + len(y)] = y
        self.size += len(y)
        opt = self.optimizers()
        for _ in range(self.steps):
            idx = torch.randint(self.size, (self.minibatch,), generator=self.gen)
            loss = self.losses(self.pool_X[idx], self.pool_y[idx]).mean()
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
            with torch.no_grad():
                norm = float(self.linear.weight.norm())
                if norm > self.radius:
                    self.linear.weight.mul_(self.radius / norm)
        self.history.append(
            {"round": batch_idx + 1, "source": k, "feedback": feedback, "loss": float(loss.detach())}
        )

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.lr)

    def weights(self) -> np.ndarray:
        """W (d + 1, C) as in :class:`~models.ucb_ogd.learners.SoftmaxLearner`."""
        return self.linear.weight.detach().numpy().T.astype(float)


def batched_seed(
    pools: SourcePools,
    rounds: int,
    rng: np.random.Generator,
    seed: int,
    *,
    methods: Sequence[str] = ("ucb_ogd", "uniform"),
    batch: int = 16,
    steps: int = 4,
    minibatch: int = 32,
    lr: float | None = None,
    radius: float = 10.0,
) -> dict[str, Any]:
    """The batched variant for each of ``methods`` (``ucb_ogd`` or ``uniform``) on the same streams of one seed
    (``rng`` is spawned into the streams, rounds x batch draws per source, and the samplers' generator;
    ``seed`` seeds Lightning and the minibatches). Returns ``sources`` (DataFrame: method, source, name,
    accuracy, loss, n_labels), ``history`` (DataFrame: method, round, source, feedback, loss) and ``seconds``."""
    import pandas as pd

    from icml25.training import make_trainer

    torch.set_num_threads(1)
    bad = [m for m in methods if m not in ("ucb_ogd", "uniform")]
    if bad:
        raise ValueError(f"the batched variant runs ucb_ogd or uniform, not {', '.join(bad)}")
    K = pools.n_sources
    stream_rng, sampler_rng = rng.spawn(2)
    streams = pools.streams(rounds * batch, stream_rng)
    if lr is None:
        lr = step_size(radius, SoftmaxLearner.grad_bound(pools.x_bound, pools.n_classes), rounds * steps)
    tests = [augment(X) for X in pools.test_X]
    rows, history, seconds = [], [], {}
    for method in methods:
        start = time.perf_counter()
        sampler = (
            UCBSampler(K)
            if method == "ucb_ogd"
            else UniformSampler(K, keyed(sampler_rng, METHODS.index(method)))
        )
        module = BatchedUCBOGD(
            pools.n_features,
            pools.n_classes,
            sampler,
            streams.fresh(),
            rounds,
            batch,
            steps,
            minibatch,
            lr,
            radius,
            seed,
        )
        loader = DataLoader(TensorDataset(torch.arange(rounds)), batch_size=1)
        make_trainer(-1, seed, max_epochs=1).fit(module, loader)
        W = module.weights()
        counts = sampler.counts * batch
        for k in range(K):
            rows.append(
                dict(
                    method=method,
                    source=k,
                    name=pools.names[k],
                    accuracy=float(np.mean(SoftmaxLearner.predict(W, tests[k]) == pools.test_y[k])),
                    loss=float(np.mean(SoftmaxLearner.losses(W, tests[k], pools.test_y[k]))),
                    n_labels=int(counts[k]),
                )
            )
        history += [dict(method=method, **h) for h in module.history]
        seconds[method] = time.perf_counter() - start
    return {"sources": pd.DataFrame(rows), "history": pd.DataFrame(history), "seconds": seconds, "lr": lr}
