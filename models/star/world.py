"""The synthetic skill world that stands in for LIBERO (which needs a simulator and GPUs): a 2-D point mass
with a gripper.

State ``(x, y, g)``: the position and the gripper (g = +1 closed, -1 open; it starts open). An action is
``(dx, dy, c)``: the position moves by (dx, dy), and the gripper takes the sign of the command c. A chunk is H
consecutive actions.

Eight primitives of H steps (0.1 per step of path length, 0.1 H in all: 0.8 at H = 8)::

    0 right, 1 up, 2 left, 3 down   straight; speed profile constant (0.1 per step) or bell
                                    (proportional to sin^2(pi (t + 1/2) / H), the same total), drawn per instance
    4 arc left, 5 arc right         a quarter circle of radius 0.1 H / (pi / 2), leaving along +x and turning
                                    towards +y (left) or -y (right)
    6 grasp, 7 release              no motion; the command +1 (grasp) or -1 (release)

During a move the command holds the gripper's state. Every action gets N(0, noise^2) per component. A task is a
seeded sequence of 4 to 6 primitives (a grasp only while open, a release only while closed); its goal is the
start plus the sum of the primitives' nominal displacements, with the final gripper state. Success: the final
position within ``tolerance`` of the goal and the gripper right, after as many chunks as the task has
primitives."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NAMES = ("right", "up", "left", "down", "arc_left", "arc_right", "grasp", "release")
GRASP, RELEASE = 6, 7
STEP = 0.1
ACTION_DIM = 3


@dataclass(frozen=True)
class Task:
    primitives: tuple[int, ...]
    horizon: int = 8  # steps per primitive (the chunk length H)

    @property
    def displacement(self) -> np.ndarray:
        return sum((nominal(p, self.horizon).sum(0) for p in self.primitives), np.zeros(2))

    @property
    def gripper(self) -> float:
        """The final gripper state (+1 closed, -1 open)."""
        g = -1.0
        for p in self.primitives:
            g = 1.0 if p == GRASP else -1.0 if p == RELEASE else g
        return g


def profile(H: int, bell: bool) -> np.ndarray:
    """Per-step path lengths summing to H * STEP: constant, or bell-shaped."""
    if not bell:
        return np.full(H, STEP)
    s = np.sin(np.pi * (np.arange(H) + 0.5) / H) ** 2
    return s / s.sum() * STEP * H


def nominal(p: int, H: int = 8, bell: bool = False) -> np.ndarray:
    """The noise-free motion (H, 2) of primitive ``p``."""
    if p < 4:
        direction = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]][p], float)
        return profile(H, bell)[:, None] * direction[None, :]
    if p in (4, 5):
        theta = (np.arange(H) + 0.5) / H * (np.pi / 2)
        sign = 1.0 if p == 4 else -1.0
        return STEP * np.stack([np.cos(theta), sign * np.sin(theta)], 1)
    return np.zeros((H, 2))


def make_tasks(
    rng: np.random.Generator, n: int, lengths: tuple[int, int] = (4, 6), horizon: int = 8
) -> list[Task]:
    tasks = []
    while len(tasks) < n:
        length = int(rng.integers(lengths[0], lengths[1] + 1))
        g, seq = -1.0, []
        for _ in range(length):
            allowed = [p for p in range(8) if not (p == GRASP and g > 0) and not (p == RELEASE and g < 0)]
            p = int(rng.choice(allowed))
            g = 1.0 if p == GRASP else -1.0 if p == RELEASE else g
            seq.append(p)
        task = Task(tuple(seq), horizon)
        if task not in tasks:
            tasks.append(task)
    return tasks


def demo(task: Task, rng: np.random.Generator, H: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """One demonstration: actions (len(task) * H, 3) with noise, and the states (len(task), 3) before each
    primitive (the start drawn by the caller is added there)."""
    g, actions, states = -1.0, [], []
    pos = np.zeros(2)
    for p in task.primitives:
        states.append([pos[0], pos[1], g])
        motion = nominal(p, H, bool(rng.random() < 0.5)) if p < 4 else nominal(p, H)
        g = 1.0 if p == GRASP else -1.0 if p == RELEASE else g
        a = np.concatenate([motion, np.full((H, 1), g)], 1)
        a = a + rng.normal(0.0, noise, a.shape)
        actions.append(a)
        pos = pos + a[:, :2].sum(0)
        g = 1.0 if a[-1, 2] > 0 else -1.0
    return np.concatenate(actions), np.asarray(states)


def demos(
    tasks: list[Task], per_task: int, rng: np.random.Generator, H: int, noise: float, start: float
) -> dict[str, np.ndarray]:
    """``per_task`` demonstrations of every task, starts uniform in [-start, start]^2.

    Returns flat arrays: ``actions`` (steps, 3) of all demos back to back, ``demo_offset`` (demos + 1),
    ``demo_task`` and ``demo_start`` (demos, 2); per primitive (the stage-2 samples): ``prim_demo``,
    ``prim_index`` (its position in the task), ``prim_state`` (3: position, gripper before it)."""
    acts, offsets, d_task, d_start, p_demo, p_index, p_state = [], [0], [], [], [], [], []
    for t, task in enumerate(tasks):
        for _ in range(per_task):
            s = rng.uniform(-start, start, 2)
            a, states = demo(task, rng, H, noise)
            states[:, :2] += s
            i = len(d_task)
            acts.append(a)
            offsets.append(offsets[-1] + len(a))
            d_task.append(t)
            d_start.append(s)
            p_demo += [i] * len(states)
            p_index += list(range(len(states)))
            p_state.append(states)
    return {
        "actions": np.concatenate(acts).astype(np.float32),
        "demo_offset": np.asarray(offsets, np.int64),
        "demo_task": np.asarray(d_task, np.int64),
        "demo_start": np.asarray(d_start, np.float32),
        "prim_demo": np.asarray(p_demo, np.int64),
        "prim_index": np.asarray(p_index, np.int64),
        "prim_state": np.concatenate(p_state).astype(np.float32),
    }


def windows(
    actions: np.ndarray, offsets: np.ndarray, H: int, stride: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Every chunk of H consecutive actions inside one demo (start every ``stride`` steps): chunks (n, H, A) and
    (demo, start step) per chunk."""
    chunks, where = [], []
    for i in range(len(offsets) - 1):
        a = actions[offsets[i] : offsets[i + 1]]
        for s in range(0, len(a) - H + 1, stride):
            chunks.append(a[s : s + H])
            where.append((i, s))
    A = actions.shape[1]
    return (
        np.asarray(chunks, np.float32).reshape(-1, H, A),
        np.asarray(where, np.int64).reshape(-1, 2),
    )


class World:
    """Vectorised episodes: ``n`` point masses, each on its own task, from its own start."""

    def __init__(self, tasks: list[Task], task_ids: np.ndarray, starts: np.ndarray):
        self.tasks = tasks
        self.task_ids = np.asarray(task_ids)
        self.pos = np.asarray(starts, float).copy()
        self.grip = -np.ones(len(self.pos))
        self.goal = self.pos + np.stack([tasks[t].displacement for t in self.task_ids])
        self.goal_grip = np.asarray([tasks[t].gripper for t in self.task_ids])
        self.horizon = np.asarray([len(tasks[t].primitives) for t in self.task_ids])

    def state(self) -> np.ndarray:
        return np.concatenate([self.pos, self.grip[:, None]], 1).astype(np.float32)

    def execute(self, actions: np.ndarray, active: np.ndarray | None = None) -> None:
        """Apply each episode's actions (n, steps, 3); episodes with ``active`` False stand still."""
        actions = np.asarray(actions, float)
        if active is not None:
            actions = np.where(np.asarray(active)[:, None, None], actions, 0.0)
            keep = ~np.asarray(active)
        else:
            keep = np.zeros(len(self.pos), bool)
        self.pos = self.pos + actions[:, :, :2].sum(1)
        self.grip = np.where(keep, self.grip, np.where(actions[:, -1, 2] > 0, 1.0, -1.0))

    def success(self, tolerance: float) -> np.ndarray:
        near = np.linalg.norm(self.pos - self.goal, axis=1) <= tolerance
        return near & (self.grip == self.goal_grip)
