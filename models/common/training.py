"""Pieces of Lightning training that several papers share: fast shuffled minibatches from in-memory tensors,
and a progress callback that reports every so many steps."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader, IterableDataset


class ShuffledBatches(IterableDataset):
    """``steps`` minibatches of ``batch`` rows of the same-length tensors ``tensors``: epochs of a seeded random
    permutation, each minibatch gathered with one indexing call (no per-row collation). The last partial batch
    of an epoch is dropped, as a ``drop_last`` loader would. No ``__len__``: the Trainer's ``max_steps`` ends the
    run (Lightning warns about a sized IterableDataset)."""

    def __init__(self, tensors: tuple[torch.Tensor, ...], batch: int, steps: int, seed: int):
        n = len(tensors[0])
        if any(len(t) != n for t in tensors):
            raise ValueError("tensors of different lengths")
        self.tensors, self.batch, self.steps, self.seed = tensors, min(batch, n), steps, seed

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        g = torch.Generator().manual_seed(self.seed)
        n, done = len(self.tensors[0]), 0
        while done < self.steps:
            perm = torch.randperm(n, generator=g)
            for start in range(0, n - self.batch + 1, self.batch):
                idx = perm[start : start + self.batch]
                yield tuple(t[idx] for t in self.tensors)
                done += 1
                if done == self.steps:
                    return


def loader(tensors: tuple[torch.Tensor, ...], batch: int, steps: int, seed: int) -> DataLoader:
    """A DataLoader over :class:`ShuffledBatches` (already batched: ``batch_size=None``)."""
    return DataLoader(ShuffledBatches(tensors, batch, steps, seed), batch_size=None)


class Progress(L.Callback):
    """Calls ``report(step, module.history[-1])`` every ``every`` optimizer steps and at the last one."""

    def __init__(self, every: int, report: Callable[[int, Any], None]):
        self.every, self.report = max(1, every), report  # not ``log``: Lightning would call the module's own

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = trainer.global_step
        if step % self.every == 0 or step == trainer.max_steps:
            self.report(step, module.history[-1])
