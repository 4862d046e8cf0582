"""The interventional state-space model (iSSM) and its SSM baseline, in PyTorch.

Notation: K trials, T bins, D latents, M inputs, N observed neurons, bin width dt. Inputs act through a fixed
(or trainable) matrix B (D x M); ``Bu_t = B u_t``.

**Intervention mask** (elementwise, the do-operator): ``m_t = 1[B u_t == 0]``. Where ``m_t,d = 0`` the latent
coordinate d is *set* to ``(B u_t)_d``, not pushed. The mask acts in three places: the simulator
(models/issm/simulate.py), the dynamics log-probability and the recognition mean (this module).

**Dynamics** (Euler, leak form)::

    mu_t = m_t * [(1 - dt) x_{t-1} + dt A x_{t-1}] + B u_t,     x_0 = 0,
    x_t ~ N(mu_t, dt^2 I)

so ``x_t - x_{t-1} = dt (A - I) x_{t-1}`` off the clamp: A is compared with I + (the true drift Jacobian), not
with the drift itself. The SSM baseline is the same model without the mask: ``mu_t = (1 - dt) x_{t-1} +
dt A x_{t-1} + B u_t`` (inputs add), and its recognition mean is not clamped either.

**Emission**: ``y_t ~ N(f_phi(x_t), dt^2 I)``, f_phi an MLP D-100-100-100-N with tanh after each hidden layer.

**Recognition** (amortised): a forward and a backward LSTM (H = 10 each) read ``[y_t, u_t]``; linear heads on
``[h_fwd_t, h_bwd_t]`` give the mean mu_hat_t and, through softplus, the standard deviation s_hat_t. The mean
is clamped like the dynamics, ``mu_hat_t <- m_t * mu_hat_t + B u_t`` (iSSM only), with the same B.

**Objective** per trial (one reparameterised sample ``x = mu_hat + s_hat * eps``)::

    loss = -[log p(x_{1:T} | u) + log p(y_{1:T} | x)] - log p(B) + gamma * log q(x | y, u)

averaged over trials. With gamma = 1 this is the negative single-sample ELBO (the paper and the official
config); the notebook's gamma = 0 drops the entropy term (``gamma`` switch). ``log p(B) = -sum |B| / 0.1``
(a Laplace prior) only when B is trained (``train_B``). The official code draws one noise ``eps`` for all
trials (one PRNG key inside ``vmap``); the default draws one per trial, ``shared_noise`` is the official
behaviour.

Everything is vectorised over trials and time: given the sample x, ``mu_t`` depends only on ``x_{t-1}``, so
the dynamics log-probability is one batched expression (no scan); only the LSTMs run step by step (cuDNN-free
``torch.nn.LSTM``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F

LAPLACE_SCALE = 0.1  # log p(B) = -sum |B| / LAPLACE_SCALE (the official "sparsity")
HIDDEN = 100  # the emission MLP's width (three hidden layers)
LSTM_HIDDEN = 10  # H of each recognition LSTM


@dataclass(frozen=True)
class Config:
    """What defines a model's shape and semantics (saved with its weights).

    ``interventional``: iSSM (the do-clamp) or the SSM baseline (additive inputs, no clamp anywhere).
    ``a_init``: A's start, ``"normal"`` (A_ij ~ N(0, 1), as the official notebook and ``run.py`` draw it; the
    paper does not say) or ``"identity"`` (ours: I + N(0, 0.1^2) entries, a random walk with a small drift).
    """

    latents: int
    inputs: int
    neurons: int
    dt: float = 0.05
    interventional: bool = True
    train_B: bool = False
    gamma: float = 1.0
    shared_noise: bool = False
    a_init: str = "normal"

    def to_dict(self) -> dict:
        return asdict(self)


def intervention_mask(Bu: torch.Tensor) -> torch.Tensor:
    """``m = 1[B u == 0]`` elementwise (1 where the dynamics act, 0 where the coordinate is clamped)."""
    return (Bu == 0).to(Bu.dtype)


def leak_step(x_prev: torch.Tensor, A: torch.Tensor, dt: float) -> torch.Tensor:
    """``(1 - dt) x + dt A x`` for a batch of row vectors x (..., D)."""
    return (1.0 - dt) * x_prev + dt * (x_prev @ A.T)


def dynamics_mean(x: torch.Tensor, Bu: torch.Tensor, A: torch.Tensor, dt: float, interventional: bool):
    """The prior means mu_{1:T} given a latent path x (K, T, D): ``x_{t-1}`` shifted in, ``x_0 = 0``."""
    x_prev = torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)
    drift = leak_step(x_prev, A, dt)
    if interventional:
        return intervention_mask(Bu) * drift + Bu
    return drift + Bu


def gaussian_logpdf(x: torch.Tensor, mean: torch.Tensor, sd: torch.Tensor | float) -> torch.Tensor:
    """Elementwise log N(x; mean, sd^2)."""
    sd_t = torch.as_tensor(sd, dtype=x.dtype)
    z = (x - mean) / sd_t
    return -0.5 * z * z - torch.log(sd_t) - 0.5 * math.log(2 * math.pi)


class Emission(nn.Module):
    """f_phi: D -> 100 -> tanh -> 100 -> tanh -> 100 -> tanh -> N."""

    def __init__(self, latents: int, neurons: int, hidden: int = HIDDEN):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(latents, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, neurons),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Recognition(nn.Module):
    """q(x | y, u) = prod_t N(mu_hat_t, diag s_hat_t^2) from a forward and a backward LSTM over [y_t, u_t]."""

    def __init__(self, neurons: int, inputs: int, latents: int, hidden: int = LSTM_HIDDEN):
        super().__init__()
        self.lstm = nn.LSTM(neurons + inputs, hidden, batch_first=True, bidirectional=True)
        self.mean = nn.Linear(2 * hidden, latents)
        self.scale = nn.Linear(2 * hidden, latents)

    def forward(self, y: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h, _ = self.lstm(torch.cat([y, u], dim=-1))
        return self.mean(h), F.softplus(self.scale(h)) + 1e-6


class ISSM(nn.Module):
    """The generative model (A, B, emission) and the recognition network; :meth:`loss` is the objective above."""

    def __init__(self, cfg: Config, B: torch.Tensor | None = None):
        super().__init__()
        self.cfg = cfg
        D, M = cfg.latents, cfg.inputs
        if cfg.a_init == "normal":
            A0 = torch.randn(D, D)
        elif cfg.a_init == "identity":
            A0 = torch.eye(D) + 0.1 * torch.randn(D, D)
        else:
            raise ValueError(f"a_init must be 'normal' or 'identity', got {cfg.a_init!r}")
        self.A = nn.Parameter(A0)
        if B is None:
            if M != D:
                raise ValueError(f"B = I needs as many inputs as latents (got {M} inputs, {D} latents)")
            B = torch.eye(D)
        B = torch.as_tensor(B, dtype=torch.float32).reshape(D, M)
        if cfg.train_B:
            self.B = nn.Parameter(B.clone())
        else:
            self.register_buffer("B", B.clone())
        self.emission = Emission(D, cfg.neurons)
        self.recognition = Recognition(cfg.neurons, M, D)

    # -- pieces ------------------------------------------------------------------------------------------------
    def Bu(self, u: torch.Tensor) -> torch.Tensor:
        return u @ self.B.T

    def posterior(self, y: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The recognition mean (clamped for iSSM: ``m * mu_hat + B u``, the same B as the dynamics) and sd."""
        mean, sd = self.recognition(y, u)
        if self.cfg.interventional:
            Bu = self.Bu(u)
            mean = intervention_mask(Bu) * mean + Bu
        return mean, sd

    def log_dynamics(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """log p(x_{1:T} | u) per trial (K,)."""
        mu = dynamics_mean(x, self.Bu(u), self.A, self.cfg.dt, self.cfg.interventional)
        return gaussian_logpdf(x, mu, self.cfg.dt).sum(dim=(1, 2))

    def log_emission(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """log p(y_{1:T} | x_{1:T}) per trial (K,)."""
        return gaussian_logpdf(y, self.emission(x), self.cfg.dt).sum(dim=(1, 2))

    def log_prior_B(self) -> torch.Tensor:
        if not self.cfg.train_B:
            return torch.zeros(())
        return -self.B.abs().sum() / LAPLACE_SCALE

    def sample_noise(self, shape: torch.Size, generator: torch.Generator | None = None) -> torch.Tensor:
        if self.cfg.shared_noise:  # the official code: one key for every trial
            return torch.randn((1, *shape[1:]), generator=generator).expand(shape)
        return torch.randn(shape, generator=generator)

    def terms(self, y: torch.Tensor, u: torch.Tensor, generator: torch.Generator | None = None) -> dict:
        """The objective's terms (each averaged over trials) for one reparameterised sample."""
        mean, sd = self.posterior(y, u)
        x = mean + sd * self.sample_noise(mean.shape, generator)
        log_q = gaussian_logpdf(x, mean, sd).sum(dim=(1, 2))
        return self.objective(self.log_dynamics(x, u), self.log_emission(y, x), log_q)

    def objective(self, log_px: torch.Tensor, log_py: torch.Tensor, log_q: torch.Tensor) -> dict:
        """The loss and the ELBO from the per-trial log-densities (K,) of one sample, each averaged over
        trials: ``loss = mean(-(log_px + log_py) + gamma log_q) - log p(B)``."""
        log_pb = self.log_prior_B()
        loss = (-(log_px + log_py) + self.cfg.gamma * log_q).mean() - log_pb
        elbo = (log_px + log_py - log_q).mean() + log_pb
        return {
            "loss": loss,
            "elbo": elbo.detach(),
            "log_px": log_px.mean().detach(),
            "log_py": log_py.mean().detach(),
            "log_q": log_q.mean().detach(),
        }

    def loss(
        self, y: torch.Tensor, u: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        return self.terms(y, u, generator)["loss"]

    # -- prediction --------------------------------------------------------------------------------------------
    @torch.no_grad()
    def rollout(self, u: torch.Tensor, x0: torch.Tensor | None = None) -> torch.Tensor:
        """The deterministic do-rollout of the learned dynamics under inputs u (K, T, M): ``x_t = mu_t`` with
        ``x_0 = 0`` (or ``x0``); the clamp sets intervened coordinates to ``B u_t`` (iSSM), inputs add (SSM)."""
        Bu = self.Bu(u)
        K, T, D = Bu.shape
        x = torch.zeros(K, D) if x0 is None else x0
        out = []
        for t in range(T):
            drift = leak_step(x, self.A, self.cfg.dt)
            b = Bu[:, t]
            x = intervention_mask(b) * drift + b if self.cfg.interventional else drift + b
            out.append(x)
        return torch.stack(out, dim=1)

    @torch.no_grad()
    def predict(self, u: torch.Tensor) -> torch.Tensor:
        """Predicted observations f_phi(rollout(u)) (K, T, N)."""
        return self.emission(self.rollout(u))
