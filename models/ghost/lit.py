"""Lightning modules for GHOST's three training loops and the GCN baselines (full batch: one step per batch).

Each module trains several independent models in one fit: the loss is the sum of the models' own losses, so
every model gets exactly its own gradient, and Adam (element-wise, its state per parameter) updates each as if it
were trained alone. One fit instead of many saves Lightning's per-fit and per-step overhead.

- :class:`ProxyGenerators` trains every client's generator, for one or both settings of the FGW structure
  switch (C2 = identity as in the official code, or the kNN pseudo graph).
- :class:`GCNEnsemble` trains K independent GCNs, each for its own number of epochs (the local models from one
  common initialisation, and the centralised bound on the pooled graph).
- :class:`GhostServers` is the server's knowledge integration for several variants (one GCN each) at once, with
  manual optimisation: step s belongs to block b = s // T_G (client ``order[b // M]``, repeat b % M). A block
  opens by sampling the client's proxy graph and computing the topology-consistency criterion, runs T_G
  optimiser steps, and closes with the snapshot theta*_b. Variants that share the proxies and the label rule
  see the very same proxy graphs (the draws of block b come from one seed), so their differences are paired.
"""

from __future__ import annotations

from dataclasses import dataclass

import lightning as L
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader

from icml25 import random

from .graph import dense_adjacency, knn_graph, normalized_adjacency
from .losses import Retention, criterion, feature_loss, fgw_loss
from .nets import GCN, Generator, GeneratorBank


def progress(module: L.LightningModule, name: str, value) -> None:
    """Show ``value`` on the progress bar when there is one (``self.log`` costs 1-2 ms a step, a fifth of a
    server step, and nothing else reads it: the histories are kept by the modules)."""
    if module.trainer.progress_bar_callback is not None:
        module.log(name, value, prog_bar=True)


def steps_loader(steps: int) -> DataLoader:
    """Full-batch training: the loader only counts steps."""
    return DataLoader(torch.arange(steps), batch_size=1)


@dataclass(frozen=True)
class ProxyTarget:
    """What a client's generator is fitted to: its labels, train mask, real train features and adjacency, and
    the FGW structure C2 it is compared with (``identity``: the official ``A_new // 2``; ``knn``)."""

    y: torch.Tensor  # n_k labels of all local nodes (the generator is called on all of them)
    train: torch.Tensor  # n_k bool
    x_train: torch.Tensor
    a_train: torch.Tensor  # real adjacency restricted to the train nodes (C1)
    structure: str = "identity"


def two_groups(items: list[int], sizes: list[int]) -> tuple[list[int], list[int]]:
    """``items`` (sorted by ``sizes``, ascending) cut in two where the padded total, len(a) max(a) + len(b)
    max(b), is least (b empty when one group pads least)."""
    n = len(items)
    best, cut = n * (sizes[-1] if n else 0), n
    for c in range(1, n):
        cost = c * sizes[c - 1] + (n - c) * sizes[-1]
        if cost < best:
            best, cut = cost, c
    return items[:cut], items[cut:]


class ProxyGenerators(L.LightningModule):
    """``generators[i]`` is fitted to ``targets[i]``; ``cfg`` gives the shared hyper-parameters. The generators
    train in a few :class:`.nets.GeneratorBank` s (one batched forward each per step); :meth:`generators` returns
    them.

    Rows: with C2 = identity only the train rows of X_hat = G(z, y) enter the loss, and rows are independent (z
    and dropout drawn per row), so only the train rows are generated (the same computation in distribution); with
    the kNN structure all n_k rows are generated, the kNN graph is built over them and restricted to the train
    nodes. Each generator's rows are padded to the longest of its bank (label 0); padded rows are never read."""

    def __init__(self, generators: list[Generator], targets: list[ProxyTarget], cfg) -> None:
        super().__init__()
        self.targets = targets
        self.cfg = cfg
        labels = [t.y[t.train] if t.structure == "identity" else t.y for t in targets]
        self.rows = [len(y) for y in labels]
        # banks: per structure, the clients sorted by their row count and cut in two where that pads least (kNN
        # generates all n_k rows, identity only the train rows); members[j] lists the targets of bank j
        self.members: list[list[int]] = []
        for structure in dict.fromkeys(t.structure for t in targets):
            idx = sorted(
                (i for i, t in enumerate(targets) if t.structure == structure), key=lambda i: self.rows[i]
            )
            self.members += [part for part in two_groups(idx, [self.rows[i] for i in idx]) if part]
        self.banks = torch.nn.ModuleList([GeneratorBank([generators[i] for i in m]) for m in self.members])
        self.y = []
        for idx in self.members:
            y = torch.zeros(len(idx), max(self.rows[i] for i in idx), dtype=torch.long)
            for j, i in enumerate(idx):
                y[j, : self.rows[i]] = labels[i]
            self.y.append(y)
        self.history: list[
            dict[str, dict[str, float]]
        ] = []  # per step: structure -> mean losses over clients

    def generators(self) -> list[Generator]:
        """The trained generators, in the order of ``targets``."""
        out: list[Generator | None] = [None] * len(self.targets)
        for idx, bank in zip(self.members, self.banks, strict=True):
            for i, g in zip(idx, bank.generators(), strict=True):
                out[i] = g
        return out  # type: ignore[return-value]

    def client_loss(
        self, x_gen: torch.Tensor, t: ProxyTarget
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One client's loss from its generated rows ``x_gen`` (train rows, or all n_k rows for kNN)."""
        cfg = self.cfg
        if t.structure == "identity":
            # to_dense_adj over (diag set to 1) + add_self_loops gives 2 on the diagonal and 1 elsewhere; `// 2`
            # then leaves the identity: the official C2 carries no kNN structure at all.
            x_train = x_gen
            c2 = torch.eye(len(x_train))
        else:
            tr = t.train
            c2 = dense_adjacency(knn_graph(x_gen, cfg.knn_k), len(t.y))[tr][:, tr]
            x_train = x_gen[tr]
        loss_feat = feature_loss(x_train, t.x_train, cfg.lambda_d)
        loss_fgw = fgw_loss(
            t.a_train, c2, t.x_train, x_train, cfg.fgw_alpha, cfg.fgw_max_iter, cfg.fgw_tol_rel
        )
        return loss_feat + cfg.lambda_f * loss_fgw, loss_feat.detach(), loss_fgw.detach()

    def training_step(self, batch, batch_idx):
        rows = {}
        for idx, bank, y in zip(self.members, self.banks, self.y, strict=True):
            x = bank.sample(y)
            for j, i in enumerate(idx):
                rows[i] = x[j, : self.rows[i]]
        total = torch.zeros(())
        sums: dict[str, list[float]] = {}
        for i, t in enumerate(self.targets):
            loss, lf, lw = self.client_loss(rows[i], t)
            total = total + loss
            acc = sums.setdefault(t.structure, [0.0, 0.0, 0])
            acc[0] += float(lf)
            acc[1] += float(lw)
            acc[2] += 1
        self.history.append({s: {"loss_feat": a[0] / a[2], "loss_fgw": a[1] / a[2]} for s, a in sums.items()})
        progress(self, "train/loss", total.detach() / len(self.targets))
        return total

    def configure_optimizers(self):
        return torch.optim.Adam(
            self.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay, foreach=True
        )

    def train_dataloader(self):
        return steps_loader(self.cfg.client_epochs)


@dataclass(frozen=True)
class GraphTask:
    x: torch.Tensor
    a_hat: torch.Tensor
    y: torch.Tensor
    train: torch.Tensor  # bool mask of the labelled nodes


class GCNEnsemble(L.LightningModule):
    """``models[i]`` trained on ``tasks[i]`` for ``epochs[i]`` steps (an int: the same for all); a model whose
    epochs are over leaves the loss, so its parameters get no gradient and Adam leaves them alone."""

    def __init__(
        self,
        models: list[GCN],
        tasks: list[GraphTask],
        lr: float,
        weight_decay: float,
        epochs: int | list[int],
    ):
        super().__init__()
        self.models = torch.nn.ModuleList(models)
        self.tasks = tasks
        self.lr, self.weight_decay = lr, weight_decay
        self.epochs = [epochs] * len(models) if isinstance(epochs, int) else list(epochs)

    def training_step(self, batch, batch_idx):
        losses = [
            F.nll_loss(m(t.x, t.a_hat)[t.train], t.y[t.train])
            for m, t, e in zip(self.models, self.tasks, self.epochs, strict=True)
            if batch_idx < e
        ]
        progress(self, "train/loss", torch.stack(losses).mean().detach())
        return torch.stack(losses).sum()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay, foreach=True)

    def train_dataloader(self):
        return steps_loader(max(self.epochs))


def balanced_labels(n: int, num_classes: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``gen_y_noise``: floor(n / C) of each class, the remainder to the last class, shuffled."""
    counts = [n // num_classes] * num_classes
    counts[-1] += n - sum(counts)
    y = torch.repeat_interleave(torch.arange(num_classes), torch.tensor(counts))
    return y[torch.randperm(n, generator=generator)]


def proportional_labels(
    n: int, histogram: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """n labels in the client's own label proportions (largest remainders), shuffled: the classes it never saw
    are never asked of its generator (which needs the histogram on the server: an upload beyond the generator)."""
    share = histogram.double() / histogram.sum() * n
    counts = share.floor().long()
    rest = n - int(counts.sum())
    if rest:
        counts[torch.argsort(share - counts, descending=True)[:rest]] += 1
    y = torch.repeat_interleave(torch.arange(len(histogram)), counts)
    return y[torch.randperm(n, generator=generator)]


@dataclass
class ServerVariant:
    """One server model: its config (the switches), its GCN, the client generators it samples from, and
    whether retention is on (``lambda_r * r_scale`` > 0)."""

    cfg: object
    model: GCN
    generators: list[Generator]


class GhostServers(L.LightningModule):
    """Train one global GCN per variant on proxy graphs only, client by client, with retention.

    ``sizes[k]`` is client k's node count n_k (the number of proxy nodes drawn for it, as the official code does),
    ``histograms[k]`` its train-label counts (read only by variants with ``server_labels =
    client_proportions``), ``sample_seed`` the seed of the proxy draws (block b's from stream "draw", b) and of
    the GCNs' dropout (step s's masks from stream "dropout", s).
    Every variant shares ``order``, M, T_G, the server learning rate and weight decay.
    """

    def __init__(
        self,
        variants: dict[str, ServerVariant],
        order: list[int],
        sizes: list[int],
        histograms: list[torch.Tensor],
        sample_seed: int,
    ):
        super().__init__()
        self.automatic_optimization = False
        self.names = list(variants)
        self.variants = variants
        self.models = torch.nn.ModuleList([v.model for v in variants.values()])  # generators: not registered
        first = next(iter(variants.values())).cfg
        for v in variants.values():
            for f in ("repeats", "server_steps", "server_lr", "weight_decay"):
                if getattr(v.cfg, f) != getattr(first, f):
                    raise ValueError(f"server variants must share {f}")
        self.repeats, self.server_steps = first.repeats, first.server_steps
        self.lr, self.weight_decay = first.server_lr, first.weight_decay
        self.order, self.sizes, self.histograms = order, sizes, histograms
        self.sample_seed = sample_seed
        self.retention = {n: Retention() for n in self.names}
        self.blocks: dict[str, dict] = {}
        self.draws: dict[tuple, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self.history: dict[str, list[dict[str, float]]] = {n: [] for n in self.names}

    @property
    def total_steps(self) -> int:
        return len(self.order) * self.repeats * self.server_steps

    def draw(self, v: ServerVariant, b: int, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Block b's proxy graph for client k: labels (balanced over all C classes, or in k's train-label
        proportions), features X = G_k(z, y), z ~ N(0, I), with the generator in training mode (dropout on, as
        the official code never calls eval() on it), and the kNN edges over X. Seeded by block: variants drawing
        from the same generators with the same label rule get the same graph (drawn once, cached for block b)."""
        key = (b, v.cfg.fgw_structure, v.cfg.server_labels, v.cfg.knn_k)
        if key in self.draws:
            return self.draws[key]
        if self.draws and next(iter(self.draws))[0] != b:
            self.draws.clear()
        seed = random.seed_for(self.sample_seed, "draw", b)
        gen = torch.Generator().manual_seed(seed)
        n, hist = self.sizes[k], self.histograms[k]
        if v.cfg.server_labels == "balanced":
            y = balanced_labels(n, len(hist), gen)
        else:
            y = proportional_labels(n, hist, gen)
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(seed)  # the generator's dropout draws from the global RNG
            g = v.generators[k]
            g.train()
            x = g.sample(y, generator=gen)
        self.draws[key] = (x, y, knn_graph(x, v.cfg.knn_k))
        return self.draws[key]

    def open_block(self, name: str, b: int) -> None:
        v = self.variants[name]
        cfg = v.cfg
        k = self.order[b // self.repeats]
        x, y, edges = self.draw(v, b, k)
        n = len(y)
        w = float(cfg.self_loop_weight)
        a_hat = normalized_adjacency(edges, n, self_loop_weight=w)
        loops = torch.arange(n)
        crit_edges = torch.cat([edges, torch.stack([loops, loops])], dim=1)
        crit_w = torch.cat([torch.ones(edges.shape[1]), torch.full((n,), w)])
        omega, omega_norm, topo = criterion(
            v.model, x, a_hat, crit_edges, crit_w, zero_grad=not cfg.stale_omega
        )
        self.blocks[name] = {
            "client": k,
            "x": x,
            "y": y,
            "a_hat": a_hat,
            "omega": omega,
            "omega_norm": omega_norm,
            "topo": topo,
        }

    def training_step(self, batch, batch_idx):
        b, t = divmod(batch_idx, self.server_steps)
        if t == 0:  # before zero_grad: the official criterion sees the last step's (stale) gradient
            for name in self.names:
                self.open_block(name, b)
        opt = self.optimizers()
        opt.zero_grad()
        total = torch.zeros(())
        records = {}
        dropout_seed = random.seed_for(self.sample_seed, "dropout", batch_idx)
        for name in self.names:
            v, blk = self.variants[name], self.blocks[name]
            lam_r, lam_n = v.cfg.effective_lambdas
            v.model.train()
            with torch.random.fork_rng(devices=[]):  # every variant's dropout masks of step s from one seed
                torch.default_generator.manual_seed(dropout_seed)
                nll = F.nll_loss(v.model(blk["x"], blk["a_hat"]), blk["y"])
            loss = nll
            ret = torch.zeros(())
            if b > 0 and lam_r > 0:  # the official code adds the retention term from the second block on
                ret = self.retention[name].penalty(v.model)
                loss = loss + lam_r * ret
            # lambda_n * omega: omega is a number fixed when the block opened (a Python float in the official
            # code), so the term shifts the loss value and never the gradient; it is logged, not added.
            total = total + loss
            records[name] = {
                "block": b,
                "client": blk["client"],
                "nll": float(nll.detach()),
                "retention": float(lam_r * ret.detach()),
                "norm_term": lam_n * blk["omega_norm"],
                "topo": blk["topo"],
            }
        self.manual_backward(total)
        opt.step()
        for name in self.names:
            self.history[name].append(records[name])
        progress(self, "train/nll", sum(r["nll"] for r in records.values()) / len(records))
        if t == self.server_steps - 1:
            for name in self.names:
                m = self.variants[name].model
                self.retention[name].append(
                    self.blocks[name]["omega"], {n: p.detach().clone() for n, p in m.named_parameters()}
                )

    def configure_optimizers(self):
        return torch.optim.Adam(
            self.models.parameters(), lr=self.lr, weight_decay=self.weight_decay, foreach=True
        )

    def train_dataloader(self):
        return steps_loader(self.total_steps)
