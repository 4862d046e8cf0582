"""Seeded simulations with known latents: the notebook's dynamic attractor and a linear system, both with
hard interventions (the do-clamp).

**Stimulation protocol** (seeded; it replaces the official ``stimulation_protocol``, which draws signs and
jitter from the unseeded global ``np.random``): each trial gets ``pulses`` pulses of ``width`` bins. Pulse k
lies in its own slot of ``T // pulses`` bins and starts at a uniformly random bin of the slot, at least one bin
after the slot's start and early enough to end inside it (so a rest bin precedes every pulse); its latent
(input) is drawn uniformly and its sign is +-1 with equal odds, times ``amplitude``.

**Clamp**: a simulator step is ``x_t = m_t * step(x_{t-1}) + B u_t`` with ``m_t = 1[B u_t == 0]`` (B = I here):
the intervened coordinates *equal* the input, the others follow the dynamics (and carry process noise, if any).

**Dynamic attractor** (Galgali et al. 2023, the notebook's setting): ``dx1/dt = a1 x1``, ``dx2/dt = a2 (1 - x1)``
with a1 = -20, a2 = 1.2, Euler with dt = 0.05 (no process noise), ``x_1 = 0.01 N(0, I)``, observations
``y = ((1 - x1) cos x2, (1 - x1) sin x2) + N(0, dt^2)``. Its drift Jacobian is [[a1, 0], [-a2, 0]], so the
leak-form A to compare with is I + that (eigenvalues 1 + a1 = -19 and 1).

**Linear**: ``x_t = x_{t-1} + dt (A - I) x_{t-1} + dt eps`` off the clamp with A = I + [[-0.5, -2], [2, -0.5]]
(eigenvalues 0.5 +- 2i: a damped rotation), ``x_1 = 0.01 N(0, I)``, observations through a fixed seeded tanh
MLP 2-20-10 (weights N(0, 1) into the hidden layer, N(0, 1/20) out, biases N(0, 0.25)) plus N(0, dt^2) noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DT = 0.05
ATTRACTOR = {"a1": -20.0, "a2": 1.2}
LINEAR_DRIFT = np.array([[-0.5, -2.0], [2.0, -0.5]])  # A - I of the linear system
LINEAR_A = np.eye(2) + LINEAR_DRIFT


def pulse_protocol(
    rng: np.random.Generator,
    trials: int,
    bins: int,
    inputs: int,
    pulses: int,
    width: int,
    amplitude: float = 1.0,
) -> np.ndarray:
    """Inputs u (trials, bins, inputs): ``pulses`` pulses of ``width`` bins per trial (module docstring)."""
    if pulses < 1 or width < 1:
        raise ValueError(f"pulses and width must be >= 1 (got {pulses}, {width})")
    slot = bins // pulses
    if slot < width + 1:
        raise ValueError(
            f"{pulses} pulses of {width} bins do not fit in {bins} bins (a rest bin before each)"
        )
    u = np.zeros((trials, bins, inputs))
    for k in range(trials):
        starts = np.arange(pulses) * slot + rng.integers(1, slot - width + 1, size=pulses)
        which = rng.integers(0, inputs, size=pulses)
        signs = rng.choice([-1.0, 1.0], size=pulses)
        for s, d, sign in zip(starts, which, signs, strict=True):
            u[k, s : s + width, d] = sign * amplitude
    return u


def official_protocol(
    rng: np.random.Generator,
    trials: int,
    bins: int,
    inputs: int,
    repetition: int = 15,
    dt: float = DT,
    sigma: float = 0.5,
    amplitude: float = 1.0,
) -> np.ndarray:
    """The official ``utils.stimulation_protocol(stimulated=all, stim_d=1, rest_d=1, repetition, sigma)``,
    seeded: ``2 * inputs * repetition`` equal slots over the trial (``linspace`` knots, nearest interpolation
    onto the bins), every odd slot a pulse; the pulses cycle through the inputs in order (input 0, 1, ..., then
    again), each with a random sign; every stimulated bin then gets ``sigma * N(0, 1)`` added to its amplitude.
    With 200 bins and 2 inputs: 30 pulses alternating between the latents, of 3-4 bins but the last, which
    gets 1 bin (the last knot sits at T dt, past the last bin, as in the official code)."""
    slots = 2 * inputs * repetition
    knots = np.linspace(0.0, bins * dt, slots)
    t = np.arange(bins) * dt
    nearest = np.abs(t[:, None] - knots[None, :]).argmin(axis=1)  # interp1d(kind="nearest")
    u = np.zeros((trials, bins, inputs))
    for k in range(trials):
        levels = np.zeros((slots, inputs))
        for r in range(repetition):
            for i in range(inputs):
                levels[2 * (r * inputs + i) + 1, i] = rng.choice([-1.0, 1.0]) * amplitude
        u[k] = levels[nearest]
        on = u[k] != 0
        u[k][on] += sigma * rng.standard_normal(on.sum())
    return u


def _clamped_path(
    u: np.ndarray, x1: np.ndarray, step, noise_sd: float, rng: np.random.Generator
) -> np.ndarray:
    """Run ``x_t = m_t * (step(x_{t-1}) + noise_sd eps) + u_t`` (B = I) from ``x_1 = m_1 * x1 + u_1``."""
    K, T, D = u.shape
    x = np.empty((K, T, D))
    m = (u == 0).astype(float)
    x[:, 0] = m[:, 0] * x1 + u[:, 0]
    for t in range(1, T):
        free = step(x[:, t - 1])
        if noise_sd > 0:
            free = free + noise_sd * rng.standard_normal((K, D))
        x[:, t] = m[:, t] * free + u[:, t]
    return x


def attractor_latents(u: np.ndarray, rng: np.random.Generator, a1: float, a2: float, dt: float) -> np.ndarray:
    def step(x: np.ndarray) -> np.ndarray:
        return np.stack([x[:, 0] + dt * a1 * x[:, 0], x[:, 1] + dt * a2 * (1.0 - x[:, 0])], axis=1)

    x1 = 0.01 * rng.standard_normal((u.shape[0], 2))
    return _clamped_path(u, x1, step, 0.0, rng)


def attractor_observe(x: np.ndarray, rng: np.random.Generator, dt: float) -> np.ndarray:
    r = 1.0 - x[..., 0]
    y = np.stack([r * np.cos(x[..., 1]), r * np.sin(x[..., 1])], axis=-1)
    return y + dt * rng.standard_normal(y.shape)


def linear_latents(u: np.ndarray, rng: np.random.Generator, A: np.ndarray, dt: float) -> np.ndarray:
    def step(x: np.ndarray) -> np.ndarray:
        return (1.0 - dt) * x + dt * x @ A.T

    x1 = 0.01 * rng.standard_normal((u.shape[0], A.shape[0]))
    return _clamped_path(u, x1, step, dt, rng)


@dataclass(frozen=True)
class TanhEmission:
    """y = W2 tanh(W1 x + b1) + b2: the linear system's fixed observation map."""

    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray

    @classmethod
    def draw(
        cls, rng: np.random.Generator, latents: int = 2, hidden: int = 20, neurons: int = 10
    ) -> TanhEmission:
        return cls(
            rng.standard_normal((hidden, latents)),
            0.5 * rng.standard_normal(hidden),
            rng.standard_normal((neurons, hidden)) / np.sqrt(hidden),
            0.5 * rng.standard_normal(neurons),
        )

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.tanh(x @ self.W1.T + self.b1) @ self.W2.T + self.b2


def attractor_set(
    rng: np.random.Generator,
    trials: int = 10,
    bins: int = 200,
    pulses: int = 15,
    width: int = 3,
    dt: float = DT,
    official: bool = False,
    repetition: int = 15,
) -> dict[str, np.ndarray]:
    """The notebook's dynamic attractor: y (K, T, 2), u (K, T, 2), the true latents x (K, T, 2); inputs from
    :func:`pulse_protocol` (the issue's protocol) or, with ``official``, :func:`official_protocol`."""
    if official:
        u = official_protocol(rng, trials, bins, 2, repetition, dt)
    else:
        u = pulse_protocol(rng, trials, bins, 2, pulses, width)
    x = attractor_latents(u, rng, ATTRACTOR["a1"], ATTRACTOR["a2"], dt)
    return {"y": attractor_observe(x, rng, dt), "u": u, "x": x}


def linear_set(
    rng: np.random.Generator,
    emission: TanhEmission,
    trials: int = 10,
    bins: int = 200,
    pulses: int = 15,
    width: int = 3,
    test_pulses: int = 8,
    test_width: int = 6,
    dt: float = DT,
) -> dict[str, np.ndarray]:
    """The linear system: training trials under the training protocol and as many held-out trials under a new
    protocol (``test_pulses`` pulses of ``test_width`` bins); ``*_test`` arrays hold the latter."""
    out: dict[str, np.ndarray] = {}
    for suffix, p, w in (("", pulses, width), ("_test", test_pulses, test_width)):
        u = pulse_protocol(rng, trials, bins, 2, p, w)
        x = linear_latents(u, rng, LINEAR_A, dt)
        y = emission(x) + dt * rng.standard_normal((trials, bins, emission.W2.shape[0]))
        out.update({f"y{suffix}": y, f"u{suffix}": u, f"x{suffix}": x})
    return out


def attractor_true_A() -> np.ndarray:
    """I + the attractor's drift Jacobian [[a1, 0], [-a2, 0]] (the drift is affine: exact at every state)."""
    a1, a2 = ATTRACTOR["a1"], ATTRACTOR["a2"]
    return np.eye(2) + np.array([[a1, 0.0], [-a2, 0.0]])
