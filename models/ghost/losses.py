"""GHOST's losses: the proxy's feature and FGW terms (client side), the topology-consistency criterion and the
retention penalty (server side).

Client, per epoch, with X (real) and X_hat = G(z, y) (generated) paired node by node on the train nodes:

    L_feat = lambda_d KL(softmax(X) || softmax(X_hat)) + (1 - mean_i cos(X_hat_i, X_i))              (batchmean KL)
    L_FGW  = min_T (1 - a) <T, M> + a sum_{i,j,k,l} (C1_ik - C2_jl)^2 T_ij T_kl,  M_ij = ||x_i - x_hat_j||^2,
             T in U(1/n, 1/n), a = 0.5, C1 = real adjacency, C2 = the identity (the official code's A_new // 2) or
             the adjacency of the kNN pseudo graph (the ``fgw_structure`` switch)
    L      = L_feat + lambda_f L_FGW

L_FGW is solved by POT's conditional gradient (re-implemented for the n x n uniform case, :func:`fgw_plan`); its
gradient is the envelope one, dL/dM = (1 - a) T*, so through M it reaches only X_hat (C2 comes from a top-k and
carries none; X and C1 are data). The solver stops after
``max_iter`` iterations or when the loss changes by less than ``tol_rel`` (relative): on these 2-60-node problems
some solves need 1,000-3,000 iterations under POT's defaults (1e4, 1e-9) to move the value by < 0.05% (measured),
which made them most of the training time.

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

import numpy as np
import ot
import torch
from torch import nn
from torch.nn import functional as F

from .nets import GCN


def feature_loss(x_gen: torch.Tensor, x_real: torch.Tensor, lambda_d: float) -> torch.Tensor:
    kl = F.kl_div(F.log_softmax(x_gen, dim=1), F.softmax(x_real, dim=1), reduction="batchmean")
    return lambda_d * kl + (1.0 - F.cosine_similarity(x_gen, x_real, dim=-1).mean())


def fgw_plan(
    m: np.ndarray, c1: np.ndarray, c2: np.ndarray, alpha: float, max_iter: int, tol_rel: float
) -> tuple[np.ndarray, float]:
    """The square-loss FGW plan and value for n x n problems with uniform marginals and symmetric C1, C2, by
    POT's conditional gradient (``ot.gromov.fused_gromov_wasserstein``, exact line search) re-implemented for
    this case: starting from T = 1/n^2,

        grad  = (1 - a) M + 2 a (c - C1 T (2 C2)^T),   c_ij = (sum_k C1_ik^2 + sum_l C2_jl^2) / n
        T_lp  = argmin_{T' in U(1/n, 1/n)} <grad, T'>        (a permutation / n: Hungarian algorithm)
        T    <- T + tau (T_lp - T),  tau in [0, 1] minimising the cost, quadratic in tau

    until ``max_iter`` iterations or a relative change of the cost below ``tol_rel``. With uniform square
    marginals the linear program's vertices are permutation matrices / n, so scipy's ``linear_sum_assignment``
    solves it exactly, about 10x faster than a general network simplex call; on problems with one optimum the
    plan and value equal POT's (tested)."""
    from scipy.optimize import linear_sum_assignment

    n = m.shape[0]
    const = ((c1**2).sum(1)[:, None] + (c2**2).sum(1)[None, :]) / n
    h2 = 2.0 * c2
    lin = (1.0 - alpha) * m
    plan = np.full((n, n), 1.0 / n**2)
    tens = const - c1 @ plan @ h2.T
    cost = float((lin * plan).sum() + alpha * (tens * plan).sum())
    for _ in range(max_iter):
        old = cost
        rows, cols = linear_sum_assignment(lin + 2.0 * alpha * tens)
        delta = -plan
        delta[rows, cols] += 1.0 / n
        dot = c1 @ delta @ h2.T
        qa = float(-alpha * (dot * delta).sum())
        qb = float((lin * delta).sum() - 2.0 * alpha * (dot * plan).sum())
        tau = min(1.0, max(0.0, -qb / (2.0 * qa))) if qa > 0 else (1.0 if qa + qb < 0 else 0.0)
        cost += qa * tau**2 + qb * tau
        plan = plan + tau * delta
        tens = tens - tau * dot
        if abs(cost - old) < tol_rel * abs(cost):
            break
    return plan, cost


def fgw_loss(
    c1: torch.Tensor,
    c2: torch.Tensor,
    x_real: torch.Tensor,
    x_gen: torch.Tensor,
    alpha: float = 0.5,
    max_iter: int = 10000,
    tol_rel: float = 1e-9,
) -> torch.Tensor:
    """Square-loss FGW between (C1, X) and (C2, X_hat) with uniform marginals; differentiable in X_hat only.

    The plan T* and value v come from :func:`fgw_plan` when both graphs have n nodes (always here: the generated
    train rows are paired with the real ones), else from POT's ``ot.gromov.fused_gromov_wasserstein``; the loss is

        L = (1 - a) <T*, M(X_hat)> + (v - (1 - a) <T*, M>)

    whose value is v and whose gradient is the envelope one, (1 - a) T* through M, as POT's
    ``fused_gromov_wasserstein2`` sets it. C1 and C2 are symmetric here (undirected graphs, the identity)."""
    x_real = x_real.detach().double()
    m = torch.cdist(x_real, x_gen.double(), p=2) ** 2
    m_np = m.detach().numpy()
    a_np, b_np = c1.detach().double().numpy(), c2.detach().double().numpy()
    n1, n2 = m_np.shape
    if n1 == n2:
        plan, value = fgw_plan(m_np, a_np, b_np, alpha, max_iter, tol_rel)
    else:
        plan, log = ot.gromov.fused_gromov_wasserstein(
            m_np,
            a_np,
            b_np,
            np.full(n1, 1.0 / n1),
            np.full(n2, 1.0 / n2),
            loss_fun="square_loss",
            symmetric=True,
            alpha=alpha,
            log=True,
            max_iter=max_iter,
            tol_rel=tol_rel,
            tol_abs=0.0,
        )
        value = float(log["fgw_dist"])
    t = torch.as_tensor(plan)
    lin = (1.0 - alpha) * (t * m).sum()
    return (lin + (value - float(lin.detach()))).to(x_gen.dtype)


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


class Retention:
    """The retention penalty of :func:`retention_penalty`, with the earlier blocks' |Omega_i| and theta*_i
    stacked per parameter (one [B, ...] tensor each), so a step costs a few tensor operations per parameter
    instead of a Python loop over the B earlier blocks:

        penalty(theta) = sum_p sum_i |Omega_i[p]| (theta_p - theta*_i[p])^2.
    """

    def __init__(self) -> None:
        self.blocks = 0
        self.weights: dict[str, torch.Tensor] = {}
        self.anchors: dict[str, torch.Tensor] = {}

    def __len__(self) -> int:
        return self.blocks

    def append(self, omega: dict[str, torch.Tensor], snapshot: dict[str, torch.Tensor]) -> None:
        """Add block i's Omega_i and its snapshot theta*_i. Only parameters some Omega covers are tracked (a
        parameter first covered later gets weight 0 for the earlier blocks, where its term was zero)."""
        for name in omega:
            if name not in self.weights:
                zero = torch.zeros((self.blocks, *snapshot[name].shape))
                self.weights[name], self.anchors[name] = zero, zero.clone()
        for name in self.weights:
            w = omega[name].detach().abs() if name in omega else torch.zeros_like(snapshot[name])
            self.weights[name] = torch.cat([self.weights[name], w[None]])
            self.anchors[name] = torch.cat([self.anchors[name], snapshot[name].detach()[None]])
        self.blocks += 1

    def penalty(self, model: nn.Module) -> torch.Tensor:
        total = torch.zeros(())
        for name, p in model.named_parameters():
            if name in self.weights:
                total = total + (self.weights[name] * (p[None] - self.anchors[name]).pow(2)).sum()
        return total
