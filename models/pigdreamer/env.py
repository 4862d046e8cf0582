"""HiddenHazard: a vectorised partially observable grid with hazards, a gymnasium-style reset/step API in numpy.

A size x size grid and ``horizon`` steps; four moves (up, down, left, right; a move into the wall stays put).
Each episode starts in a random cell of the left column with the goal in a random cell of the right column, and
``hazards`` distinct hazard cells drawn in the band of rows between the start's and the goal's (inclusive;
widened to at least ``hazards`` + 1 cells, never on the start or the goal). Reward +1 on reaching the goal
(the episode ends) and ``step_penalty`` every step; cost 1 for every step that ends on a hazard.

Observation (the actor's): the position and the goal (each coordinate / (size - 1)) and the 3 x 3 window of hazards
around the agent, where each hazard cell is shown with probability ``visibility`` at each step (a sensor that misses
risk; cells outside the grid read 0). Privileged (the critics' and the oracle's): the full hazard map.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])  # (row, column): up, down, left, right


@dataclass
class Step:
    obs: np.ndarray  # (n, 13): position (2), goal (2), window (9)
    privileged: np.ndarray  # (n, size * size): the hazard map
    reward: np.ndarray  # (n,)
    cost: np.ndarray  # (n,)
    done: np.ndarray  # (n,) bool: the goal reached or the horizon over


class HiddenHazard:
    """``n`` independent episodes stepped together; finished episodes restart on the next step."""

    def __init__(self, n: int = 32, size: int = 7, horizon: int = 40, hazards: int = 5, visibility: float = 0.25,
                 step_penalty: float = 0.01, seed: int = 0):  # fmt: skip
        if size < 3:
            raise ValueError(f"size {size} must be >= 3")
        if not 0 <= hazards <= size * size - 2:
            raise ValueError(f"hazards {hazards} must be between 0 and {size * size - 2} (the cells but two)")
        if not 0.0 <= visibility <= 1.0:
            raise ValueError(f"visibility {visibility} must lie in [0, 1]")
        if horizon < 1 or n < 1:
            raise ValueError(f"horizon {horizon} and n {n} must be >= 1")
        self.n, self.size, self.horizon, self.hazards = n, size, horizon, hazards
        self.visibility, self.step_penalty = visibility, step_penalty
        self.g = np.random.default_rng(seed)
        self.pos = np.zeros((n, 2), int)
        self.goal = np.zeros((n, 2), int)
        self.map = np.zeros((n, size, size), bool)
        self.t = np.zeros(n, int)

    @property
    def obs_dim(self) -> int:
        return 13

    @property
    def privileged_dim(self) -> int:
        return self.size * self.size

    def _new(self, idx: np.ndarray) -> None:
        s = self.size
        k = len(idx)
        self.pos[idx] = np.stack([self.g.integers(0, s, k), np.zeros(k, int)], 1)
        self.goal[idx] = np.stack([self.g.integers(0, s, k), np.full(k, s - 1)], 1)
        self.map[idx] = False
        self.t[idx] = 0
        for i in idx:  # a handful of cells per episode: the loop is over episodes that just ended
            lo, hi = sorted((self.pos[i, 0], self.goal[i, 0]))
            while (hi - lo + 1) * s - 2 < self.hazards + 1:
                lo, hi = max(0, lo - 1), min(s - 1, hi + 1)
            cells = [(r, c) for r in range(lo, hi + 1) for c in range(s)
                     if (r, c) != tuple(self.pos[i]) and (r, c) != tuple(self.goal[i])]  # fmt: skip
            pick = self.g.choice(len(cells), self.hazards, replace=False)
            for j in pick:
                self.map[i][cells[j]] = True

    def _observe(self) -> tuple[np.ndarray, np.ndarray]:
        s = self.size
        padded = np.pad(self.map, ((0, 0), (1, 1), (1, 1)))
        r, c = self.pos[:, 0], self.pos[:, 1]
        rows = r[:, None, None] + np.arange(3)[None, :, None]
        cols = c[:, None, None] + np.arange(3)[None, None, :]
        window = padded[np.arange(self.n)[:, None, None], rows, cols]
        shown = window & (self.g.random(window.shape) < self.visibility)
        obs = np.concatenate([self.pos / (s - 1), self.goal / (s - 1), shown.reshape(self.n, 9)], 1)
        return obs.astype(np.float32), self.map.reshape(self.n, -1).astype(np.float32)

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
