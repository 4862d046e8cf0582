"""Theorem 3.3's tabular core: a critic that sees the state is never below the exact POMDP value.

For a finite-horizon POMDP (transitions T[a, s, s'], observations O[a, s', z] after the move, rewards R[s, a]):

    V_MDP^h(s) = max_a R[s, a] + sum_s' T[a, s, s'] V_MDP^(h-1)(s'),
    V_POMDP^h(b) = max_a sum_s b(s) R[s, a] + sum_z P(z | b, a) V_POMDP^(h-1)(b'_{a,z}),

with b'_{a,z}(s') proportional to O[a, s', z] sum_s b(s) T[a, s, s']. Knowing the state can only help, so
sum_s b(s) V_MDP^h(s) >= V_POMDP^h(b): the asymmetric (privileged) value upper-bounds the symmetric one. With
costs as negative rewards the symmetric critic is the one that underestimates the risk.
"""

from __future__ import annotations

import numpy as np


def mdp_values(t: np.ndarray, r: np.ndarray, horizon: int) -> np.ndarray:
    """V_MDP^horizon(s) by backward induction."""
    v = np.zeros(r.shape[0])
    for _ in range(horizon):
        v = (r + np.einsum("ast,t->sa", t, v)).max(1)
    return v


def pomdp_value(b: np.ndarray, t: np.ndarray, o: np.ndarray, r: np.ndarray, horizon: int) -> float:
    """V_POMDP^horizon(b) by exhaustive belief-tree search (|A| |Z| branches a level)."""
    if horizon == 0:
        return 0.0
    best = -np.inf
    for a in range(t.shape[0]):
        value = float(b @ r[:, a])
        pred = b @ t[a]  # P(s' | b, a)
        for z in range(o.shape[2]):
            joint = pred * o[a, :, z]
            pz = joint.sum()
            if pz > 1e-15:
                value += pz * pomdp_value(joint / pz, t, o, r, horizon - 1)
        best = max(best, value)
    return best


def random_pomdp(g: np.random.Generator, states: int = 3, actions: int = 2, observations: int = 2):
    """Dirichlet(1) transitions and observations, uniform rewards in [-1, 1], a Dirichlet(1) belief."""
    t = g.dirichlet(np.ones(states), (actions, states))
    o = g.dirichlet(np.ones(observations), (actions, states))
    r = g.uniform(-1, 1, (states, actions))
    return t, o, r, g.dirichlet(np.ones(states))


def tiger(accuracy: float = 0.85, listen: float = -1.0, right: float = 10.0, wrong: float = -100.0):
    """The Tiger problem: states (tiger left, tiger right), actions (listen, open left, open right); opening
    resets the tiger uniformly and its observation is uninformative."""
    t = np.stack([np.eye(2), np.full((2, 2), 0.5), np.full((2, 2), 0.5)])
    o = np.stack([np.array([[accuracy, 1 - accuracy], [1 - accuracy, accuracy]]), np.full((2, 2), 0.5),
                  np.full((2, 2), 0.5)])  # fmt: skip
    r = np.array([[listen, wrong, right], [listen, right, wrong]])
    return t, o, r
