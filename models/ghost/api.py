"""GHOST's Python API: partition any PyG-style graph, train GHOST and the baselines, evaluate.

    from models.ghost.api import GhostConfig, partition_graph, train_ghost, evaluate
    fed = partition_graph(edge_index, x, y, num_clients=10, alpha=0.05, seed=0)
    result = train_ghost(fed, GhostConfig(), seed=0)
    evaluate(result.model, fed)          # accuracy on the server's test graph

The paper's method is the default; ``GhostConfig(faithful_to_code=True)`` switches on the official code's
behaviour in one go: the identity C2 of the client FGW term (``A_new // 2``), self-loops counted twice in the
pseudo graphs, the effective weights lambda_r * 1e-11 (and lambda_n * 1e-11), stale gradients inside the
criterion, and server labels balanced over *all* classes (also those a client never saw). The paper's reading:
C2 = the kNN pseudo graph's adjacency, one self-loop, lambda_r as stated, Omega from the topology loss alone, and
labels drawn in each client's own label proportions. In both modes the lambda_n term is a constant (see
:mod:`.losses`).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from icml25 import random

from .config import GhostConfig
from .graph import Graph, dense_adjacency, make_graph, normalized_adjacency, subgraph
from .nets import GCN, Generator
from .partition import ClientData, Partition, client_data, label_histogram, make_partition, server_test_graph


@dataclass(frozen=True)
class FederatedGraph:
    graph: Graph
    partition: Partition
    clients: list[ClientData]
    test_graph: Graph  # the server's: global subgraph on every client's test nodes
    test_nodes: torch.Tensor

    @property
    def num_classes(self) -> int:
        return self.graph.num_classes

    def histograms(self, split: int | None = 0) -> np.ndarray:
        """K x C label counts (of the train nodes by default, of all nodes with ``split=None``)."""
        part = self.partition
        if split is None:
            return label_histogram(self.graph.y.numpy(), part, self.num_classes)
        keep = part.split == split
        sub = Partition(client=part.client[keep], split=part.split[keep], num_clients=part.num_clients)
        return label_histogram(self.graph.y.numpy()[keep], sub, self.num_classes)


def federate(graph: Graph, part: Partition) -> FederatedGraph:
    test_graph, test_nodes = server_test_graph(graph, part)
    clients = [client_data(graph, part, k) for k in range(part.num_clients)]
    return FederatedGraph(graph, part, clients, test_graph, test_nodes)


def partition_graph(
    edge_index, x, y, num_clients: int = 10, alpha: float = 0.05, least_samples: int = 5, seed: int = 0
) -> FederatedGraph:
    """Label-skew Dirichlet clients of any PyG-style graph (``edge_index`` 2 x E, ``x`` N x F, ``y`` N)."""
    graph = make_graph(edge_index, x, y)
    return federate(graph, make_partition(graph, num_clients, alpha, least_samples, seed=seed))


def _task(graph: Graph, train: torch.Tensor):
    from .lit import GraphTask

    return GraphTask(graph.x, normalized_adjacency(graph.edge_index, graph.num_nodes), graph.y, train)


def train_proxies(fed: FederatedGraph, cfg: GhostConfig, seed: int) -> tuple[list[Generator], list[dict]]:
    """Each client fits its generator G_k to its own graph (T_L full-batch epochs); returns them and the loss
    history (mean over clients per epoch)."""
    from icml25.training import make_trainer

    from .lit import ProxyGenerators, ProxyTarget

    torch.manual_seed(seed)
    gens = [
        Generator(fed.num_classes, fed.graph.num_features, cfg.noise_dim, cfg.gen_dropout)
        for _ in fed.clients
    ]
    targets = []
    for c in fed.clients:
        tr = c.train_mask
        a = dense_adjacency(c.graph.edge_index, c.graph.num_nodes)
        targets.append(ProxyTarget(y=c.graph.y, train=tr, x_train=c.graph.x[tr], a_train=a[tr][:, tr]))
    module = ProxyGenerators(gens, targets, cfg)
    make_trainer(max_steps=cfg.client_epochs, seed=seed).fit(module)
    return list(module.generators), module.history


@dataclass
class GhostResult:
    generators: list[Generator]
    model: GCN
    order: list[int]
    client_history: list[dict] = field(default_factory=list)
    server_history: list[dict] = field(default_factory=list)


def train_global(
    fed: FederatedGraph, generators: list[Generator], cfg: GhostConfig, seed: int, retention: bool = True
) -> tuple[GCN, list[int], list[dict]]:
    """The server's one-shot integration: a fresh GCN trained on proxy graphs only, client by client."""
    from icml25.training import make_trainer

    from .lit import GhostServer

    torch.manual_seed(random.seed_for(seed, "server"))
    model = GCN(fed.graph.num_features, cfg.hidden, fed.num_classes, cfg.dropout)
    order = torch.randperm(len(fed.clients)).tolist()
    sizes = [c.graph.num_nodes for c in fed.clients]
    hist = [torch.as_tensor(h) for h in fed.histograms(split=0)]
    for g in generators:
        g.requires_grad_(False)
    module = GhostServer(model, generators, order, sizes, hist, cfg, retention=retention)
    steps = len(order) * cfg.repeats * cfg.server_steps
    make_trainer(max_steps=steps, seed=random.seed_for(seed, "server")).fit(module)
    return model, order, module.history


def train_ghost(fed: FederatedGraph, cfg: GhostConfig, seed: int = 0, retention: bool = True) -> GhostResult:
    gens, client_hist = train_proxies(fed, cfg, seed)
    model, order, server_hist = train_global(fed, gens, cfg, seed, retention)
    return GhostResult(gens, model, order, client_hist, server_hist)


def train_local(fed: FederatedGraph, cfg: GhostConfig, seed: int) -> list[GCN]:
    """One GCN per client from one common initialisation, trained on its own subgraph's train nodes."""
    from icml25.training import make_trainer

    from .lit import GCNEnsemble

    torch.manual_seed(random.seed_for(seed, "local_init"))
    init = GCN(fed.graph.num_features, cfg.hidden, fed.num_classes, cfg.dropout)
    models = [copy.deepcopy(init) for _ in fed.clients]
    tasks = [_task(c.graph, c.train_mask) for c in fed.clients]
    make_trainer(max_steps=cfg.local_epochs, seed=seed).fit(
        GCNEnsemble(models, tasks, cfg.lr, cfg.weight_decay, cfg.local_epochs)
    )
    return models


def fedavg(models: list[GCN], weights: list[float]) -> GCN:
    """One-shot FedAvg: theta = sum_k (n_k / n) theta_k."""
    w = torch.tensor(weights, dtype=torch.float32)
    w = w / w.sum()
    avg = copy.deepcopy(models[0])
    states = [m.state_dict() for m in models]
    avg.load_state_dict({k: sum(wi * s[k] for wi, s in zip(w, states, strict=True)) for k in states[0]})
    return avg


def train_central(fed: FederatedGraph, cfg: GhostConfig, seed: int) -> GCN:
    """The upper bound: one GCN on the global graph without the test nodes (cross-client edges included),
    trained on every client's train nodes."""
    from icml25.training import make_trainer

    from .lit import GCNEnsemble

    torch.manual_seed(random.seed_for(seed, "central_init"))
    keep = torch.as_tensor(np.flatnonzero(fed.partition.split != 2), dtype=torch.long)
    g = subgraph(fed.graph, keep)
    train = torch.as_tensor(fed.partition.split[keep.numpy()] == 0)
    model = GCN(fed.graph.num_features, cfg.hidden, fed.num_classes, cfg.dropout)
    make_trainer(max_steps=cfg.central_epochs, seed=seed).fit(
        GCNEnsemble([model], [_task(g, train)], cfg.lr, cfg.weight_decay, cfg.central_epochs)
    )
    return model


@torch.no_grad()
def predict(model: GCN, graph: Graph) -> torch.Tensor:
    model.eval()
    return model(graph.x, normalized_adjacency(graph.edge_index, graph.num_nodes)).argmax(dim=1)


def evaluate(model: GCN, fed: FederatedGraph) -> float:
    """Accuracy on every node of the server's test graph."""
    return float((predict(model, fed.test_graph) == fed.test_graph.y).float().mean())


def per_client_accuracy(model: GCN, fed: FederatedGraph) -> list[float]:
    """Accuracy on each client's test nodes, predicted inside the server's test graph (NaN: no test nodes)."""
    correct = (predict(model, fed.test_graph) == fed.test_graph.y).numpy()
    owner = fed.partition.client[fed.test_nodes.numpy()]
    return [
        float(correct[owner == k].mean()) if (owner == k).any() else float("nan")
        for k in range(len(fed.clients))
    ]


@torch.no_grad()
def proxy_fidelity(
    generators: list[Generator], fed: FederatedGraph, samples: int = 200, min_train: int = 5, seed: int = 0
) -> list[dict]:
    """For each (client k, class c) with >= ``min_train`` train nodes of c at k: is the mean of ``samples``
    generated class-c vectors closer in cosine to k's real class-c train centroid than to every other class's
    centroid (k's own, or the global train centroid where k has no train node of that class)?"""
    x, y, part = fed.graph.x, fed.graph.y, fed.partition
    train = torch.as_tensor(part.split == 0)
    C = fed.num_classes
    global_c = torch.stack(
        [
            x[train & (y == c)].mean(0) if (train & (y == c)).any() else torch.zeros(x.shape[1])
            for c in range(C)
        ]
    )
    gen = torch.Generator().manual_seed(seed)
    # the generators' dropout draws from the global RNG: seed it here and restore it afterwards
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        rows = []
        for k, g in enumerate(generators):
            mine = train & torch.as_tensor(part.client == k)
            counts = torch.bincount(y[mine], minlength=C)
            cents = torch.stack(
                [x[mine & (y == c)].mean(0) if counts[c] > 0 else global_c[c] for c in range(C)]
            )
            g.train()  # as the server samples them: the official code never calls eval() on a generator
            for c in range(C):
                if counts[c] < min_train:
                    continue
                mean = g.sample(torch.full((samples,), c, dtype=torch.long), generator=gen).mean(0)
                cos = torch.nn.functional.cosine_similarity(mean[None], cents, dim=1)
                others = torch.cat([cos[:c], cos[c + 1 :]])
                rows.append(
                    {
                        "client": k,
                        "class": c,
                        "train_nodes": int(counts[c]),
                        "cos_own": float(cos[c]),
                        "cos_best_other": float(others.max()) if len(others) else float("-inf"),
                        "closest": bool((cos[c] > others).all()),
                    }
                )
    return rows


def config_dict(cfg: GhostConfig) -> dict:
    return asdict(cfg)
