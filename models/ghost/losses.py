"""GHOST's losses: the proxy's feature and FGW terms (client side), the topology-consistency criterion and the
retention penalty (server side).

Client, per epoch, with X (real) and X_hat = G(z, y) (generated) paired node by node on the train nodes:

    L_feat = lambda_d KL(softmax(X) || softmax(X_hat)) + (1 - mean_i cos(X_hat_i, X_i))              (batchmean KL)
    L_FGW  = min_T (1 - a) <T, M> + a sum_{i,j,k,l} (C1_ik - C2_jl)^2 T_ij T_kl,  M_ij = ||x_i - x_hat_j||^2,
             T in U(1/n, 1/n), a = 0.5, C1 = real adjacency, C2 = adjacency of the kNN pseudo graph
    L      = L_feat + lambda_f L_FGW

L_FGW is solved by POT's conditional gradient; its gradient is the envelope one, dL/dM = (1 - a) T*, so through
M it reaches only X_hat (C2 comes from a top-k and carries none; X and C1 are data).

Server, for block j = (client k, repeat m) on the pseudo graph G_j = (X_tilde, E):

    e_uv = (h_u W_1) . tanh(h_v W_1),  h = ReLU(conv1(X_tilde)),  W_1 = conv1.lin.weight      (for (u, v) in E)
    L_topo = sum_{(u,v) in E} e_uv^2;  Omega_j = dL_topo/dtheta (at the start of block j);  omega_j = sum_p ||Omega_j[p]||
    L = NLL(GCN(G_j), y_tilde) + lambda_r sum_{i<j} sum_p |Omega_i[p]| (theta_p - theta*_i[p])^2 + lambda_n omega_j

with theta*_i the parameters after block i. omega_j is a number computed once when block j opens, so the
lambda_n term moves the loss value but not its gradient: it cannot change training (in the official code it is a
Python float). L_topo involves conv1 only, so Omega of conv2's parameters is zero and retention pins the first
layer.
"""

from __future__ import annotations

import ot
import torch
from torch import nn
from torch.nn import functional as F

from .nets import GCN


def feature_loss(x_gen: torch.Tensor, x_real: torch.Tensor, lambda_d: float) -> torch.Tensor:
    kl = F.kl_div(F.log_softmax(x_gen, dim=1), F.softmax(x_real, dim=1), reduction="batchmean")
    return lambda_d * kl + (1.0 - F.cosine_similarity(x_gen, x_real, dim=-1).mean())


def fgw_loss(
    c1: torch.Tensor, c2: torch.Tensor, x_real: torch.Tensor, x_gen: torch.Tensor, alpha: float = 0.5
) -> torch.Tensor:
    """Square-loss FGW between (C1, X) and (C2, X_hat) with uniform marginals; differentiable in X_hat only."""
    c1, c2, x_real = c1.detach().double(), c2.detach().double(), x_real.detach().double()
    m = torch.cdist(x_real, x_gen.double(), p=2) ** 2
    n1, n2 = c1.shape[0], c2.shape[0]
    p = torch.full((n1,), 1.0 / n1, dtype=torch.float64)
    q = torch.full((n2,), 1.0 / n2, dtype=torch.float64)
    value = ot.gromov.fused_gromov_wasserstein2(m, c1, c2, p, q, loss_fun="square_loss", alpha=alpha)
    return value.to(x_gen.dtype)


def topology_loss(
    model: GCN, x: torch.Tensor, a_hat: torch.Tensor, edges: torch.Tensor, weights: torch.Tensor
):
    """L_topo = sum over edges (with multiplicity ``weights``) of e_uv^2, vectorised over the edge list."""
    proj = model.hidden(x, a_hat) @ model.conv1.lin.weight  # n x F: h_u W_1
    e = (proj[edges[0]] * torch.tanh(proj[edges[1]])).sum(dim=1)
    return (weights * e.pow(2)).sum()


def criterion(
    model: GCN,
    x: torch.Tensor,
    a_hat: torch.Tensor,
    edges: torch.Tensor,
    weights: torch.Tensor,
    zero_grad: bool,
) -> tuple[dict[str, torch.Tensor], float, float]:
    """Omega (signed gradient of L_topo per parameter), omega = sum_p ||Omega[p]|| and L_topo itself.

    ``zero_grad=False`` reproduces the official code, which calls ``backward`` on top of whatever gradient the
    last optimiser step left, so Omega = grad L_topo + the last NLL step's gradient.
    """
    if zero_grad:
        model.zero_grad(set_to_none=True)
    loss = topology_loss(model, x, a_hat, edges, weights)
    loss.backward()
    omega = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    norm = float(sum(g.norm() for g in omega.values()))
    model.zero_grad(set_to_none=True)
    return omega, norm, float(loss.detach())


def retention_penalty(
    model: nn.Module, omegas: list[dict[str, torch.Tensor]], snapshots: list[dict[str, torch.Tensor]]
) -> torch.Tensor:
    """sum_i sum_p |Omega_i[p]| (theta_p - theta*_i[p])^2 over the earlier blocks i (zero when there are none)."""
    total = torch.zeros(())
    for name, p in model.named_parameters():
        for om, snap in zip(omegas, snapshots, strict=True):
            if name in om and name in snap:
                total = total + (om[name].abs() * (p - snap[name]).pow(2)).sum()
    return total
