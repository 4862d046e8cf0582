"""The Neural ODE's training data: short noisy rollouts of the plant, and the clean held-out states.

Rollouts start at a uniform position in the arena with a uniform velocity in [-v0, v0]^2 and apply piecewise
constant controls uniform in the box (redrawn every ``hold`` steps). Every recorded state is the true one plus
Gaussian noise N(0, sigma^2 I) with sigma(p) = floor + noise * min_j ||p - s_j||: measurement uncertainty that
grows away from the beacons, the Sigma_i the weighted loss divides by. The columns are the fit command's:
traj, t, px, py, vx, vy, ux, uy, sigma.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from models.bundle_cbf.node import COLUMNS, STATE
from models.bundle_cbf.system import ARENA, BEACONS, DT, TrueModel, rk4_step


def sigma_of(p: np.ndarray, noise: float, floor: float) -> np.ndarray:
    """sigma(p) = floor + noise * min_j ||p - s_j||."""
    return floor + noise * np.linalg.norm(p[..., None, :] - BEACONS, axis=-1).min(-1)


def rollouts(g: np.random.Generator, n: int, length: int, noise: float, floor: float, u_max: float = 2.0,
             v0: float = 1.5, hold: int = 5) -> pd.DataFrame:  # fmt: skip
    """``n`` rollouts of ``length`` + 1 recorded states each (see the module docstring)."""
    plant = TrueModel()
    x = np.concatenate([g.uniform(0, ARENA, (n, 2)), g.uniform(-v0, v0, (n, 2))], 1)
    states, controls = [x], []
    for t in range(length + 1):
        if t % hold == 0:
            u = g.uniform(-u_max, u_max, (n, 2))
        controls.append(u)
        if t < length:
            x = rk4_step(plant, x, u, DT)
            states.append(x)
    clean = np.stack(states, 1)  # (n, length + 1, 4)
    sig = sigma_of(clean[..., :2], noise, floor)
    seen = clean + g.normal(size=clean.shape) * sig[..., None]
    us = np.stack(controls, 1)
    frame = pd.DataFrame(seen.reshape(-1, 4), columns=list(STATE))
    frame.insert(0, "t", np.tile(np.arange(length + 1) * DT, n))
    frame.insert(0, "traj", np.repeat(np.arange(n), length + 1))
    frame[["ux", "uy"]] = us.reshape(-1, 2)
    frame["sigma"] = sig.reshape(-1)
    return frame[["traj", *COLUMNS, "sigma"]]


def heldout(
    g: np.random.Generator, n: int, u_max: float = 2.0, v0: float = 1.5
) -> tuple[np.ndarray, np.ndarray]:
    """Clean held-out (v, u): velocities uniform in [-v0, v0]^2, controls uniform in the box."""
    return g.uniform(-v0, v0, (n, 2)), g.uniform(-u_max, u_max, (n, 2))
