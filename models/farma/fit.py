"""Training the base LM and the reward models with Lightning: one module, a schedule of epochs ("phases").

A schedule is a list of phases, each one epoch (a seeded permutation, drop-last minibatches) of one loss on its
own tensors: ``lm`` (next-token cross-entropy on base-LM samples), ``bt`` and ``max`` (FaRMA, alternated: one BT
epoch then one max epoch, ``alternations`` times, the official ``RM_FaRMA_train.sh``), ``bt_scalar`` (ARGS),
``prefix_bt`` (PARGS), ``regress`` (CD). As in the official scripts, where each phase is a fresh run from the
previous checkpoint, the optimizer (AdamW) starts afresh at every phase (``reset_optimizer=False`` keeps it:
ours).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset

from .nets import (
    CausalNet,
    bt_loss,
    max_loss,
    max_residuals,
    prefix_bt_loss,
    sequence_reward,
    value_regression_loss,
)

PHASES = ("lm", "bt", "max", "bt_scalar", "prefix_bt", "regress")


@dataclass(frozen=True)
class Phase:
    name: str
    tensors: tuple[torch.Tensor, ...]


class Epochs(IterableDataset):
    """Minibatches (phase index, *tensors) of every phase in order, one epoch each."""

    def __init__(self, phases: list[Phase], batch: int, seed: int):
        self.phases, self.batch, self.seed = phases, batch, seed

    def steps(self) -> int:
        return sum(max(1, len(p.tensors[0]) // min(self.batch, len(p.tensors[0]))) for p in self.phases)

    def __iter__(self) -> Iterator[tuple]:
        g = torch.Generator().manual_seed(self.seed)
        for i, ph in enumerate(self.phases):
            n = len(ph.tensors[0])
            b = min(self.batch, n)
            perm = torch.randperm(n, generator=g)
            for s in range(0, n - b + 1, b):
                idx = perm[s : s + b]
                yield (torch.tensor(i), *(t[idx] for t in ph.tensors))


class Trainable(L.LightningModule):
    """Manual optimisation over a phase schedule; ``history`` holds (phase, loss) per step and ``residuals``
    the mean |max residual| of each max phase."""

    def __init__(
        self,
        net: CausalNet,
        phases: list[Phase],
        lr: float,
        target_grad: bool = False,
        reset_optimizer: bool = True,
    ):
        super().__init__()
        self.net, self.names, self.lr = net, [p.name for p in phases], lr
        self.target_grad, self.reset_optimizer = target_grad, reset_optimizer
        self.automatic_optimization = False
        self.history: list[tuple[str, float]] = []
        self._phase = -1

    def configure_optimizers(self):
        return torch.optim.AdamW(self.net.parameters(), lr=self.lr, weight_decay=0.0)

    def loss(self, name: str, t: tuple[torch.Tensor, ...]) -> torch.Tensor:
        net = self.net
        if name == "lm":
            p, y = t
            logits = net(p, y)[:, :-1]
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        if name == "bt":
            p, yw, yl = t
            return bt_loss(sequence_reward(net(p, yw), yw), sequence_reward(net(p, yl), yl))
        if name == "max":
            p, yw = t
            return max_loss(net(p, yw), yw, self.target_grad)
        if name == "bt_scalar":
            p, yw, yl = t
            return bt_loss(net(p, yw)[:, -1, 0], net(p, yl)[:, -1, 0])
        if name == "prefix_bt":
            p, yw, yl = t
            return prefix_bt_loss(net(p, yw), net(p, yl))
        if name == "regress":
            p, y, target = t
            return value_regression_loss(net(p, y), target)
        raise ValueError(f"phase {name!r}: expected one of {PHASES}")

    def training_step(self, batch, batch_idx):
        i, *tensors = batch
        i = int(i)
        opt = self.optimizers()
        if i != self._phase:
            if self.reset_optimizer:
                opt.optimizer.state.clear()
            self._phase = i
        loss = self.loss(self.names[i], tuple(tensors))
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        self.history.append((self.names[i], float(loss.detach())))
        return loss


def fit(
    net: CausalNet,
    phases: list[Phase],
    *,
    lr: float,
    batch: int,
    seed: int,
    target_grad: bool = False,
    reset_optimizer: bool = True,
) -> list[tuple[str, float]]:
    """Train ``net`` in place through ``phases``; returns the (phase, loss) history."""
    from icml25.training import make_trainer
    from models.common.threads import one_thread

    data = Epochs(phases, batch, seed)
    module = Trainable(net, phases, lr, target_grad, reset_optimizer)
    trainer = make_trainer(data.steps(), seed)
    with one_thread():  # a GRU of 64 units: more threads only add overhead
        trainer.fit(module, DataLoader(data, batch_size=None))
    return module.history


@torch.no_grad()
def mean_abs_residual(net: CausalNet, prompts: torch.Tensor, y: torch.Tensor) -> float:
    """Mean |logits(y_<t)[y_t] - max_x logits(y_<=t)[x]| over responses and t (how far the max constraint
    holds)."""
    return float(max_residuals(net(prompts, y), y).abs().mean())
