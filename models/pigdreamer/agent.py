"""Recurrent PPO-Lagrangian agents with asymmetric critics and privileged alignment, stacked: K agents (each its
own weights, environments, random streams and Lagrange multiplier) trained in one module.

Every agent has the same parts (H = ``hidden``):

* history encoder (the actor's, the naive world model's latent s-): a GRU over x_t = [o_t, onehot(a_{t-1})],
  h_t = GRU(x_t, h_{t-1}), reset at each episode's start;
* actor pi(a | h_t) = softmax(MLP(h_t)): the history only (``actor_map`` is a stub switch that adds the map to
  the encoder's input, to show that the leakage check catches it);
* oracle encoder e_t = MLP([o_t, m * i_t]) of the observation and the privileged hazard map i_t (s+ and the
  oracle posterior s* of the paper), with m = 1 for the privileged variants and m = 0 otherwise;
* reward and cost critics V_r, V_c = MLP([h_t, e_t]) (the paper's critics on [s-, s+]);
* alignment (variant C): L_align = ||P h_t - sg(e_t)||^2 / H, a linear projection P of the actor's history state
  pulled toward the oracle's (the deterministic analogue of PIGDreamer's L_rep(s*, s-); MSE has no KL balance).

Variants: A (critics on the history: m = 0, the SafeDreamer analogue), B (m = 1), C (m = 1 + alignment), and
the ablations U (C with the map zeroed) and N (C with lambda held at 0: unconstrained PPO).

PPO-Lagrangian, per agent: GAE(gamma, gae_lambda) advantages A_r, A_c and targets R = A + V for reward and cost;
the policy's advantage (A_r - lambda A_c) / (1 + lambda), normalised over the rollout; the loss

    L = -E[min(rho A, clip(rho, 1 - eps, 1 + eps) A)] + c_v E[(V_r - R_r)^2 + (V_c - R_c)^2] / 2
        - c_H E[H(pi)] + w_align L_align,

with rho = pi / pi_old and truncated BPTT over each rollout; after each rollout the multiplier moves on the mean
cost J_c of the episodes finished in it: lambda <- max(0, lambda + eta (J_c - d)).

The K agents' weights are stacked along a leading axis and every layer is a batched matmul, so each agent's
gradient involves only its own slice (the loss is a sum over agents; the gradient norm is clipped per agent and
Adam is elementwise): an agent trained alone follows the same computation as in a stack.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from .env import HiddenHazard

ACTIONS = 4
VARIANTS = {  # variant -> (critics see the map, alignment on, Lagrangian on)
    "A": (False, False, True),
    "B": (True, False, True),
    "C": (True, True, True),
    "U": (False, True, True),
    "N": (True, True, False),
}
VARIANT_NAMES = {
    "A": "A: critics on the history (SafeDreamer analogue)",
    "B": "B: asymmetric critics (history + map)",
    "C": "C: B + privileged alignment (PIGDreamer analogue)",
    "U": "U: C with the map zeroed (unprivileged ablation)",
    "N": "N: C with lambda held at 0 (unconstrained)",
}


@dataclass(frozen=True)
class EnvConfig:
    size: int = 7
    horizon: int = 40
    hazards: int = 5
    visibility: float = 0.25
    step_penalty: float = 0.01
    frame: str = "egocentric"  # the privileged map's frame (models/pigdreamer/env.py)

    def make(self, n: int, seed: int) -> HiddenHazard:
        return HiddenHazard(n=n, seed=seed, **asdict(self))


@dataclass(frozen=True)
class PPOConfig:
    envs: int = 32  # environments per agent
    rollout: int = 40  # steps per environment per update (the BPTT length)
    epochs: int = 4
    minibatches: int = 4  # over environments
    lr: float = 1e-3
    anneal_lr: bool = False  # lr decays linearly to 0 over the updates (CleanRL's PPO option)
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    max_grad_norm: float = 0.5
    hidden: int = 64
    cost_limit: float = 0.5  # d, per episode
    lagrange_lr: float = 0.05  # eta
    lagrange_init: float = 0.0
    align_weight: float = 1.0  # w_align of variant C (and U, N)


@dataclass(frozen=True)
class AgentSpec:
    variant: str
    seed: int
    actor_map: bool = False  # stub: the actor's encoder also reads the map (leaks privileged information)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}: one of {', '.join(VARIANTS)}")

    @property
    def privileged(self) -> bool:
        return VARIANTS[self.variant][0]

    @property
    def aligned(self) -> bool:
        return VARIANTS[self.variant][1]

    @property
    def lagrangian(self) -> bool:
        return VARIANTS[self.variant][2]


class StackedLinear(nn.Module):
    """K independent affine maps x_k W_k + b_k, x (K, ..., fan_in); U(-s/sqrt(fan_in), s/sqrt(fan_in)) init from
    each agent's own generator."""

    def __init__(self, gens: list[torch.Generator], fan_in: int, fan_out: int, scale: float = 1.0):
        super().__init__()
        bound = scale / math.sqrt(fan_in)
        self.weight = nn.Parameter(
            torch.stack([(torch.rand(fan_in, fan_out, generator=g) * 2 - 1) * bound for g in gens])
        )
        self.bias = nn.Parameter(torch.zeros(len(gens), 1, fan_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(shape[0], -1, shape[-1])
        return torch.baddbmm(self.bias, flat, self.weight).reshape(*shape[:-1], -1)


def mlp(gens: list[torch.Generator], sizes: list[int], last_scale: float = 1.0) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=False)):
        last = i == len(sizes) - 2
        layers.append(StackedLinear(gens, a, b, last_scale if last else math.sqrt(2)))
        if not last:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


class StackedAgents(nn.Module):
    """K agents' networks (module docstring). Tensors are laid out (time, agent, environment, feature)."""

    def __init__(self, specs: list[AgentSpec], obs_dim: int, map_dim: int, hidden: int, align_weight: float):
        super().__init__()
        self.specs, self.hidden = specs, hidden
        gens = [
            torch.Generator().manual_seed(10_007 * s.seed + 1) for s in specs
        ]  # common init across variants
        H = hidden
        self.register_buffer("critic_map", torch.tensor([float(s.privileged) for s in specs]))
        self.register_buffer("actor_map", torch.tensor([float(s.actor_map) for s in specs]))
        self.register_buffer("align", torch.tensor([align_weight * s.aligned for s in specs]))
        self.gru_x = StackedLinear(gens, obs_dim + ACTIONS, 3 * H)
        self.gru_h = StackedLinear(gens, H, 3 * H)
        # the stub's extra input: the map into the actor's encoder (only built when an agent of the stack leaks)
        self.leak_x = StackedLinear(gens, map_dim, 3 * H) if any(s.actor_map for s in specs) else None
        self.actor = mlp(gens, [H, H, ACTIONS], last_scale=0.01)
        self.oracle = mlp(gens, [obs_dim + map_dim, H, H])
        self.critic_r = mlp(gens, [2 * H, H, 1])
        self.critic_c = mlp(gens, [2 * H, H, 1])
        self.proj = StackedLinear(gens, H, H)

    @property
    def K(self) -> int:
        return len(self.specs)

    def initial_state(self, n: int) -> torch.Tensor:
        return torch.zeros(self.K, n, self.hidden)

    @staticmethod
    def _mask(m: torch.Tensor, x: torch.Tensor, axis: int) -> torch.Tensor:
        """x scaled by the per-agent factor m along its agent ``axis``."""
        shape = [1] * x.dim()
        shape[axis] = -1
        return x * m.view(shape)

    def encode(self, obs, priv, prev_action, first, h0) -> tuple[torch.Tensor, torch.Tensor]:
        """The history states h_1..h_T (T, K, n, H) and the last one, from obs (T, K, n, 13), priv (T, K, n, 49),
        prev_action (T, K, n) and first (T, K, n) (the step starts an episode: the state and previous action
        are reset)."""
        keep = (~first).unsqueeze(-1).float()
        a = nn.functional.one_hot(prev_action.clamp(min=0), ACTIONS).float() * keep
        gx = self.gru_x(torch.cat([obs, a], -1).transpose(0, 1)).transpose(0, 1)  # (T, K, n, 3H)
        if self.leak_x is not None:
            gx = gx + self.leak_x(self._mask(self.actor_map, priv, 1).transpose(0, 1)).transpose(0, 1)
        h, H, out = h0, self.hidden, []
        # unbind and split, not indexing: their backward is one stack / cat, where each index's backward would
        # fill a zero tensor of the whole input (measured: 57% of the backward pass)
        for x_t, keep_t in zip(gx.unbind(0), keep.unbind(0), strict=True):
            h = h * keep_t
            xr, xz, xc = x_t.split(H, -1)
            hr, hz, hc = self.gru_h(h).split(H, -1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            c = torch.tanh(xc + r * hc)
            h = (1 - z) * c + z * h
            out.append(h)
        return torch.stack(out), h

    def heads(self, hs, obs, priv) -> dict[str, torch.Tensor]:
        """Logits, the oracle's embedding, both critics and the alignment error at every step; (T, K, n, .)
        inputs are laid out (K, T * n, .) for the stacked layers."""
        T, K, n = hs.shape[:3]

        def lay(x):
            return x.transpose(0, 1).reshape(K, T * n, -1)

        def back(y):
            return y.reshape(K, T, n, -1).transpose(0, 1)

        h = lay(hs)
        e = self.oracle(torch.cat([lay(obs), self._mask(self.critic_map, lay(priv), 0)], -1))
        he = torch.cat([h, e], -1)
        align = ((self.proj(h) - e.detach()) ** 2).mean(-1, keepdim=True)
        return {
            "logits": back(self.actor(h)),
            "v_r": back(self.critic_r(he)).squeeze(-1),
            "v_c": back(self.critic_c(he)).squeeze(-1),
            "align": back(align).squeeze(-1),
        }


def gae(values: np.ndarray, rewards: np.ndarray, dones: np.ndarray, last: np.ndarray, gamma: float,
        lam: float) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Generalised advantage estimation over a rollout (T, ...): delta_t = r_t + gamma (1 - d_t) V_{t+1} - V_t,
    A_t = delta_t + gamma lam (1 - d_t) A_{t+1}, with V_{T} = ``last``; returns (A, A + V)."""
    adv = np.zeros_like(rewards)
    nxt_v, nxt_a = last, np.zeros_like(last)
    for t in range(len(rewards) - 1, -1, -1):
        live = 1.0 - dones[t]
        delta = rewards[t] + gamma * live * nxt_v - values[t]
        nxt_a = delta + gamma * lam * live * nxt_a
        adv[t] = nxt_a
        nxt_v = values[t]
    return adv, adv + values


def lagrange_step(lam: np.ndarray, episode_cost: np.ndarray, limit: float, lr: float) -> np.ndarray:
    """lambda <- max(0, lambda + eta (J_c - d))."""
    return np.maximum(0.0, lam + lr * (episode_cost - limit))


def sample(logits: torch.Tensor, gens: list[np.random.Generator]) -> np.ndarray:
    """One action per (agent, environment) from softmax(logits) (K, n, 4) by inverse CDF with each agent's own
    generator."""
    cdf = torch.softmax(logits, -1).cumsum(-1).numpy()
    out = np.empty(cdf.shape[:2], dtype=np.int64)
    for k, g in enumerate(gens):
        u = g.random(cdf.shape[1])[:, None]
        out[k] = np.minimum((cdf[k] < u).sum(-1), ACTIONS - 1)
    return out
