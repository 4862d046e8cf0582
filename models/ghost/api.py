"""GHOST's Python API: partition any PyG-style graph, train GHOST and the baselines, evaluate.

    from models.ghost.api import GhostConfig, partition_graph, train_ghost, evaluate
    fed = partition_graph(edge_index, x, y, num_clients=10, alpha=0.05, seed=0)
    result = train_ghost(fed, GhostConfig(), seed=0)
    evaluate(result.model, fed)          # accuracy on the server's test graph

``GhostConfig()`` is the official code's behaviour; each of the five points where the code and the older
"paper reading" differ is its own switch (:mod:`.config`): ``fgw_structure`` (C2 of the client FGW term: the
identity left by ``A_new // 2``, or the kNN pseudo graph), ``self_loop_weight`` (2 in the code's pseudo graphs,
or 1), ``r_scale``/``n_scale`` (the effective lambda_r = lambda_r * 1e-11, or lambda_r as given),
``stale_omega`` (the criterion on top of the last step's gradient, or the topology loss alone) and
``server_labels`` (balanced over all C classes, or each client's train-label proportions, which needs the
histograms on the server). In every setting the lambda_n term is a constant (see :mod:`.losses`).

What the server reads from each client: its generator G_k and its node count n_k (the number of proxy nodes
the official code draws for it); with ``server_labels = client_proportions`` also its train-label histogram.
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


def train_proxy_sets(
    fed: FederatedGraph, cfg: GhostConfig, seed: int, structures: tuple[str, ...] = ("identity",)
) -> tuple[dict[str, list[Generator]], dict[str, list[dict]]]:
    """Each client fits its generator G_k to its own graph (T_L full-batch epochs), once per FGW structure in
    ``structures``, all in one fit; every set starts from the same initial generators. Returns the generators
    and the loss history (mean over clients per epoch) by structure."""
    from icml25.training import make_trainer

    from .lit import ProxyGenerators, ProxyTarget

    torch.manual_seed(seed)
    init = [
        Generator(fed.num_classes, fed.graph.num_features, cfg.noise_dim, cfg.gen_dropout)
        for _ in fed.clients
    ]
    gens, targets = [], []
    for s in structures:
        for g, c in zip(init, fed.clients, strict=True):
            tr = c.train_mask
            a = dense_adjacency(c.graph.edge_index, c.graph.num_nodes)
            gens.append(copy.deepcopy(g))
            targets.append(
                ProxyTarget(y=c.graph.y, train=tr, x_train=c.graph.x[tr], a_train=a[tr][:, tr], structure=s)
            )
    module = ProxyGenerators(gens, targets, cfg)
    make_trainer(max_steps=cfg.client_epochs, seed=seed).fit(module)
    K = len(fed.clients)
    trained = module.generators()
    out = {s: trained[i * K : (i + 1) * K] for i, s in enumerate(structures)}
    history = {s: [h[s] for h in module.history] for s in structures}
    return out, history


def train_proxies(fed: FederatedGraph, cfg: GhostConfig, seed: int) -> tuple[list[Generator], list[dict]]:
    """The generators for ``cfg.fgw_structure`` and their loss history (mean over clients per epoch)."""
    gens, hist = train_proxy_sets(fed, cfg, seed, (cfg.fgw_structure,))
    return gens[cfg.fgw_structure], hist[cfg.fgw_structure]


@dataclass
class GhostResult:
    generators: list[Generator]
    model: GCN
    order: list[int]
    client_history: list[dict] = field(default_factory=list)
    server_history: list[dict] = field(default_factory=list)


def train_servers(
    fed: FederatedGraph, generators: dict[str, list[Generator]], cfgs: dict[str, GhostConfig], seed: int
) -> tuple[dict[str, GCN], list[int], dict[str, list[dict]]]:
    """The server's one-shot integration for every config in ``cfgs`` (by name) at once: each a fresh GCN from
    the same initialisation, trained on proxy graphs only, client by client in one shared random order, drawing
    from ``generators[cfg.fgw_structure]``. Returns the models, the order and each model's step history."""
    from icml25.training import make_trainer

    from .lit import GhostServers, ServerVariant

    torch.manual_seed(random.seed_for(seed, "server"))
    first = GCN(fed.graph.num_features, next(iter(cfgs.values())).hidden, fed.num_classes, 0.0)
    order = torch.randperm(len(fed.clients)).tolist()
    variants = {}
    for name, cfg in cfgs.items():
        model = GCN(fed.graph.num_features, cfg.hidden, fed.num_classes, cfg.dropout)
        model.load_state_dict(first.state_dict())
        gens = generators[cfg.fgw_structure]
        for g in gens:
            g.requires_grad_(False)
        variants[name] = ServerVariant(cfg, model, gens)
    sizes = [c.graph.num_nodes for c in fed.clients]
    hist = [torch.as_tensor(h) for h in fed.histograms(split=0)]
    module = GhostServers(variants, order, sizes, hist, sample_seed=random.seed_for(seed, "server_draws"))
    make_trainer(max_steps=module.total_steps, seed=random.seed_for(seed, "server")).fit(module)
    return {n: v.model for n, v in variants.items()}, order, module.history


def train_global(
    fed: FederatedGraph, generators: list[Generator], cfg: GhostConfig, seed: int
) -> tuple[GCN, list[int], list[dict]]:
    """One server model (see :func:`train_servers`)."""
    models, order, hist = train_servers(fed, {cfg.fgw_structure: generators}, {"ghost": cfg}, seed)
    return models["ghost"], order, hist["ghost"]


def train_ghost(fed: FederatedGraph, cfg: GhostConfig, seed: int = 0) -> GhostResult:
    gens, client_hist = train_proxies(fed, cfg, seed)
    model, order, server_hist = train_global(fed, gens, cfg, seed)
    return GhostResult(gens, model, order, client_hist, server_hist)


def train_baselines(fed: FederatedGraph, cfg: GhostConfig, seed: int) -> tuple[list[GCN], GCN]:
    """In one fit: one GCN per client from one common initialisation, trained on its own subgraph's train nodes
    (``local_epochs``), and the upper bound, one GCN on the global graph without the test nodes (cross-client
    edges included) trained on every client's train nodes (``central_epochs``)."""
    from icml25.training import make_trainer

    from .lit import GCNEnsemble

    torch.manual_seed(random.seed_for(seed, "local_init"))
    init = GCN(fed.graph.num_features, cfg.hidden, fed.num_classes, cfg.dropout)
    local = [copy.deepcopy(init) for _ in fed.clients]
    tasks = [_task(c.graph, c.train_mask) for c in fed.clients]
    torch.manual_seed(random.seed_for(seed, "central_init"))
    central = GCN(fed.graph.num_features, cfg.hidden, fed.num_classes, cfg.dropout)
    keep = torch.as_tensor(np.flatnonzero(fed.partition.split != 2), dtype=torch.long)
    g = subgraph(fed.graph, keep)
    train = torch.as_tensor(fed.partition.split[keep.numpy()] == 0)
    epochs = [cfg.local_epochs] * len(local) + [cfg.central_epochs]
    make_trainer(max_steps=max(epochs), seed=seed).fit(
        GCNEnsemble(local + [central], tasks + [_task(g, train)], cfg.lr, cfg.weight_decay, epochs)
    )
    return local, central


def fedavg(models: list[GCN], weights: list[float]) -> GCN:
    """One-shot FedAvg: theta = sum_k (n_k / n) theta_k."""
    w = torch.tensor(weights, dtype=torch.float32)
    w = w / w.sum()
    avg = copy.deepcopy(models[0])
    states = [m.state_dict() for m in models]
    avg.load_state_dict({k: sum(wi * s[k] for wi, s in zip(w, states, strict=True)) for k in states[0]})
    return avg


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
    """For each (client k, class c) with >= ``min_train`` train nodes of c at k, with m the mean of ``samples``
    generated class-c vectors of G_k and mu_j k's real class-j train centroid (the global train centroid where k
    has no train node of class j):

        margin(k, c) = cos(m, mu_c) - max_{j != c} cos(m, mu_j)

    (positive: the proxy's class-c mean is closer to the right class than to any other; ``closest`` says so)."""
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
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
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
                        "cos_best_other": float(others.max()),
                        "margin": float(cos[c] - others.max()),
                        "closest": bool((cos[c] > others).all()),
                    }
                )
    return rows


def config_dict(cfg: GhostConfig) -> dict:
    return asdict(cfg)
