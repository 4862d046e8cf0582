"""Interventional state-space models (iSSM): the controlled CPU reproduction.

Nejatbakhsh et al. ICML 2025. Official code: https://github.com/amin-nejat/issm (JAX; the notebook path is
the reference: its ``loader.py`` and ``run.py`` paths are broken, see the spec).

Model (D latents, B = I fixed, bin width dt, ``m_t = 1[B u_t == 0]`` elementwise: the do-operator)::

    x_t ~ N(m_t * [(1 - dt) x_{t-1} + dt A x_{t-1}] + B u_t, dt^2 I)      (SSM: no m_t, inputs add)
    y_t ~ N(f_phi(x_t), dt^2 I),   f_phi an MLP D-100-100-100-N (tanh)
    q(x | y, u): forward + backward LSTMs (H = 10) over [y_t, u_t], mean clamped like the dynamics

trained on ``-[log p(x | u) + log p(y | x)] + gamma log q(x)`` (one reparameterised sample; gamma = 1: the
negative ELBO), Adam(1e-2, betas (0.8, 0.9)), full batch.

Stages: prepare (per seed, the dynamic attractor and the linear system with their seeded pulse protocols, or a
user's recordings) -> validate (GX: shapes, finite values, clamped entries equal B u) -> train (iSSM and SSM on
every set and seed, the gamma ablation; Lightning, on forked workers) -> evaluate (latent correlations, aligned
R^2, reconstruction, eigenvalues, held-out prediction) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper

SETS = ("attractor", "linear", "attractor_official")


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="simulated", metadata={"choices": ("simulated", "npz")})
    file: str = (
        "recordings.npz"  # data/issm/input/<file>: y (trials x bins x neurons), u (trials x bins x inputs)
    )
    sets: tuple[str, ...] = field(default=SETS, metadata={"choices": SETS})
    seeds: int = field(default=3, metadata={"ge": 1})
    trials: int = field(default=10, metadata={"ge": 1})
    bins: int = field(default=200, metadata={"ge": 10})
    pulses: int = field(default=15, metadata={"ge": 1})
    width: int = field(default=3, metadata={"ge": 1})
    test_pulses: int = field(default=8, metadata={"ge": 1})
    test_width: int = field(default=6, metadata={"ge": 1})
    dt: float = field(default=0.05, metadata={"gt": 0.0})
    repetition: int = field(default=15, metadata={"ge": 1})  # attractor_official: pulses per latent


@dataclass(frozen=True)
class Train:
    iters: int = field(default=500, metadata={"ge": 1})
    gamma: float = field(default=1.0, metadata={"ge": 0.0})  # the notebook's 0 is the ablation
    shared_noise: bool = False  # the official code: one noise draw for every trial
    train_B: bool = False  # B learned under a Laplace prior (the paper's option); default B = I fixed
    # A's start: "normal" A_ij ~ N(0, 1) (the official notebook and run.py); "identity" I + N(0, 0.1^2) (ours)
    a_init: str = field(default="normal", metadata={"choices": ("normal", "identity")})
    ablation_sets: tuple[str, ...] = field(default=("attractor",), metadata={"choices": (*SETS, "npz")})
    workers: int = field(default=2, metadata={"ge": 1})


PAPER = Paper(
    slug="issm",
    citation="Nejatbakhsh et al. *Interventional state-space models*. ICML 2025.",
    url="https://github.com/amin-nejat/issm",
    schema={"prepare": Prepare, "train": Train},
)
