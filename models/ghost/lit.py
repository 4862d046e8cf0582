"""Lightning modules for GHOST's three training loops and the GCN baselines (full batch: one step per batch).

- :class:`ProxyGenerators` trains every client's generator at once. The loss is the sum over clients of each
  client's own loss, so each generator gets exactly its own gradient, and Adam (element-wise) updates each as
  if it were trained alone: one Lightning fit instead of ten.
- :class:`GCNEnsemble` trains K independent GCNs (the local models, from one common initialisation) the same way;
  with K = 1 on the pooled graph it is the centralised bound.
- :class:`GhostServer` is the server's knowledge integration, with manual optimisation: step s belongs to block
  b = s // T_G (client ``order[b // M]``, repeat b % M). A block opens by sampling the client's proxy graph and
  computing the topology-consistency criterion, runs T_G optimiser steps, and closes with the snapshot theta*_b.
"""

from __future__ import annotations

from dataclasses import dataclass

import lightning as L
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader

from .graph import dense_adjacency, knn_graph, normalized_adjacency
from .losses import criterion, feature_loss, fgw_loss, retention_penalty
from .nets import GCN, Generator


def steps_loader(steps: int) -> DataLoader:
    """Full-batch training: the loader only counts steps."""
    return DataLoader(torch.arange(steps), batch_size=1)


@dataclass(frozen=True)
class ProxyTarget:
    """What a client's generator is fitted to: its labels, train mask, real train features and adjacency."""

    y: torch.Tensor  # n_k labels of all local nodes (the generator is called on all of them)
    train: torch.Tensor  # n_k bool
    x_train: torch.Tensor
    a_train: torch.Tensor  # real adjacency restricted to the train nodes (C1)


class ProxyGenerators(L.LightningModule):
    def __init__(self, generators: list[Generator], targets: list[ProxyTarget], cfg) -> None:
        super().__init__()
        self.generators = torch.nn.ModuleList(generators)
        self.targets = targets
        self.cfg = cfg
        self.history: list[dict[str, float]] = []

    def client_loss(self, g: Generator, t: ProxyTarget) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cfg = self.cfg
        x_gen = g.sample(t.y)
        edges = knn_graph(x_gen, cfg.knn_k)
        if cfg.faithful_to_code:
            # to_dense_adj over (diag set to 1) + add_self_loops gives 2 on the diagonal and 1 elsewhere; `// 2`
            # then leaves the identity: the official C2 carries no kNN structure at all.
            a_gen = torch.eye(len(t.y))
        else:
            a_gen = dense_adjacency(edges, len(t.y))
        tr = t.train
        loss_feat = feature_loss(x_gen[tr], t.x_train, cfg.lambda_d)
        loss_fgw = fgw_loss(t.a_train, a_gen[tr][:, tr], t.x_train, x_gen[tr], cfg.fgw_alpha)
        return loss_feat + cfg.lambda_f * loss_fgw, loss_feat.detach(), loss_fgw.detach()

    def training_step(self, batch, batch_idx):
        total = torch.zeros(())
        feats, fgws = [], []
        for g, t in zip(self.generators, self.targets, strict=True):
            loss, lf, lw = self.client_loss(g, t)
            total = total + loss
            feats.append(float(lf))
            fgws.append(float(lw))
        k = len(self.targets)
        self.history.append({"loss_feat": sum(feats) / k, "loss_fgw": sum(fgws) / k})
        self.log("train/loss", total / k, prog_bar=True)
        return total

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)

    def train_dataloader(self):
        return steps_loader(self.cfg.client_epochs)


@dataclass(frozen=True)
class GraphTask:
    x: torch.Tensor
    a_hat: torch.Tensor
    y: torch.Tensor
    train: torch.Tensor  # bool mask of the labelled nodes


class GCNEnsemble(L.LightningModule):
    def __init__(
        self, models: list[GCN], tasks: list[GraphTask], lr: float, weight_decay: float, epochs: int
    ):
        super().__init__()
        self.models = torch.nn.ModuleList(models)
        self.tasks = tasks
        self.lr, self.weight_decay, self.epochs = lr, weight_decay, epochs

    def training_step(self, batch, batch_idx):
        losses = [
            F.nll_loss(m(t.x, t.a_hat)[t.train], t.y[t.train])
            for m, t in zip(self.models, self.tasks, strict=True)
        ]
        self.log("train/loss", torch.stack(losses).mean().detach(), prog_bar=True)
        return torch.stack(losses).sum()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)

    def train_dataloader(self):
        return steps_loader(self.epochs)


def balanced_labels(n: int, num_classes: int) -> torch.Tensor:
    """``gen_y_noise``: floor(n / C) of each class, the remainder to the last class, shuffled."""
    counts = [n // num_classes] * num_classes
    counts[-1] += n - sum(counts)
    y = torch.repeat_interleave(torch.arange(num_classes), torch.tensor(counts))
    return y[torch.randperm(n)]


def proportional_labels(n: int, histogram: torch.Tensor) -> torch.Tensor:
    """n labels in the client's own label proportions (largest remainders), shuffled: the classes it never saw
    are never asked of its generator."""
    share = histogram.double() / histogram.sum() * n
    counts = share.floor().long()
    rest = n - int(counts.sum())
    if rest:
        counts[torch.argsort(share - counts, descending=True)[:rest]] += 1
    y = torch.repeat_interleave(torch.arange(len(histogram)), counts)
    return y[torch.randperm(n)]


class GhostServer(L.LightningModule):
    """Train the global GCN on the clients' proxy graphs only, client by client, with retention."""

    def __init__(
        self,
        model: GCN,
        generators: list[Generator],
        order: list[int],
        sizes: list[int],
        histograms: list[torch.Tensor],
        cfg,
        retention: bool = True,
    ):
        super().__init__()
        self.automatic_optimization = False
        self.model = model
        self.generators = generators  # frozen: not registered as submodules, never optimised
        self.order, self.sizes, self.histograms = order, sizes, histograms
        self.cfg = cfg
        self.retention = retention
        self.omegas: list[dict[str, torch.Tensor]] = []
        self.snapshots: list[dict[str, torch.Tensor]] = []
        self.block: dict | None = None
        self.history: list[dict[str, float]] = []

    @property
    def lambdas(self) -> tuple[float, float]:
        cfg = self.cfg
        scale_r, scale_n = (cfg.r_scale, cfg.n_scale) if cfg.faithful_to_code else (1.0, 1.0)
        lam_r = cfg.lambda_r * scale_r if self.retention else 0.0
        return lam_r, cfg.lambda_n * scale_n

    def open_block(self, b: int) -> None:
        cfg = self.cfg
        k = self.order[b // cfg.repeats]
        n = self.sizes[k]
        with torch.no_grad():
            g = self.generators[k]
            if cfg.faithful_to_code:
                y = balanced_labels(n, len(self.histograms[k]))
            else:
                y = proportional_labels(n, self.histograms[k])
            x = g.sample(y)
        edges = knn_graph(x, cfg.knn_k)
        w = 2.0 if cfg.faithful_to_code else 1.0
        a_hat = normalized_adjacency(edges, n, self_loop_weight=w)
        loops = torch.arange(n)
        crit_edges = torch.cat([edges, torch.stack([loops, loops])], dim=1)
        crit_w = torch.cat([torch.ones(edges.shape[1]), torch.full((n,), w)])
        omega, omega_norm, topo = criterion(
            self.model, x, a_hat, crit_edges, crit_w, zero_grad=not cfg.faithful_to_code
        )
        self.omegas.append(omega)
        self.block = {
            "client": k,
            "x": x,
            "y": y,
            "a_hat": a_hat,
            "edges": crit_edges,
            "w": crit_w,
            "omega_norm": omega_norm,
            "topo": topo,
        }

    def training_step(self, batch, batch_idx):
        cfg = self.cfg
        b, t = divmod(batch_idx, cfg.server_steps)
        if t == 0:
            self.open_block(b)
        blk = self.block
        opt = self.optimizers()
        lam_r, lam_n = self.lambdas
        self.model.train()
        opt.zero_grad()
        nll = F.nll_loss(self.model(blk["x"], blk["a_hat"]), blk["y"])
        loss = nll
        ret = torch.zeros(())
        if b > 0:  # the official code adds the retention term from the second block on
            ret = retention_penalty(self.model, self.omegas[:b], self.snapshots[:b])
            loss = loss + lam_r * ret
        # lambda_n * omega: omega is a number fixed when the block opened (a Python float in the official
        # code), so the term shifts the loss value and never the gradient; it is logged, not added.
        self.manual_backward(loss)
        opt.step()
        self.history.append(
            {
                "block": b,
                "client": blk["client"],
                "nll": float(nll.detach()),
                "retention": float(lam_r * ret.detach()),
                "norm_term": lam_n * blk["omega_norm"],
                "topo": blk["topo"],
            }
        )
        self.log("train/nll", nll.detach(), prog_bar=True)
        if t == cfg.server_steps - 1:
            self.snapshots.append({n: p.detach().clone() for n, p in self.model.named_parameters()})

    def configure_optimizers(self):
        return torch.optim.Adam(
            self.model.parameters(), lr=self.cfg.server_lr, weight_decay=self.cfg.weight_decay
        )

    def train_dataloader(self):
        return steps_loader(len(self.order) * self.cfg.repeats * self.cfg.server_steps)
