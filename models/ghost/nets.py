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


class GeneratorBank(nn.Module):
    """B generators of one shape trained side by side as one batched network (the clients' proxies): every
    parameter of :class:`Generator` stacked over a leading axis, each layer a batched matrix product

        H_b <- Dropout(Tanh(H_b W_b^T + c_b)),   b = 1..B,

    so that one step costs a handful of tensor operations instead of B module calls. Generator b sees only its
    own rows and parameters, so each gets exactly its own gradient (and Adam, element-wise, its own update).
    :meth:`generators` returns them as separate :class:`Generator` modules."""

    def __init__(self, generators: list[Generator]):
        super().__init__()
        g0 = generators[0]
        self.noise_dim, self.dropout = g0.noise_dim, g0.body[2].p
        self.n_classes, self.n_features = g0.emb.num_embeddings, g0.out.out_features
        stack = {k: torch.stack([g.state_dict()[k] for g in generators]) for k in g0.state_dict()}
        self.emb = nn.Parameter(stack["emb.weight"])  # B x C x C
        linears = [f"body.{i}" for i in (0, 3, 6)] + ["out"]
        self.weights = nn.ParameterList([nn.Parameter(stack[f"{n}.weight"]) for n in linears])
        self.biases = nn.ParameterList([nn.Parameter(stack[f"{n}.bias"]) for n in linears])
        self.names = linears

    def __len__(self) -> int:
        return self.emb.shape[0]

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``z``: B x n x d_z noise, ``y``: B x n labels -> B x n x F features."""
        rows = torch.arange(len(self))[:, None].expand_as(y)
        h = torch.cat([self.emb[rows, y], z], dim=-1)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.baddbmm(b[:, None, :], h, w.transpose(1, 2))
            if i < last:
                h = F.dropout(torch.tanh(h), p=self.dropout, training=self.training)
        return h

    def sample(self, y: torch.Tensor) -> torch.Tensor:
        return self(torch.randn(*y.shape, self.noise_dim), y)

    def generators(self) -> list[Generator]:
        out = []
        for b in range(len(self)):
            g = Generator(self.n_classes, self.n_features, self.noise_dim, self.dropout)
            state = {"emb.weight": self.emb[b]}
            for n, w, c in zip(self.names, self.weights, self.biases, strict=True):
                state[f"{n}.weight"], state[f"{n}.bias"] = w[b], c[b]
            g.load_state_dict({k: v.detach().clone() for k, v in state.items()})
            out.append(g)
        return out
