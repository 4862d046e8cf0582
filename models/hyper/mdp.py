"""Tabular MDPs as arrays, the issue's grids, and gymnasium's toy-text environments read into the same form.

An MDP has S states, A actions and at most M outcomes per (s, a): ``next``, ``prob``, ``reward`` and
``terminal`` arrays of shape (S, A, M) (deterministic MDPs have M = 1), an initial-state distribution ``start``
(S,), and ``success`` (S, A, M): the transitions that count as reaching the goal (the terminal transitions with
the largest terminal reward: the grid's goal, not its trap; FrozenLake's goal, not a hole; CliffWalking's and
Taxi's only terminal transitions).

The grid (the issue's, not the spec's calibration): 11 x 11, 4 actions (bumping a wall stays), start (5, 1),
terminal goal (10, 10) worth +1, distractor (5, 0) worth +0.01 on every step that ends there (non-terminal: the
agent can stay by bumping the wall), H = 60, gamma = 0.98. Staying on the distractor returns
0.01 sum_{t<60} 0.98^t = 0.351 from one step away; the goal 0.98^13 = 0.769 (14 steps). ``grid-trap``: the
distractor is terminal and worth +0.2."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MOVES = np.array([[0, 1], [0, -1], [-1, 0], [1, 0]])  # up, down, left, right
GYM_IDS = ("FrozenLake-v1", "CliffWalking-v1", "Taxi-v4")
ENVS = ("grid", "grid-trap", *GYM_IDS)


@dataclass(frozen=True)
class MDP:
    name: str
    next: np.ndarray
    prob: np.ndarray
    reward: np.ndarray
    terminal: np.ndarray
    success: np.ndarray
    start: np.ndarray
    horizon: int
    gamma: float

    @property
    def states(self) -> int:
        return self.next.shape[0]

    @property
    def actions(self) -> int:
        return self.next.shape[1]


def grid(
    size: int = 11,
    start: tuple[int, int] = (5, 1),
    goal: tuple[int, int] = (10, 10),
    distractor: tuple[int, int] = (5, 0),
    distractor_reward: float = 0.01,
    trap: bool = False,
    trap_reward: float = 0.2,
    horizon: int = 60,
    gamma: float = 0.98,
) -> MDP:
    S = size * size

    def idx(x: int, y: int) -> int:
        return x * size + y

    nxt = np.zeros((S, 4, 1), np.int64)
    rew = np.zeros((S, 4, 1))
    term = np.zeros((S, 4, 1), bool)
    succ = np.zeros((S, 4, 1), bool)
    for x in range(size):
        for y in range(size):
            for a, (dx, dy) in enumerate(MOVES):
                nx, ny = min(max(x + dx, 0), size - 1), min(max(y + dy, 0), size - 1)
                s, s2 = idx(x, y), idx(nx, ny)
                nxt[s, a, 0] = s2
                if (nx, ny) == goal:
                    rew[s, a, 0], term[s, a, 0], succ[s, a, 0] = 1.0, True, True
                elif (nx, ny) == distractor:
                    rew[s, a, 0] = trap_reward if trap else distractor_reward
                    term[s, a, 0] = trap
    p0 = np.zeros(S)
    p0[idx(*start)] = 1.0
    name = "grid-trap" if trap else "grid"
    return MDP(name, nxt, np.ones((S, 4, 1)), rew, term, succ, p0, horizon, gamma)


def from_gymnasium(env_id: str, horizon: int | None = None, gamma: float = 0.98) -> MDP:
    """A toy-text environment's transition table (``env.unwrapped.P``) as an :class:`MDP` (FrozenLake without
    slipping, as the issue's CLI test uses it). Raises ValueError for an unknown id or non-Discrete spaces."""
    import gymnasium as gym
    from gymnasium import spaces

    kwargs = {"is_slippery": False} if env_id.startswith("FrozenLake") else {}
    try:
        env = gym.make(env_id, **kwargs)
    except gym.error.Error as exc:
        raise ValueError(f"unknown environment {env_id!r} ({str(exc).splitlines()[0]})") from None
    if not isinstance(env.observation_space, spaces.Discrete) or not isinstance(
        env.action_space, spaces.Discrete
    ):
        raise ValueError(
            f"{env_id}: needs Discrete observation and action spaces, has {env.observation_space}"
        )
    table = getattr(env.unwrapped, "P", None)
    if not isinstance(table, dict):
        raise ValueError(f"{env_id}: no transition table (env.unwrapped.P): not a tabular environment")
    S, A = int(env.observation_space.n), int(env.action_space.n)
    M = max(len(table[s][a]) for s in range(S) for a in range(A))
    nxt = np.zeros((S, A, M), np.int64)
    prob = np.zeros((S, A, M))
    rew = np.zeros((S, A, M))
    term = np.zeros((S, A, M), bool)
    for s in range(S):
        for a in range(A):
            for m, (p, s2, r, done) in enumerate(table[s][a]):
                nxt[s, a, m], prob[s, a, m], rew[s, a, m], term[s, a, m] = int(s2), p, r, bool(done)
    best = rew[term & (prob > 0)].max() if (term & (prob > 0)).any() else np.inf
    succ = term & (prob > 0) & (rew == best)
    start = np.asarray(getattr(env.unwrapped, "initial_state_distrib", np.eye(S)[0]), float)
    limit = horizon or (env.spec.max_episode_steps if env.spec and env.spec.max_episode_steps else 100)
    return MDP(env_id, nxt, prob, rew, term, succ, start / start.sum(), int(limit), gamma)


def make(name: str, horizon: int | None = None, gamma: float = 0.98) -> MDP:
    if name == "grid":
        return grid(horizon=horizon or 60, gamma=gamma)
    if name == "grid-trap":
        return grid(trap=True, horizon=horizon or 60, gamma=gamma)
    return from_gymnasium(name, horizon, gamma)


def cells(mdp: MDP, size: int = 11):
    """A grid MDP as a table: per cell (x, y, state), its kind (start, goal, distractor, trap, floor), the reward
    for arriving there and whether arriving ends the episode (read back from the transition arrays)."""
    import pandas as pd

    rows = []
    start = int(np.argmax(mdp.start))
    for s in range(mdp.states):
        into = (mdp.next[:, :, 0] == s) & (mdp.next[:, :, 0] != np.arange(mdp.states)[:, None])
        reward = float(mdp.reward[:, :, 0][into].max()) if into.any() else 0.0
        terminal = bool(mdp.terminal[:, :, 0][into].any()) if into.any() else False
        goal = bool(mdp.success[:, :, 0][into].any()) if into.any() else False
        kind = (
            "start"
            if s == start
            else "goal"
            if goal
            else ("trap" if terminal else "distractor")
            if reward
            else "floor"
        )
        rows.append(
            {"state": s, "x": s // size, "y": s % size, "kind": kind, "reward": reward, "terminal": terminal}
        )
    return pd.DataFrame(rows)


def from_cells(cells, horizon: int, gamma: float) -> MDP:
    """The grid MDP a :func:`cells` table describes (the train stage reads the validated table, not params)."""

    def where(kind: str) -> tuple[int, int]:
        row = cells[cells.kind == kind].iloc[0]
        return int(row.x), int(row.y)

    trap = bool((cells.kind == "trap").any())
    side = cells[cells.kind == ("trap" if trap else "distractor")].iloc[0]
    return grid(
        size=int(cells.x.max()) + 1,
        start=where("start"),
        goal=where("goal"),
        distractor=(int(side.x), int(side.y)),
        distractor_reward=float(side.reward),
        trap=trap,
        trap_reward=float(side.reward),
        horizon=horizon,
        gamma=gamma,
    )
