"""The plant, its sensing and the layouts: a 2-D double integrator with unknown mass and quadratic drag.

State x = (p, v) in R^4, input u in R^2 with |u_i| <= u_max:

    pdot = v,    vdot = a(v) + b u,    a(v) = -(c_d / m) ||v|| v,    b = 1 / m      (m = 1.2, c_d = 0.3)

integrated by RK4 with step dt = 0.02 s (u held over the step). Four beacons sit at the corners of the 4 x 4
arena; the measured obstacle-relative position is

    y = p - o + v,    v ~ Uniform{ ||v|| <= delta(p) },    delta(p) = alpha min_j ||p - s_j||,

drawn fresh every step and for every obstacle, so sensing is good near a corner and worst at the centre
(delta_max = alpha 2 sqrt 2). Layouts: ``passage`` (the issue's narrow passage: a wall of circles of radius 0.3
across x = 2 with one gap at a random height and free width U(0.05, 0.6), start left, goal right) and ``random``
(the spec's 3-5 random circles between start and goal). The nominal controller tracks a velocity toward a waypoint
(the gap's centre while left of the wall, then the goal); the filter, not the controller, knows about noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MASS = 1.2
DRAG = 0.3
DT = 0.02
ARENA = 4.0
BEACONS = np.array([[0.0, 0.0], [ARENA, 0.0], [0.0, ARENA], [ARENA, ARENA]])
WALL_X = 2.0
RADIUS = 0.3


def delta(p: np.ndarray, alpha: float) -> np.ndarray:
    """delta(p) = alpha min_j ||p - s_j|| over the corner beacons; p (..., 2) -> (...)."""
    d = np.linalg.norm(np.asarray(p, dtype=float)[..., None, :] - BEACONS, axis=-1)
    return alpha * d.min(-1)


def delta_max(alpha: float) -> float:
    """The largest delta in the arena (its centre): the robust CBF's margin."""
    return float(alpha * np.hypot(ARENA / 2, ARENA / 2))


def disc_noise(g: np.random.Generator, radius: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform draws in discs: radius (...) broadcast against shape (..., 2) minus the last axis."""
    rho = np.sqrt(g.random(shape[:-1])) * radius
    phi = g.random(shape[:-1]) * 2 * np.pi
    return np.stack([rho * np.cos(phi), rho * np.sin(phi)], -1)


class TrueModel:
    """The plant's control-affine acceleration: drift a(v) = -(c_d/m)||v|| v and gain b = 1/m per axis."""

    def __init__(self, mass: float = MASS, drag: float = DRAG):
        if mass <= 0 or drag < 0:
            raise ValueError(f"mass {mass} must be > 0 and drag {drag} >= 0")
        self.mass, self.drag = float(mass), float(drag)

    def drift(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        return -(self.drag / self.mass) * np.linalg.norm(v, axis=-1, keepdims=True) * v

    def gain(self, v: np.ndarray) -> np.ndarray:
        return np.full(np.shape(v), 1.0 / self.mass)

    def accel(self, v: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.drift(v) + self.gain(v) * u


def rk4_step(model, x: np.ndarray, u: np.ndarray, dt: float = DT) -> np.ndarray:
    """One RK4 step of xdot = [v; a(v) + b(v) u] with u held constant; x (..., 4)."""

    def f(s):
        return np.concatenate([s[..., 2:], model.accel(s[..., 2:], u)], -1)

    k1 = f(x)
    k2 = f(x + dt / 2 * k1)
    k3 = f(x + dt / 2 * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


@dataclass
class Layouts:
    """A batch of layouts: obstacles padded to K per layout (``mask`` marks the real ones)."""

    centres: np.ndarray  # (B, K, 2)
    radii: np.ndarray  # (B, K)
    mask: np.ndarray  # (B, K) bool
    start: np.ndarray  # (B, 2)
    goal: np.ndarray  # (B, 2)
    waypoint: np.ndarray  # (B, 2); the gap's centre (passage) or the goal (random)
    gap_y: np.ndarray  # (B,), NaN for random layouts
    gap_width: np.ndarray  # (B,), NaN for random layouts

    def __len__(self) -> int:
        return len(self.start)


def passage(g: np.random.Generator, n: int, width: tuple[float, float] = (0.05, 0.6), r: float = RADIUS,
            spacing: float = 1.8) -> Layouts:  # fmt: skip
    """The narrow passage: circles of radius r every ``spacing * r`` along x = 2 from y = -1 to 5 except for one
    gap of free width w ~ U(width) (the distance between the two circles' surfaces) centred at a height
    U(0.5, 3.5); start (0.4, U(0.5, 3.5)), goal (3.6, U(0.5, 3.5)). Neighbouring circles overlap, so the gap is
    the only way through."""
    gy = g.uniform(0.5, 3.5, n)
    w = g.uniform(*width, n)
    step = spacing * r
    k_side = int(np.ceil((ARENA + 2.0) / step)) + 1
    offs = r + w[:, None] / 2 + step * np.arange(k_side)  # centre distances from the gap's centre
    ys = np.concatenate([gy[:, None] + offs, gy[:, None] - offs], 1)
    mask = (ys > -1.0) & (ys < ARENA + 1.0)
    centres = np.stack([np.full_like(ys, WALL_X), ys], -1)
    start = np.stack([np.full(n, 0.4), g.uniform(0.5, 3.5, n)], -1)
    goal = np.stack([np.full(n, 3.6), g.uniform(0.5, 3.5, n)], -1)
    return Layouts(
        centres, np.full(ys.shape, r), mask, start, goal, np.stack([np.full(n, WALL_X), gy], -1), gy, w
    )


def random_circles(g: np.random.Generator, n: int, count: tuple[int, int] = (3, 5),
                   radius: tuple[float, float] = (0.2, 0.45)) -> Layouts:  # fmt: skip
    """The spec's layouts: 3-5 circles of radius U(0.2, 0.45) with centres in [1, 3]^2, start and goal sampled
    on the left and right edges at least 0.3 from every surface."""
    k = count[1]
    centres = g.uniform(1.0, 3.0, (n, k, 2))
    radii = g.uniform(*radius, (n, k))
    mask = np.arange(k)[None] < g.integers(count[0], count[1] + 1, n)[:, None]
    start = np.stack([np.full(n, 0.3), g.uniform(0.3, 3.7, n)], -1)
    goal = np.stack([np.full(n, 3.7), g.uniform(0.3, 3.7, n)], -1)
    return Layouts(centres, radii, mask, start, goal, goal.copy(), np.full(n, np.nan), np.full(n, np.nan))


def nominal_control(p: np.ndarray, v: np.ndarray, lay: Layouts, v_max: float = 1.0, k_v: float = 4.0,
                    slow: float = 0.4, switch: float = 0.3) -> np.ndarray:  # fmt: skip
    """Velocity tracking: u = k_v (v_des - v), v_des at speed v_max toward the gap's centre while left of the
    wall and farther than ``switch`` from it, then toward the goal, slowing linearly within ``slow`` of the goal
    (the controller knows neither the drag nor the noise, and cuts the corner after the gap: the filter's job)."""
    left = ((p[:, 0] < lay.waypoint[:, 0]) & (np.linalg.norm(p - lay.waypoint, axis=-1) > switch))[:, None]
    target = np.where(left, lay.waypoint, lay.goal)
    d = target - p
    dist = np.linalg.norm(d, axis=-1, keepdims=True)
    speed = np.where(left, v_max, v_max * np.minimum(1.0, dist / slow))
    return k_v * (speed * d / np.maximum(dist, 1e-9) - v)
