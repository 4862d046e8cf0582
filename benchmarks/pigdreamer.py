"""Speed and memory of pigdreamer's vectorised environment and the training cost of privileged alignment (run by
hand: ``python benchmarks/pigdreamer.py``; ``--quick``: fewer steps and updates, printed, nothing written);
writes benchmarks/results/pigdreamer.json, which the report renders.

- Environment throughput: ours, ``models.pigdreamer.env.HiddenHazard`` (n episodes stepped together in NumPy),
  against :class:`NaiveHazard` (below): one episode per object in plain Python (lists and ``random.Random``, no
  NumPy) with the same rules (7 x 7 grid, 40-step horizon, 5 hazards in the rows that ``env.band`` gives, never on
  the start or the goal, four moves that stay put at the wall, reward +1 at the goal and -0.01 every step, cost 1
  for a step that ends on a hazard, auto-reset) and the same outputs per step: the 13 observation values
  (position and goal / (size - 1), the 3 x 3 hazard window with each hazard shown with probability 0.25), the
  169-cell egocentric privileged map, reward, cost, done. The naive baseline is n such objects stepped in a
  Python loop. Both get the same seeded random actions (0..3), ``STEPS`` steps per pass after an untimed reset,
  at n = 32 (the training's environments per agent) and n = 256; env steps per second = n x steps / seconds.
  Median (and minimum) of ``ENV_REPEAT`` passes, every job of a size interleaved in a rotated order each round;
  the median process CPU seconds (``time.process_time``) beside them.
- Agreement (untimed): both loaded with the same layouts (starts, goals, hazard maps) at visibility 1 (the window
  then deterministic) and stepped with the same actions; observations, privileged maps, rewards, costs and done
  flags compared up to each episode's first end (the next layout is drawn from each one's own generator). And,
  at visibility 0.25 with random layouts, the mean reward, cost and finished episodes per step of both.
- Peak memory: tracemalloc (``_common.traced_peak_mib``: the Python and NumPy allocations while building the
  environments, resetting them and stepping one pass; not the loaded libraries), in separate untimed runs.
- Training: ``models.pigdreamer.ppo.train`` of agent A alone (critics on the history: the SafeDreamer analogue)
  and agent C alone (critics also on the map, plus the alignment loss: the PIGDreamer analogue), seed 0, the
  default EnvConfig and PPOConfig (32 environments x 40 steps per update, 4 epochs x 4 minibatches), ``UPDATES``
  updates each through Lightning, one torch thread; median of ``TRAIN_REPEAT`` runs, A and C alternating in a
  rotated order, after one untimed 1-update warm-up (Lightning's first-call set-up); C / A of the median wall
  seconds, of the minima, and of the median process CPU seconds (less disturbed by other jobs). Peak: torch
  tensor memory (``_common.tensor_peak_mib``, the profiler's allocation events) during a ``PROFILE_UPDATES``-update
  run. C differs from A only by the map input to the critics' oracle encoder and the alignment loss term, and
  ``StackedAgents`` switches both by per-agent factors (A's map times 0, its alignment term times weight 0), so
  A's network does the same arithmetic as C's: the ratio is expected near 1 (what still differs: the two policies
  play different episodes, and finished episodes are reset in a Python loop).
- Reference: PIGDreamer 33.7 h against SafeDreamer 27.5 h of training on an A100-40GB (third-party notes of the
  paper), C / A = 1.23.
- Threads: everything inside ``models.common.threads.one_thread()`` (one torch thread; a shared 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lightning  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks._common import (  # noqa: E402
    load_text,
    stage_times,
    stage_times_text,
    tensor_peak_mib,
    traced_peak_mib,
    write,
)
from models.common.threads import one_thread  # noqa: E402
from models.pigdreamer.agent import AgentSpec, EnvConfig, PPOConfig  # noqa: E402
from models.pigdreamer.env import MOVES, HiddenHazard, band  # noqa: E402
from models.pigdreamer.ppo import train  # noqa: E402

SEED = 0
SIZES = (32, 256)  # environments stepped together
STEPS = 200  # env steps per timed pass (5 horizons)
ENV_REPEAT = 5
UPDATES = 40
TRAIN_REPEAT = 3
PROFILE_UPDATES = 2
QUICK = {"steps": 100, "env_repeat": 3, "updates": 10, "train_repeat": 3}
# training hours on an A100-40GB (third-party notes of the paper): SafeDreamer (A), PIGDreamer (C)
PAPER_A_H, PAPER_C_H = 27.5, 33.7
ENV = EnvConfig()


def log(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------------------------------------ naive baseline
Obs = list[float]
Outcome = tuple[Obs, Obs, float, float, bool]  # observation, privileged map, reward, cost, done


class NaiveHazard:
    """One HiddenHazard episode at a time in plain Python: the rules of ``models.pigdreamer.env`` (module
    docstring), with lists and its own ``random.Random``."""

    def __init__(self, seed: int, size: int = ENV.size, horizon: int = ENV.horizon, hazards: int = ENV.hazards,
                 visibility: float = ENV.visibility, step_penalty: float = ENV.step_penalty):  # fmt: skip
        self.size, self.horizon, self.hazards = size, horizon, hazards
        self.visibility, self.step_penalty = visibility, step_penalty
        self.rand = random.Random(seed)
        self.row = self.col = self.goal_row = self.t = 0
        self.hazard: list[list[bool]] = [[False] * size for _ in range(size)]

    def load(self, start_row: int, goal_row: int, hazard: list[list[bool]]) -> tuple[Obs, Obs]:
        """Start the episode of a given layout (for the agreement check)."""
        self.row, self.col, self.goal_row, self.t = start_row, 0, goal_row, 0
        self.hazard = [list(r) for r in hazard]
        return self.observe()

    def reset(self) -> tuple[Obs, Obs]:
        s = self.size
        start, goal = self.rand.randrange(s), self.rand.randrange(s)
        lo, hi = band(start, goal, s, self.hazards)
        ends = ((start, 0), (goal, s - 1))
        cells = [(r, c) for r in range(lo, hi + 1) for c in range(s) if (r, c) not in ends]
        hazard = [[False] * s for _ in range(s)]
        for r, c in self.rand.sample(cells, self.hazards):
            hazard[r][c] = True
        return self.load(start, goal, hazard)

    def cell(self, r: int, c: int) -> bool:
        return 0 <= r < self.size and 0 <= c < self.size and self.hazard[r][c]

    def observe(self) -> tuple[Obs, Obs]:
        s, r, c = self.size, self.row, self.col
        obs = [r / (s - 1), c / (s - 1), self.goal_row / (s - 1), 1.0]  # the goal is in the last column
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                seen = self.cell(r + dr, c + dc) and self.rand.random() < self.visibility
                obs.append(1.0 if seen else 0.0)
        span = range(-(s - 1), s)
        priv = [1.0 if self.cell(r + dr, c + dc) else 0.0 for dr in span for dc in span]
        return obs, priv

    def step(self, action: int) -> Outcome:
        dr, dc = ((-1, 0), (1, 0), (0, -1), (0, 1))[action]
        last = self.size - 1
        self.row, self.col = min(max(self.row + dr, 0), last), min(max(self.col + dc, 0), last)
        self.t += 1
        at_goal = self.row == self.goal_row and self.col == last
        cost = 1.0 if self.hazard[self.row][self.col] else 0.0
        reward = (1.0 if at_goal else 0.0) - self.step_penalty
        done = at_goal or self.t >= self.horizon
        # auto-reset: a finished episode shows its new start
        obs, priv = self.reset() if done else self.observe()
        return obs, priv, reward, cost, done


def naive_envs(n: int, seed: int, visibility: float = ENV.visibility) -> list[NaiveHazard]:
    return [NaiveHazard(seed * 1_000_003 + i, visibility=visibility) for i in range(n)]


def naive_pass(envs: list[NaiveHazard], actions: list[list[int]]) -> list[Outcome]:
    """Step every environment in a Python loop, a step's outcomes collected in a list; returns the last step's."""
    out: list[Outcome] = []
    for row in actions:
        out = [env.step(a) for env, a in zip(envs, row, strict=True)]
    return out


def ours_pass(env: HiddenHazard, actions: np.ndarray) -> None:
    for a in actions:
        env.step(a)


# ------------------------------------------------------------------------------------------------ helpers
def interleaved(
    jobs: dict[str, Callable[[], object]], repeat: int, cpu: dict[str, list[float]]
) -> dict[str, tuple[float, list[float]]]:
    """(median, runs) of wall seconds per job over ``repeat`` rounds, the jobs in a rotated order each round (a load
    that changes over the run then falls on every job alike); each run's process CPU seconds go into ``cpu``."""
    keys = list(jobs)
    times: dict[str, list[float]] = {k: [] for k in keys}
    for k in keys:
        cpu[k] = []
    for rep in range(repeat):
        for k in keys[rep % len(keys) :] + keys[: rep % len(keys)]:
            t0, c0 = time.perf_counter(), time.process_time()
            jobs[k]()
            times[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    return {k: (statistics.median(v), v) for k, v in times.items()}


def random_actions(n: int, steps: int, stream: int) -> np.ndarray:
    return np.random.default_rng([SEED, stream, n]).integers(0, len(MOVES), (steps, n))


# ------------------------------------------------------------------------------------------------ checks
def agreement(n: int = 32) -> str:
    """Both implementations on the same layouts and actions at visibility 1, compared up to each episode's end."""
    ours = HiddenHazard(n=n, visibility=1.0, seed=SEED)
    obs, priv = ours.reset()
    naive = naive_envs(n, SEED, visibility=1.0)
    first = [
        e.load(int(ours.pos[i, 0]), int(ours.goal[i, 0]), ours.map[i].tolist()) for i, e in enumerate(naive)
    ]
    bad = int(sum(not (np.allclose(o, obs[i]) and np.allclose(p, priv[i])) for i, (o, p) in enumerate(first)))
    live = np.ones(n, bool)
    compared = 0
    for a in random_actions(n, ENV.horizon, stream=9):
        s = ours.step(a)
        for i in np.flatnonzero(live):
            o, p, r, c, d = naive[i].step(int(a[i]))
            same = bool(np.isclose(r, s.reward[i]) and c == s.cost[i] and d == s.done[i])
            if not d:  # after the end, the next layout comes from each one's own generator
                same = same and bool(np.allclose(o, s.obs[i]) and np.allclose(p, s.privileged[i]))
            bad += not same
            compared += 1
        live &= ~s.done
    return f"{compared} steps of {n} shared layouts compared at visibility 1: {bad} differ"


def step_stats(n: int, steps: int) -> tuple[str, str]:
    """Mean reward, cost and finished episodes per step of both under random actions (visibility 0.25)."""
    actions = random_actions(n, steps, stream=7)
    ours = HiddenHazard(n=n, seed=SEED + 1)
    ours.reset()
    tot = np.zeros(3)
    for a in actions:
        s = ours.step(a)
        tot += [s.reward.sum(), s.cost.sum(), s.done.sum()]
    naive = naive_envs(n, SEED + 1)
    for e in naive:
        e.reset()
    ntot = np.zeros(3)
    for row in actions.tolist():
        for e, a in zip(naive, row, strict=True):
            _, _, r, c, d = e.step(a)
            ntot += [r, c, d]

    def text(t: np.ndarray) -> str:
        m = t / (n * steps)
        return f"reward {m[0]:.4f}, cost {m[1]:.4f}, episodes ended {m[2]:.4f} per step"

    return text(tot), text(ntot)


# ------------------------------------------------------------------------------------------------ measures
def env_rows(steps: int, repeat: int) -> tuple[list[dict[str, Any]], dict[int, float]]:
    check = agreement()
    log(f"agreement: {check}")
    rows: list[dict[str, Any]] = []
    speedups: dict[int, float] = {}
    for n in SIZES:
        actions = random_actions(n, steps, stream=1)
        listed = actions.tolist()
        ours = HiddenHazard(n=n, seed=SEED)
        ours.reset()
        naive = naive_envs(n, SEED)
        for e in naive:
            e.reset()
        ours_pass(ours, actions[:10])  # warm-up
        naive_pass(naive, listed[:10])
        jobs: dict[str, Callable[[], object]] = {
            "ours": lambda ours=ours, actions=actions: ours_pass(ours, actions),
            "naive": lambda naive=naive, listed=listed: naive_pass(naive, listed),
        }
        cpu: dict[str, list[float]] = {}
        times = interleaved(jobs, repeat, cpu)

        def fresh_ours(n: int = n, actions: np.ndarray = actions) -> None:
            env = HiddenHazard(n=n, seed=SEED)
            env.reset()
            ours_pass(env, actions)

        def fresh_naive(n: int = n, listed: list[list[int]] = listed) -> None:
            envs = naive_envs(n, SEED)
            for e in envs:
                e.reset()
            naive_pass(envs, listed)

        peaks = {"ours": traced_peak_mib(fresh_ours), "naive": traced_peak_mib(fresh_naive)}
        stats_ours, stats_naive = step_stats(n, steps)
        rate = {k: n * steps / t[0] for k, t in times.items()}
        speedups[n] = rate["ours"] / rate["naive"]
        log(
            f"n = {n}: ours {rate['ours']:,.0f} steps/s (peak {peaks['ours']:.3f} MiB), naive "
            f"{rate['naive']:,.0f} steps/s (peak {peaks['naive']:.3f} MiB): {speedups[n]:.1f}x"
        )
        for key, method, stats in (
            ("ours", "ours, HiddenHazard (n episodes stepped together in NumPy)", stats_ours),
            ("naive", "naive: n plain-Python single-episode environments in a Python loop", stats_naive),
        ):
            sec, runs = times[key]
            rows.append({
                "what": "environment steps per second (random actions)",
                "method": method,
                "setting": f"n = {n} environments, {steps} steps per pass (7 x 7, horizon 40, 5 hazards, "
                           f"visibility 0.25, egocentric map)",
                "seconds": round(sec, 4),
                "min (s)": round(min(runs), 4),
                "runs (s)": ", ".join(f"{t:.4f}" for t in runs),
                "CPU (s)": round(statistics.median(cpu[key]), 4),
                "steps per second": round(rate[key]),
                "peak MiB": round(peaks[key], 3),
                "speed-up vs naive": round(speedups[n], 1) if key == "ours" else "",
                "C / A": "",
                "check": f"{stats} ({n * steps} untimed steps, own layouts)"
                         + (f"; {check}" if key == "ours" else ""),
            })  # fmt: skip
    return rows, speedups


def train_rows(updates: int, repeat: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    train([AgentSpec("A", SEED)], 1, ENV, PPOConfig())  # warm-up: Lightning's first-call set-up
    last: dict[str, Any] = {}

    def job(variant: str) -> Callable[[], None]:
        def run() -> None:
            last[variant] = train([AgentSpec(variant, SEED)], updates, ENV, PPOConfig())

        return run

    cpu: dict[str, list[float]] = {}
    times = interleaved({"A": job("A"), "C": job("C")}, repeat, cpu)
    cpu_sec = {v: statistics.median(c) for v, c in cpu.items()}
    cpu_ratio = cpu_sec["C"] / cpu_sec["A"]
    peaks = {v: tensor_peak_mib(lambda v=v: train([AgentSpec(v, SEED)], PROFILE_UPDATES, ENV, PPOConfig()))
             for v in ("A", "C")}  # fmt: skip
    ratio = times["C"][0] / times["A"][0]
    min_ratio = min(times["C"][1]) / min(times["A"][1])
    cfg = PPOConfig()
    env_steps = cfg.envs * cfg.rollout * updates
    log(f"training, {updates} updates: A {times['A'][0]:.2f} s, C {times['C'][0]:.2f} s, C / A {ratio:.3f} "
        f"(minima {min_ratio:.3f}, CPU seconds {cpu_ratio:.3f}); peaks A {peaks['A']:.2f}, C {peaks['C']:.2f} MiB")  # fmt: skip
    rows = []
    for v, method in (
        ("A", "ours, agent A alone: critics on the history (SafeDreamer analogue)"),
        ("C", "ours, agent C alone: critics on history + map, alignment loss (PIGDreamer analogue)"),
    ):
        sec, runs = times[v]
        h = last[v].history
        rows.append({
            "what": "training wall time (PPO-Lagrangian, Lightning)",
            "method": method,
            "setting": f"{updates} updates, seed {SEED}, {cfg.envs} environments x {cfg.rollout} steps per update, "
                       f"{cfg.epochs} epochs x {cfg.minibatches} minibatches, hidden {cfg.hidden}; one torch thread",
            "seconds": round(sec, 2),
            "min (s)": round(min(runs), 2),
            "runs (s)": ", ".join(f"{t:.2f}" for t in runs),
            "CPU (s)": round(cpu_sec[v], 2),
            "steps per second": round(env_steps / sec),
            "peak MiB": round(peaks[v], 2),
            "speed-up vs naive": "",
            "C / A": round(ratio, 3) if v == "C" else "",
            "check": f"{len(h)} updates run, {1e3 * sec / updates:.0f} ms per update; steps per second = "
                     f"environment steps ({env_steps}) / seconds; last update: alignment loss "
                     f"{h[-1]['align']:.4f} (weight {1.0 if v == 'C' else 0.0:g}), lambda {h[-1]['lambda'][0]:.3f}; "
                     f"peak: torch tensor memory of a {PROFILE_UPDATES}-update run"
                     + (f"; C / A of the minima {min_ratio:.3f}, of the median CPU seconds {cpu_ratio:.3f}"
                        if v == "C" else ""),
        })  # fmt: skip
    info = {
        "ratio": ratio,
        "min_ratio": min_ratio,
        "cpu_ratio": cpu_ratio,
        "A": times["A"][0],
        "C": times["C"][0],
    }
    return rows, info


def paper_rows() -> list[dict[str, Any]]:
    rows = []
    for name, hours in (("SafeDreamer", PAPER_A_H), ("PIGDreamer", PAPER_C_H)):
        rows.append({
            "what": "training wall time (paper)",
            "method": f"paper: {name}" + (" (A's counterpart)" if name == "SafeDreamer" else " (C's counterpart)"),
            "setting": "A100-40GB, the paper's Safety-Gymnasium tasks (third-party notes of the paper)",
            "seconds": round(hours * 3600),
            "min (s)": "",
            "runs (s)": "",
            "CPU (s)": "",
            "steps per second": "",
            "peak MiB": "",
            "speed-up vs naive": "",
            "C / A": round(PAPER_C_H / PAPER_A_H, 2) if name == "PIGDreamer" else "",
            "check": f"{hours} h",
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick = f"{QUICK['steps']} env steps, {QUICK['updates']} updates; print, write nothing"
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--updates", type=int, default=None, help=f"training updates (default {UPDATES})")
    parser.add_argument("--repeat", type=int, default=None, help=f"runs of A and C (default {TRAIN_REPEAT})")
    a = parser.parse_args()
    steps, env_repeat = (QUICK["steps"], QUICK["env_repeat"]) if a.quick else (STEPS, ENV_REPEAT)
    updates = a.updates or (QUICK["updates"] if a.quick else UPDATES)
    repeat = a.repeat or (QUICK["train_repeat"] if a.quick else TRAIN_REPEAT)
    start = time.perf_counter()
    load = load_text()
    with one_thread():
        threads = torch.get_num_threads()
        versions = (f"torch {torch.__version__} ({threads} thread), lightning {lightning.__version__}, numpy "
                    f"{np.__version__}, Python {platform.python_version()}")  # fmt: skip
        log(f"{load}; {os.cpu_count()} cores; {versions}")
        rows, speedups = env_rows(steps, env_repeat)
        trained, info = train_rows(updates, repeat)
        rows += trained + paper_rows()
    stages = stage_times("pigdreamer")
    if stages:
        rows.append({"what": "quick profile, `dvc repro` (last run's stage wall times)",
                     "method": stage_times_text(stages), "check": f"total {sum(stages.values()):.0f} s"})  # fmt: skip
    wall = time.perf_counter() - start
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    end_load = "load average {:.2f} (1 min), {:.2f} (5 min) at the end".format(*os.getloadavg()[:2])
    paper_ratio = PAPER_C_H / PAPER_A_H
    note = (
        f"CPU ({os.cpu_count()} cores, {platform.machine()}, shared with other jobs), {versions}; {load}; "
        f"{end_load}. Environment: ours (HiddenHazard, NumPy, n episodes at once) against a naive plain-Python "
        "single-episode environment with the same rules and outputs (13 observation values, the 169-cell "
        "egocentric map, reward, cost, done; auto-reset) stepped in a Python loop over n, the same seeded random "
        f"actions, {steps} steps per pass, medians of {env_repeat} interleaved passes: ours is "
        + ", ".join(f"{s:.1f}x faster at n = {n}" for n, s in speedups.items())
        + ". They agree step for step on shared layouts at visibility 1 (the check column). Peak MiB: tracemalloc "
        "peak (Python and NumPy allocations while building, resetting and stepping one pass) for the "
        "environments; torch tensor memory (profiler allocation events) for training, where tracemalloc does "
        f"not see torch's allocator. Training: agent A alone and agent C alone, {updates} updates each, medians "
        f"of {repeat} runs alternating in rotated order after a 1-update warm-up: A {info['A']:.2f} s, C "
        f"{info['C']:.2f} s, C / A = {info['ratio']:.3f} (of the minima {info['min_ratio']:.3f}, of the median process CPU seconds "
        f"{info['cpu_ratio']:.3f}, which other jobs' load disturbs less than wall time), against the "
        f"paper's PIGDreamer {PAPER_C_H} h / SafeDreamer {PAPER_A_H} h = {paper_ratio:.2f} on an A100-40GB "
        "(third-party notes of the paper). In our analogue C differs from A only by the map input to the critics' "
        "oracle encoder and the alignment loss term, so the ratio measures those extra costs alone (no world "
        "model, posterior or imagination as in the paper). Moreover this implementation stacks every variant in "
        "one network and switches them by per-agent factors: A feeds the oracle encoder the map multiplied by 0 "
        "and computes the alignment term with weight 0, so A's and C's networks do the same arithmetic and a C / A "
        "near 1 is expected: a departure from 1 is timing noise on this shared machine (compare the minima and "
        "the CPU seconds) or the two policies' different episodes (HiddenHazard resets finished episodes in a "
        "Python loop), not a cost of privileged alignment. "
        f"Process peak RSS {maxrss:.0f} MiB. Benchmark wall time {wall:.0f} s."
        + (f" Quick profile's stages: {stage_times_text(stages)}." if stages else "")
    )
    columns = list(rows[0])
    if a.quick:
        log(json.dumps({"columns": columns, "rows": rows, "note": note}, indent=2))
        return
    write("pigdreamer", columns, rows, note=note)


if __name__ == "__main__":
    main()
