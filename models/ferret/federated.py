"""Federated rounds for every method, as one Lightning module whose training step is one round.

Round r (all methods): the server samples ``per_round`` of the clients; each starts from the global weights w and
runs its local procedure on its own rows; the server combines what they send into an update Delta and steps
w <- w - slr Delta (an SGD optimiser with learning rate slr over the global model, fed Delta as the gradient);
the global model is evaluated on the test rows.

- ``fedavg``: T SGD steps (batch B, lr eta); uplink Delta (d scalars); Delta = mean of the clients' Delta.
- ``ferret``: the same T SGD steps; uplink the :class:`.codec.FerretCodec` message (sum_l K_l + 1 scalars);
  Delta = the decoded mean. ``seeds: fresh`` draws the round's candidate bases from a new round seed (the paper);
  ``fixed`` keeps one for the run (the official code's ``candidate_seeds``). ``scaling: code`` is the code's
  projection (d_l / K_l, no rho), clipping, and slr 10; ``ferret_official`` is both switches.
- ``zo`` (FedKSeed-style): a fixed pool of P Gaussian directions for the run; ``zo_steps`` two-point steps
  g = (l(w + eps z_j) - l(w - eps z_j)) / (2 eps), w <- w - lr g z_j, j uniform in the pool; uplink the (j, g)
  pairs' scalars and the client seed (steps + 1); the server replays the pairs: Delta = mean_i sum lr g z_j.
- ``fedzo``: the same zeroth-order steps with fresh directions from the client's stream; uplink Delta (d).

Common random numbers: the selection, the clients' minibatches and the initial weights come from streams of the
run's seed shared by all methods, so methods differ only by what they do with them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.func import functional_call
from torch.utils.data import DataLoader

from icml25.random import rng, seed_for
from models.common.threads import one_thread

from .bases import gaussian_directions
from .codec import FerretCodec, Message
from .data import FedData

KINDS = ("fedavg", "ferret", "zo", "fedzo")


@dataclass(frozen=True)
class Method:
    """One federated method: a ``kind`` and, for Ferret, K, the seed regime and the scaling."""

    name: str
    kind: str
    K: int = 64
    seeds: str = "fresh"
    scaling: str = "paper"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"method kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.seeds not in ("fresh", "fixed"):
            raise ValueError(f"seeds {self.seeds!r}: expected fresh or fixed")
        if self.scaling not in ("paper", "code"):
            raise ValueError(f"scaling {self.scaling!r}: expected paper or code")
        if self.K < 2:
            raise ValueError(f"K = {self.K}: must be >= 2")


def method(name: str, K: int = 64, seeds: str = "fresh") -> Method:
    """The catalogue: ``fedavg``, ``ferret`` (K, seeds as given), ``ferret_fixed`` (the code's fixed candidate
    seeds), ``ferret_code`` (the code's scaling: no rho, clipping, slr 10; fresh seeds), ``ferret_official`` (both:
    the code as it runs), ``ferret_k<N>`` (K = N), ``zo`` (FedKSeed-style) and ``fedzo``."""
    if name in ("fedavg", "zo", "fedzo"):
        return Method(name, name)
    variants = {
        "ferret": (K, seeds, "paper"),
        "ferret_fixed": (K, "fixed", "paper"),
        "ferret_code": (K, seeds, "code"),
        "ferret_official": (K, "fixed", "code"),
    }
    if name in variants:
        return Method(name, "ferret", *variants[name])
    if name.startswith("ferret_k") and name[8:].isdigit():
        return Method(name, "ferret", int(name[8:]), seeds)
    raise ValueError(
        f"method {name!r}: expected fedavg, ferret, ferret_fixed, ferret_code, ferret_official, ferret_k<N>, zo "
        "or fedzo"
    )


@dataclass(frozen=True)
class Config:
    rounds: int = 80
    per_round: int = 5
    local_steps: int = 10  # T
    batch: int = 32
    lr: float = 0.1
    slr: float = 1.0  # the paper's server step (Ferret and FedAvg)
    code_slr: float = 10.0  # the official code's, with scaling: code
    clip: float = 10.0  # the official code's per-seed, per-block reconstruction clip (scaling: code)
    zo_steps: int = 64
    zo_lr: float = 0.02
    zo_eps: float = 1e-3
    zo_pool: int = 64
    hidden: int = 32


def mlp(inputs: int, hidden: int, classes: int, seed: int) -> nn.Module:
    """The 64-32-10 tanh network of the spec (d = 2,410 for the digits: 4 blocks), seeded."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, classes))


def round_seed(seed: int, r: int, seeds: str) -> int:
    """The round's candidate-basis seed: new every round (fresh) or one for the run (fixed)."""
    return seed_for(seed, "round", r) if seeds == "fresh" else seed_for(seed, "round-fixed")


class Federated(L.LightningModule):
    """One run: ``method`` for ``cfg.rounds`` rounds on ``data`` from the weights of ``net``. ``rows`` holds one
    record per round (accuracy, loss, mean uplink scalars per client, single-round reconstruction error of
    Ferret's decoded mean against the clients' true mean update, seconds)."""

    def __init__(
        self,
        net: nn.Module,
        data: FedData,
        meth: Method,
        cfg: Config,
        seed: int,
        codec_cls: type[FerretCodec] = FerretCodec,
        progress: Callable[[int, dict], None] | None = None,
    ):
        super().__init__()
        self.automatic_optimization = False
        self.net, self.data, self.meth, self.cfg, self.seed = net, data, meth, cfg, seed
        self.progress = progress
        self.names = [n for n, _ in net.named_parameters()]
        self.dim = sum(p.numel() for p in net.parameters())
        self.codec = codec_cls(net, meth.K, scaling=meth.scaling, clip=cfg.clip)
        # buffers (not saved): Lightning moves them with the model to its device
        for name, a in (
            ("x", data.x_train),
            ("y", data.y_train),
            ("x_test", data.x_test),
            ("y_test", data.y_test),
        ):
            t = torch.as_tensor(a)
            self.register_buffer(name, t.float() if t.is_floating_point() else t, persistent=False)
        self.client_rows = [data.rows(c) for c in range(data.clients)]
        self.register_buffer(
            "pool",
            gaussian_directions(seed_for(seed, "zo-pool"), range(cfg.zo_pool), self.dim)
            if meth.kind == "zo"
            else None,
            persistent=False,
        )
        self.rows: list[dict] = []
        self._flat_ok = isinstance(net, nn.Sequential) and all(
            isinstance(m, nn.Linear | nn.Tanh | nn.ReLU | nn.Sigmoid | nn.GELU) for m in net
        )

    @property
    def slr(self) -> float:
        return self.cfg.code_slr if self.meth.scaling == "code" else self.cfg.slr

    # --- the model as a function of its flat parameters ----------------------------------------------------
    def params(self) -> list[torch.Tensor]:
        return [p.detach().clone() for p in self.net.parameters()]

    def loss(self, params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = functional_call(self.net, dict(zip(self.names, params, strict=True)), (x,))
        return nn.functional.cross_entropy(out, y)

    def losses(
        self, W: torch.Tensor, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The minibatch loss at each row of W ((m, d) flat parameter vectors), on one minibatch x (B, ...), y
        (B, ...) or one per row, x (m, B, ...), y (m, B, ...), with ``mask`` (m, B) marking real rows (1) and padding (0): one
        batched forward for a Sequential of Linear layers and elementwise activations, else a functional call
        per row."""
        m = len(W)
        xs = x if x.dim() == self.x.dim() + 1 else x.expand(m, *x.shape)
        ys = y if y.dim() == self.y.dim() + 1 else y.expand(m, *y.shape)
        if not self._flat_ok:
            out = []
            for i in range(m):
                keep = slice(None) if mask is None else mask[i] > 0
                out.append(self.loss(self.unflatten(W[i]), xs[i][keep], ys[i][keep]))
            return torch.stack(out)
        out, i = xs, 0
        for mod in self.net:
            if isinstance(mod, nn.Linear):
                o, n = mod.out_features, mod.in_features
                weight = W[:, i : i + o * n].view(m, o, n)
                i += o * n
                if mod.bias is not None:
                    out = torch.baddbmm(W[:, None, i : i + o], out, weight.transpose(1, 2))
                    i += o
                else:
                    out = torch.bmm(out, weight.transpose(1, 2))
            else:
                out = mod(out)
        per = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), ys.reshape(-1), reduction="none")
        per = per.view(m, -1)
        return per.mean(1) if mask is None else (per * mask).sum(1) / mask.sum(1)

    def unflatten(self, v: torch.Tensor) -> list[torch.Tensor]:
        out, i = [], 0
        for p in self.net.parameters():
            out.append(v[i : i + p.numel()].view_as(p))
            i += p.numel()
        return out

    # --- local procedures ----------------------------------------------------------------------------------
    def local_sgd(self, gens: list[np.random.Generator], rows: list[np.ndarray]) -> list[list[torch.Tensor]]:
        """T SGD steps from the global weights for several clients in lockstep (each with its own minibatches:
        the gradient of the sum of the clients' losses with respect to client c's weights is client c's own);
        per client, Delta = old - new per block."""
        w0 = torch.nn.utils.parameters_to_vector(self.net.parameters()).detach()
        W = w0.repeat(len(gens), 1).requires_grad_(True)
        for _ in range(self.cfg.local_steps):
            x, y, mask = self.batches(gens, rows)
            (grad,) = torch.autograd.grad(self.losses(W, x, y, mask).sum(), W)
            with torch.no_grad():
                W = (W - self.cfg.lr * grad).requires_grad_(True)
        delta = (w0 - W).detach()
        return [[b.clone() for b in self.unflatten(d)] for d in delta]

    def batches(
        self, gens: list[np.random.Generator], rows: list[np.ndarray]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One minibatch per client, padded to a common size: x (n, B, p), y (n, B), mask (n, B)."""
        picks = [r[g.permutation(len(r))[: self.cfg.batch]] for g, r in zip(gens, rows, strict=True)]
        B = max(len(p) for p in picks)
        idx = torch.zeros(len(picks), B, dtype=torch.long)
        mask = torch.zeros(len(picks), B)
        for i, p in enumerate(picks):
            idx[i, : len(p)] = torch.from_numpy(p)
            mask[i, : len(p)] = 1.0
        idx = idx.to(self.x.device)
        return self.x[idx], self.y[idx], mask.to(self.x.device)

    @torch.no_grad()
    def local_zo(
        self, gens: list[np.random.Generator], rows: list[np.ndarray], directions: torch.Tensor | None
    ) -> list[tuple[torch.Tensor, list[tuple[int, float]]]]:
        """Zeroth-order two-point steps of several clients in lockstep (each from its own generator, so the
        result is each client's alone): ``directions`` is the pool (indices drawn uniformly) or None (fresh
        directions from the client's stream). Per client: (Delta flat, the pairs (j, lr g))."""
        cfg, n = self.cfg, len(gens)
        w0 = torch.nn.utils.parameters_to_vector(self.net.parameters()).detach()
        W = w0.repeat(n, 1)
        if directions is None:
            dirs = [
                gaussian_directions(int(g.integers(2**62)), range(cfg.zo_steps), self.dim).to(W.device)
                for g in gens
            ]
            picks = [np.arange(cfg.zo_steps)] * n
        else:
            dirs = [directions] * n
            picks = [g.integers(len(directions), size=cfg.zo_steps) for g in gens]
        pairs: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        for t in range(cfg.zo_steps):
            Z = torch.stack([dirs[c][picks[c][t]] for c in range(n)])
            x, y, mask = self.batches(gens, rows)
            both = self.losses(
                torch.cat([W + cfg.zo_eps * Z, W - cfg.zo_eps * Z]),
                torch.cat([x, x]),
                torch.cat([y, y]),
                torch.cat([mask, mask]),
            ).double()
            step = cfg.zo_lr * (both[:n] - both[n:]) / (2 * cfg.zo_eps)
            W -= step[:, None].to(W.dtype) * Z
            for c, s in enumerate(step.tolist()):
                pairs[c].append((int(picks[c][t]), s))
        return [(w0 - W[c], pairs[c]) for c in range(n)]

    def clients(self, r: int, chosen: list[int]) -> list[tuple[object, int, list[torch.Tensor] | None]]:
        """Per chosen client of round r: (payload, uplink scalars, true Delta blocks or None). Each client draws
        from its own stream (run seed, round, client), whatever the others do."""
        gens = [rng(self.seed, "client", r, c) for c in chosen]
        kind = self.meth.kind
        if kind in ("zo", "fedzo"):
            res = self.local_zo(
                gens, [self.client_rows[c] for c in chosen], self.pool if kind == "zo" else None
            )
            if kind == "zo":
                return [(pairs, len(pairs) + 1, None) for _, pairs in res]
            return [(self.unflatten(flat), self.dim, None) for flat, _ in res]
        out = []
        deltas = self.local_sgd(gens, [self.client_rows[c] for c in chosen])
        for c, delta in zip(chosen, deltas, strict=True):
            if kind == "fedavg":
                out.append((delta, self.dim, delta))
                continue
            msg = self.codec.encode(
                delta, round_seed(self.seed, r, self.meth.seeds), seed_for(self.seed, "client-seed", r, c)
            )
            out.append((msg, msg.scalars, delta))
        return out

    def client(self, r: int, c: int) -> tuple[object, int, list[torch.Tensor] | None]:
        """(payload, uplink scalars, true Delta blocks or None) of client c in round r."""
        return self.clients(r, [c])[0]

    def server(self, r: int, payloads: list) -> list[torch.Tensor]:
        """The round's update Delta (the mean over the selected clients)."""
        n, kind = len(payloads), self.meth.kind
        if kind in ("fedavg", "fedzo"):
            return [torch.stack(blocks).mean(0) for blocks in zip(*payloads, strict=True)]
        if kind == "ferret":
            msgs: list[Message] = payloads
            return self.codec.decode(msgs, round_seed(self.seed, r, self.meth.seeds))
        coef = torch.zeros(len(self.pool), dtype=torch.float64)
        for pairs in payloads:
            for j, step in pairs:
                coef[j] += step / n
        return self.unflatten(coef.to(self.pool.device, self.pool.dtype) @ self.pool)

    # --- Lightning ----------------------------------------------------------------------------------------
    def configure_optimizers(self):
        return torch.optim.SGD(self.net.parameters(), lr=self.slr)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(range(self.cfg.rounds), batch_size=None)

    def training_step(self, batch, batch_idx: int) -> None:
        r = int(batch)
        start = time.perf_counter()
        chosen = np.sort(
            rng(self.seed, "select", r).choice(self.data.clients, self.cfg.per_round, replace=False)
        )
        out = self.clients(r, [int(c) for c in chosen])
        client_s = time.perf_counter() - start
        delta = self.server(r, [o[0] for o in out])
        opt = self.optimizers()
        opt.zero_grad()
        for p, d in zip(self.net.parameters(), delta, strict=True):
            p.grad = d.to(p.device, p.dtype).reshape(p.shape)
        opt.step()
        error = float("nan")
        if out[0][2] is not None and self.meth.kind == "ferret":
            true = torch.cat(
                [torch.stack(b).mean(0).reshape(-1) for b in zip(*(o[2] for o in out), strict=True)]
            ).cpu()
            got = torch.cat([d.reshape(-1).cpu() for d in delta])
            error = float((got - true).norm() / true.norm().clamp_min(1e-30))
        acc, loss = self.evaluate()
        self.rows.append(
            {
                "round": r + 1,
                "accuracy": acc,
                "loss": loss,
                "uplink": float(np.mean([o[1] for o in out])),
                "recon_error": error,
                "client_s": client_s,
                "seconds": time.perf_counter() - start,
            }
        )
        if self.progress is not None:
            self.progress(r + 1, self.rows[-1])

    @torch.no_grad()
    def evaluate(self) -> tuple[float, float]:
        out = self.net(self.x_test)
        return float((out.argmax(1) == self.y_test).float().mean()), float(
            nn.functional.cross_entropy(out, self.y_test)
        )


def run(
    data: FedData,
    meth: Method,
    cfg: Config,
    seed: int,
    codec_cls: type[FerretCodec] = FerretCodec,
    progress: Callable[[int, dict], None] | None = None,
    net: nn.Module | None = None,
    module_cls: type[Federated] | None = None,
    accelerator: str = "cpu",
) -> tuple[list[dict], nn.Module]:
    """One method's run (Lightning): its per-round rows and the final global model. ``net`` defaults to the
    seeded MLP, ``module_cls`` to :class:`Federated` (:class:`~models.ferret.lm.LMFederated` for a causal LM);
    ``accelerator`` is Lightning's (``cpu``, or ``auto`` for a GPU when there is one)."""
    from icml25.training import make_trainer

    if net is None:
        net = mlp(data.x_train.shape[1], cfg.hidden, data.classes, seed_for(seed, "init"))
    module = (module_cls or Federated)(net, data, meth, cfg, seed, codec_cls, progress)
    trainer = make_trainer(
        max_steps=-1, seed=seed_for(seed, "trainer"), max_epochs=1, accelerator=accelerator
    )
    with one_thread():  # tiny tensors: a second thread only spins (models/common/threads.py)
        trainer.fit(module)
    return module.rows, module.net
