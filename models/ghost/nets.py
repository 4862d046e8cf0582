"""The networks: a 2-layer GCN (the global and the baselines' model) and the class-conditional generator.

GCN (``backbone/GCN.py``): H = ReLU(A_hat X W_1^T + b_1), dropout, log_softmax(A_hat H W_2^T + b_2); each layer
is a ``GCNConv`` (a bias-free linear map ``lin`` whose weight is [out, in], glorot-initialised, then propagation
and a bias), written here with a sparse A_hat so that no torch_geometric is needed at run time.

Generator (the proxy model, ``utils.Generator``): G(z, y) = MLP([Emb_C(y), z]) with
Linear(C+d_z, 64)-Tanh-Dropout, Linear(64, 128)-Tanh-Dropout, Linear(128, 256)-Tanh-Dropout, Linear(256, F);
the label embedding has dimension C.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class GCNLayer(nn.Module):
    """out = A_hat (x W^T) + b, parameter layout of PyG's ``GCNConv`` (``lin.weight``, ``bias``)."""

    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)
        self.bias = nn.Parameter(torch.zeros(d_out))
        nn.init.xavier_uniform_(self.lin.weight)

    def forward(self, x: torch.Tensor, a_hat: torch.Tensor) -> torch.Tensor:
        return torch.sparse.mm(a_hat, self.lin(x)) + self.bias


class GCN(nn.Module):
    def __init__(self, d_in: int, d_hidden: int, n_classes: int, dropout: float = 0.3):
        super().__init__()
        self.conv1 = GCNLayer(d_in, d_hidden)
        self.conv2 = GCNLayer(d_hidden, n_classes)
        self.dropout = dropout

    def hidden(self, x: torch.Tensor, a_hat: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv1(x, a_hat))

    def forward(self, x: torch.Tensor, a_hat: torch.Tensor) -> torch.Tensor:
        h = F.dropout(self.hidden(x, a_hat), p=self.dropout, training=self.training)
        return F.log_softmax(self.conv2(h, a_hat), dim=1)


class Generator(nn.Module):
    def __init__(self, n_classes: int, n_features: int, noise_dim: int = 64, dropout: float = 0.2):
        super().__init__()
        self.noise_dim = noise_dim
        self.emb = nn.Embedding(n_classes, n_classes)
        dims = [n_classes + noise_dim, 64, 128, 256]
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:], strict=True):
            layers += [nn.Linear(a, b), nn.Tanh(), nn.Dropout(dropout)]
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(256, n_features)

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(torch.cat([self.emb(y), z], dim=-1)))

    def sample(self, y: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        z = torch.randn(len(y), self.noise_dim, generator=generator)
        return self(z, y)
