"""The federated setting: label-skew Dirichlet partition, per-client splits and the server's test graph.

Dirichlet partition (the official ``dirichlet_partitioner``, re-implemented): repeat until every client holds at
least ``least_samples`` nodes (at most ``max_tries`` attempts):

    for each class k: shuffle the nodes of class k; draw p ~ Dir(alpha 1_K);
        p_j <- p_j [|client j| < N / K]   (a client already holding N/K nodes takes no more)
        p <- p / sum(p); cut the shuffled nodes at floor(cumsum(p) n_k) and hand piece j to client j.

Small alpha concentrates each class on few clients (alpha = 0.05: most clients hold one or two classes).
Where the official code prints "alpha too small, no solution" and carries on, :func:`dirichlet_partition`
raises.

Each client is split at random into train / val / test with sizes int(0.2 n), int(0.4 n) and the rest
(``split_train_val_test_inductive``). The server's test graph is the subgraph of the *global* graph induced on
the union of all clients' test nodes: it keeps cross-client edges that no client sees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .graph import Graph, subgraph

SPLITS = ("train", "val", "test")


class PartitionError(ValueError):
    pass


def dirichlet_partition(
    y: np.ndarray,
    num_clients: int,
    alpha: float,
    least_samples: int,
    rng: np.random.Generator,
    max_tries: int = 10000,
) -> list[np.ndarray]:
    """Client node lists (sorted) of a label-skew Dirichlet partition; raises if none meets the floor."""
    y = np.asarray(y)
    n = len(y)
    if num_clients * least_samples > n:
        raise PartitionError(f"{num_clients} clients x {least_samples} nodes each exceeds the {n} nodes")
    classes = np.unique(y)
    for _ in range(max_tries):
        clients: list[list[int]] = [[] for _ in range(num_clients)]
        for k in classes:
            idx = np.flatnonzero(y == k)
            rng.shuffle(idx)
            p = rng.dirichlet(np.full(num_clients, alpha))
            p = p * np.array([len(c) < n / num_clients for c in clients])
            if p.sum() <= 0:  # every client is full or the draw underflowed: hand the class out uniformly
                p = np.ones(num_clients)
            p = p / p.sum()
            cuts = (np.cumsum(p) * len(idx)).astype(int)[:-1]
            for c, piece in zip(clients, np.split(idx, cuts), strict=True):
                c.extend(piece.tolist())
        if min(len(c) for c in clients) >= least_samples:
            return [np.sort(np.asarray(c, dtype=np.int64)) for c in clients]
    raise PartitionError(
        f"no Dirichlet partition with alpha={alpha} gives every one of {num_clients} clients >= {least_samples} "
        f"nodes after {max_tries} tries"
    )


def split_nodes(n: int, fractions: tuple[float, float, float], rng: np.random.Generator) -> np.ndarray:
    """Split labels (0 train, 1 val, 2 test) for n nodes: int(f_train n) train, int(f_val n) val, rest test."""
    total = sum(fractions)
    n_train = int(fractions[0] / total * n)
    n_val = int(fractions[1] / total * n)
    labels = np.full(n, 2, dtype=np.int64)
    order = rng.permutation(n)
    labels[order[:n_train]] = 0
    labels[order[n_train : n_train + n_val]] = 1
    return labels


@dataclass(frozen=True)
class Partition:
    """Node -> client and node -> split (0 train, 1 val, 2 test) over the whole graph."""

    client: np.ndarray  # N int64
    split: np.ndarray  # N int64
    num_clients: int

    def nodes(self, k: int) -> torch.Tensor:
        return torch.as_tensor(np.flatnonzero(self.client == k), dtype=torch.long)


def make_partition(
    graph: Graph,
    num_clients: int = 10,
    alpha: float = 0.05,
    least_samples: int = 5,
    fractions: tuple[float, float, float] = (0.2, 0.4, 0.4),
    seed: int = 0,
    max_tries: int = 10000,
) -> Partition:
    """The federated split of ``graph``: Dirichlet clients, then a random 20/40/40 split inside each client."""
    rng = np.random.default_rng(seed)
    parts = dirichlet_partition(graph.y.numpy(), num_clients, alpha, least_samples, rng, max_tries)
    client = np.full(graph.num_nodes, -1, dtype=np.int64)
    split = np.full(graph.num_nodes, -1, dtype=np.int64)
    for k, nodes in enumerate(parts):
        client[nodes] = k
        split[nodes] = split_nodes(len(nodes), fractions, rng)
    return Partition(client=client, split=split, num_clients=num_clients)


@dataclass(frozen=True)
class ClientData:
    graph: Graph  # induced subgraph: cross-client edges dropped
    split: torch.Tensor  # per local node: 0 train, 1 val, 2 test
    nodes: torch.Tensor  # global ids of the local nodes

    @property
    def train_mask(self) -> torch.Tensor:
        return self.split == 0


def client_data(graph: Graph, part: Partition, k: int) -> ClientData:
    nodes = part.nodes(k)
    return ClientData(
        graph=subgraph(graph, nodes), split=torch.as_tensor(part.split[nodes.numpy()]), nodes=nodes
    )


def server_test_graph(graph: Graph, part: Partition) -> tuple[Graph, torch.Tensor]:
    """The global subgraph on every client's test nodes (cross-client edges kept) and those nodes' ids."""
    nodes = torch.as_tensor(np.flatnonzero(part.split == 2), dtype=torch.long)
    return subgraph(graph, nodes), nodes


def label_histogram(y: np.ndarray, part: Partition, num_classes: int) -> np.ndarray:
    """K x C counts of each class at each client."""
    h = np.zeros((part.num_clients, num_classes), dtype=np.int64)
    np.add.at(h, (part.client, np.asarray(y)), 1)
    return h
