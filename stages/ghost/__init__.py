"""GHOST: one-shot federated graph learning with proxy models, the controlled CPU reproduction.

Qian, Wan, Huang, Zhang, Wu, Du, Ye. "GHOST: Generalizable One-Shot Federated Graph Learning with
Proxy-Based Topology Knowledge Retention". ICML 2025. https://github.com/JiaruQian/GHOST

- Clients (label-skew Dirichlet partition, alpha = 0.05, 10 clients) each fit a class-conditional generator
  G_k(z, y) to their graph: L = lambda_d KL(softmax X || softmax X_hat) + 1 - mean cos(X_hat, X)
  + lambda_f FGW_{0.5}((A, X), (A_kNN(X_hat), X_hat)), and upload only G_k (one round).
- The server trains a fresh 2-layer GCN on proxy graphs only, client by client (M = 3 draws x T_G = 5 steps):
  NLL + lambda_r sum_{i<j} sum_p |Omega_i| (theta - theta*_i)^2, Omega_i = d/dtheta sum_{(u,v)} e_uv^2 with
  e_uv = (h_u W_1) . tanh(h_v W_1) (topology-consistency criterion), theta*_i the parameters after block i.
- Evaluation: accuracy of the global GCN on the global subgraph of all clients' test nodes.

Graphs: a stochastic block model with noisy Gaussian features (drawn afresh per run) and a k-NN graph over
scikit-learn's bundled digit images (real features, a fresh subsample per run); Cora/CiteSeer/PubMed from local
Planetoid raw files in the paper profile.

Stages (one module each): prepare (every graph's draw and Dirichlet partition per run) -> validate (GX: the
graphs and the partitions) -> train (Lightning: the proxies, GHOST and its one-switch-at-a-time ablation, local
GCNs, one-shot FedAvg, centralised GCN; safetensors; models/ghost/experiment.py `train_run`) -> evaluate
(accuracies, per-client accuracies, proxy fidelity, and every summary the report shows; `evaluate_run`,
`summarize`) -> report (claims in report.py, prose in report.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from icml25.registry import Paper
from models.ghost.config import GhostConfig

GRAPHS = ("sbm", "digits", "planetoid")


@dataclass(frozen=True)
class Prepare:
    graphs: tuple[str, ...] = field(default=("sbm", "digits"), metadata={"choices": GRAPHS})
    # sbm: a fresh draw per run
    num_nodes: int = field(default=600, metadata={"ge": 20})
    num_classes: int = field(default=4, metadata={"ge": 2})
    num_features: int = field(default=32, metadata={"ge": 1})
    p_in: float = field(default=0.05, metadata={"ge": 0.0, "le": 1.0})
    p_out: float = field(default=0.01, metadata={"ge": 0.0, "le": 1.0})
    noise: float = field(default=4.0, metadata={"ge": 0.0})
    # digits: sklearn's bundled 8x8 images, a fresh subsample per run, symmetrised k-NN graph
    digits_nodes: int = field(default=600, metadata={"ge": 20})
    digits_knn: int = field(default=5, metadata={"ge": 1})
    # planetoid: the same graph every run
    planetoid_root: str = "planetoid"  # relative to data/ghost/input/
    planetoid_name: Literal["Cora", "CiteSeer", "PubMed"] = "Cora"
    num_clients: int = field(default=10, metadata={"ge": 2})
    alpha: float = field(default=0.05, metadata={"gt": 0.0})
    least_samples: int = field(default=5, metadata={"ge": 1})
    runs: int = field(default=10, metadata={"ge": 1})


@dataclass(frozen=True)
class Evaluate:
    fidelity_samples: int = field(default=200, metadata={"ge": 1})
    fidelity_min_train: int = field(default=5, metadata={"ge": 1})


PAPER = Paper(
    slug="ghost",
    citation="Qian, Wan, Huang, Zhang, Wu, Du, Ye. *GHOST: Generalizable One-Shot Federated Graph Learning with "
    "Proxy-Based Topology Knowledge Retention*. ICML 2025.",
    url="https://github.com/JiaruQian/GHOST",
    schema={"prepare": Prepare, "train": GhostConfig, "evaluate": Evaluate},
)
