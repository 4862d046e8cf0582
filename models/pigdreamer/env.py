"""HiddenHazard: a vectorised partially observable grid with hazards, a gymnasium-style reset/step API in numpy.

A size x size grid and ``horizon`` steps; four moves (up, down, left, right; a move into the wall stays put).
Each episode starts in a random cell of the left column with the goal in a random cell of the right column, and
``hazards`` distinct hazard cells drawn in the band of rows between the start's and the goal's (inclusive;
widened to at least ``hazards`` + 1 cells, never on the start or the goal). Reward +1 on reaching the goal
(the episode ends) and ``step_penalty`` every step; cost 1 for every step that ends on a hazard.

Observation (the actor's): the position and the goal (each coordinate / (size - 1)) and the 3 x 3 window of hazards
around the agent, where each hazard cell is shown with probability ``visibility`` at each step (a sensor that misses
risk; cells outside the grid read 0). Privileged (the critics' and the oracle's): the full hazard map, by default
egocentric (``frame="egocentric"``: shifted so that the agent is at the centre of a (2 size - 1)^2 window, cells
off the grid 0; ours, so that "a hazard two cells to the right" is one input whatever the position) or as the
size x size grid (``frame="grid"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])  # (row, column): up, down, left, right


def band(start_row: int, goal_row: int, size: int, hazards: int) -> tuple[int, int]:
    """The rows (first, last) where an episode's hazards may lie: those from the start's row to the goal's,
    widened one row each way (within the grid) until they hold at least ``hazards`` + 1 cells besides the start
    and the goal."""
    lo, hi = sorted((start_row, goal_row))
    while (hi - lo + 1) * size - 2 < hazards + 1 and (lo > 0 or hi < size - 1):
        lo, hi = max(0, lo - 1), min(size - 1, hi + 1)
    return lo, hi


def blind_route_cost(start_row: int, goal_row: int, size: int, hazards: int) -> float:
    """The least expected cost of a route from the start to the goal for an agent that never sees a hazard: each
    cell of the band (:func:`band`) other than the start and the goal holds a hazard with probability
    hazards / (its cells - 2), cells outside it never; the route's expected cost is the sum over the cells it
    enters, minimised by Dijkstra. A policy that uses its sensor can do better; one that ignores it cannot."""
    import heapq

    lo, hi = band(start_row, goal_row, size, hazards)
    p = np.zeros((size, size))
    p[lo : hi + 1] = hazards / ((hi - lo + 1) * size - 2)
    p[start_row, 0] = p[goal_row, size - 1] = 0.0
    best = {(start_row, 0): 0.0}
    queue = [(0.0, start_row, 0)]
    while queue:
        d, r, c = heapq.heappop(queue)
        if (r, c) == (goal_row, size - 1):
            return d
        if d > best[(r, c)]:
            continue
        for dr, dc in MOVES:
            rr, cc = r + dr, c + dc
            if 0 <= rr < size and 0 <= cc < size and d + p[rr, cc] < best.get((rr, cc), np.inf):
                best[(rr, cc)] = d + p[rr, cc]
                heapq.heappush(queue, (d + p[rr, cc], rr, cc))
    raise AssertionError("the goal is always reachable")


@dataclass
class Step:
    obs: np.ndarray  # (n, 13): position (2), goal (2), window (9)
    privileged: np.ndarray  # (n, privileged_dim): the hazard map (see ``frame``)
    reward: np.ndarray  # (n,)
    cost: np.ndarray  # (n,)
    done: np.ndarray  # (n,) bool: the goal reached or the horizon over


class HiddenHazard:
    """``n`` independent episodes stepped together; finished episodes restart on the next step."""

    def __init__(self, n: int = 32, size: int = 7, horizon: int = 40, hazards: int = 5, visibility: float = 0.25,
                 step_penalty: float = 0.01, frame: str = "egocentric", seed: int = 0):  # fmt: skip
        if size < 3:
            raise ValueError(f"size {size} must be >= 3")
        if not 0 <= hazards <= size * size - 2:
            raise ValueError(f"hazards {hazards} must be between 0 and {size * size - 2} (the cells but two)")
        if not 0.0 <= visibility <= 1.0:
            raise ValueError(f"visibility {visibility} must lie in [0, 1]")
        if frame not in ("egocentric", "grid"):
            raise ValueError(f"frame {frame!r} must be 'egocentric' or 'grid'")
        if horizon < 1 or n < 1:
            raise ValueError(f"horizon {horizon} and n {n} must be >= 1")
        self.n, self.size, self.horizon, self.hazards = n, size, horizon, hazards
        self.visibility, self.step_penalty, self.frame = visibility, step_penalty, frame
        self.g = np.random.default_rng(seed)
        self.pos = np.zeros((n, 2), int)
        self.goal = np.zeros((n, 2), int)
        self.map = np.zeros((n, size, size), bool)
        self.padded = np.zeros((n, 3 * size - 2, 3 * size - 2), bool)
        self.t = np.zeros(n, int)

    @property
    def obs_dim(self) -> int:
        return 13

    @property
    def privileged_dim(self) -> int:
        return self.size * self.size if self.frame == "grid" else (2 * self.size - 1) ** 2

    def _new(self, idx: np.ndarray) -> None:
        s = self.size
        k = len(idx)
        self.pos[idx] = np.stack([self.g.integers(0, s, k), np.zeros(k, int)], 1)
        self.goal[idx] = np.stack([self.g.integers(0, s, k), np.full(k, s - 1)], 1)
        self.map[idx] = False
        self.t[idx] = 0
        for i in idx:  # a handful of cells per episode: the loop is over episodes that just ended
            lo, hi = band(int(self.pos[i, 0]), int(self.goal[i, 0]), s, self.hazards)
            cells = [(r, c) for r in range(lo, hi + 1) for c in range(s)
                     if (r, c) != tuple(self.pos[i]) and (r, c) != tuple(self.goal[i])]  # fmt: skip
            pick = self.g.choice(len(cells), self.hazards, replace=False)
            for j in pick:
                self.map[i][cells[j]] = True
        # the maps padded by size - 1 zeros on every side: both views below are slices of it
        self.padded[idx] = np.pad(self.map[idx], ((0, 0), (s - 1, s - 1), (s - 1, s - 1)))

    def _observe(self) -> tuple[np.ndarray, np.ndarray]:
        s = self.size
        r, c = self.pos[:, 0], self.pos[:, 1]
        every = np.arange(self.n)[:, None, None]
        near = np.arange(
            s - 2, s + 1
        )  # the 3 x 3 window's rows (columns) in the padded map, less the position
        window = self.padded[every, r[:, None, None] + near[None, :, None], c[:, None, None] + near]
        shown = window & (self.g.random(window.shape) < self.visibility)
        obs = np.concatenate([self.pos / (s - 1), self.goal / (s - 1), shown.reshape(self.n, 9)], 1)
        if self.frame == "grid":
            priv = self.map.reshape(self.n, -1)
        else:  # the map shifted so that the agent sits at the centre of a (2 size - 1)^2 window, zeros outside
            span = np.arange(2 * s - 1)
            priv = self.padded[every, r[:, None, None] + span[None, :, None], c[:, None, None] + span]
            priv = priv.reshape(self.n, -1)
        return obs.astype(np.float32), priv.astype(np.float32)

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        self._new(np.arange(self.n))
        return self._observe()

    def step(self, action: np.ndarray) -> Step:
        action = np.asarray(action)
        if action.shape != (self.n,) or ((action < 0) | (action > 3)).any():
            raise ValueError(f"actions must be {self.n} integers in 0..3")
        self.pos = np.clip(self.pos + MOVES[action], 0, self.size - 1)
        self.t += 1
        at_goal = (self.pos == self.goal).all(1)
        cost = self.map[np.arange(self.n), self.pos[:, 0], self.pos[:, 1]].astype(np.float32)
        reward = np.where(at_goal, 1.0, 0.0) - self.step_penalty
        done = at_goal | (self.t >= self.horizon)
        obs, priv = self._observe()
        out = Step(obs, priv, reward.astype(np.float32), cost, done)
        if done.any():  # auto-reset: the next observation of a finished episode is its new start
            idx = np.flatnonzero(done)
            self._new(idx)
            o, p = self._observe()
            out.obs[idx], out.privileged[idx] = o[idx], p[idx]
        return out


def layouts(env: HiddenHazard):
    """The table of ``env``'s episodes after a reset (one row each): start and goal cells, the hazard map as a
    row-major 0/1 string, the hazard band's rows, hazards outside it or on the start or goal (both 0 by
    construction; validate checks) and :func:`blind_route_cost`."""
    import pandas as pd

    env.reset()
    rows = []
    for i in range(env.n):
        (sr, sc), (gr, gc) = env.pos[i], env.goal[i]
        lo, hi = band(int(sr), int(gr), env.size, env.hazards)
        m = env.map[i]
        rows.append({
            "episode": i, "start_row": int(sr), "start_col": int(sc), "goal_row": int(gr), "goal_col": int(gc),
            "map": "".join("1" if v else "0" for v in m.ravel()), "hazards": int(m.sum()),
            "band_lo": lo, "band_hi": hi,
            "outside_band": int(m[:lo].sum() + m[hi + 1 :].sum()),
            "on_endpoints": int(m[sr, sc]) + int(m[gr, gc]),
            "blind_cost": blind_route_cost(int(sr), int(gr), env.size, env.hazards),
        })  # fmt: skip
    return pd.DataFrame(rows)
