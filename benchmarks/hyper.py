"""Speed and memory of Hyper's batched sweep against a plain per-run loop of the same agents over a gymnasium
environment (run by hand: python benchmarks/hyper.py); writes benchmarks/results/hyper.json, which the report
renders.

- Ours: ``models.hyper.agents.sweep(grid(), runs, EPISODES, every=EPISODES)`` (every run in lockstep as NumPy
  arrays, one greedy evaluation at the end), runs = ``runs_of(["curiosity", "decouple", "hyper"], [0.01, 0.1,
  1, 10, 100], seeds)``: 15 runs (1 seed) and 150 runs (10 seeds), the same ``EPISODES`` = 50 each.
- Reference (:func:`reference`): for each run, for each episode, step :class:`GridEnv` (a ``gymnasium.Env``
  with Discrete(121) observations and Discrete(4) actions: the 11 x 11 grid, start (5, 1), goal (10, 10)
  terminal +1, distractor (5, 0) +0.01 non-terminal, walls bump) wrapped in ``TimeLimit(60)``, updating the
  run's two Q-tables (NumPy (121, 4) arrays) one transition at a time with the same rules (alpha 0.5,
  epsilon 0.05, bonus 1 / sqrt(N(s')), bootstrap through truncation, Hyper acts on Q_mu for t < h =
  min(Geom(0.1), 60)), then one greedy episode per run. It draws each run's uniforms from the same per-run
  stream as ours, in the same layout, so the two take the same actions: the evaluated tables of every run
  are asserted bitwise equal to ours' (captured by wrapping ``agents.evaluate`` in an untimed extra run).
- Steps: the reference counts its ``env.step`` calls; ours takes the same steps (same streams, identical
  tables), so its steps per second use that count (ours' arrays also compute the finished runs of an episode
  until the last run ends; those are not counted). Ratio = ours / reference in runs x episodes per second
  (the same as in steps per second). At 50 episodes almost every episode runs to the time limit (about 60
  steps; the learning check's 2,000 episodes average about 50).
- Timing: one warm-up each, then ``REPEAT`` = 3 repetitions, the two alternated within each repetition and
  their order rotated; the median is reported, every run listed. Peak memory: tracemalloc's peak
  (``traced_peak_mib``) of one untimed call each at ``MEM_EPISODES`` = 5 episodes (the peak does not grow with
  the episodes: both allocate per run, not per episode).
- The reference learns: one Hyper run at beta = 1 for 2,000 episodes reaches the goal greedily (asserted).
- The deep variant (models/hyper/deep.py): ``DEEP_RUNS`` (curiosity, decouple, hyper at beta 1 and 10, 2 seeds:
  12 runs) for ``DEEP_STEPS`` environment steps each, as one batched Lightning module (ours) against one module
  per run trained one after the other (the same code at R = 1); the same median of ``REPEAT`` alternated
  repetitions, and the torch allocator's peak (``tensor_peak_mib``) of one untimed call each.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from gymnasium import spaces  # noqa: E402
from gymnasium.wrappers import TimeLimit  # noqa: E402

from benchmarks._common import (  # noqa: E402
    load_text,
    stage_times,
    stage_times_text,
    tensor_peak_mib,
    traced_peak_mib,
    write,
)
from models.hyper import agents  # noqa: E402
from models.hyper.mdp import grid  # noqa: E402

AGENTS = ["curiosity", "decouple", "hyper"]
BETAS = [0.01, 0.1, 1, 10, 100]
SEEDS = (1, 10)  # 15 and 150 runs
EPISODES = 50
REPEAT = 3
MEM_EPISODES = 5
LEARN_EPISODES = 2000
SIZE, H, GAMMA = 11, 60, 0.98
ALPHA, EPSILON, P = 0.5, 0.05, 0.1
OURS, REF = "ours: agents.sweep (batched NumPy)", "reference: per-run loop, gymnasium Env"
DEEP_STEPS, DEEP_WARMUP = 600, 100
DEEP_OURS, DEEP_REF = "deep: one batched module (all runs)", "deep: one module per run, one after another"


class GridEnv(gym.Env):
    """The issue's 11 x 11 grid; state x * 11 + y; actions up, down, left, right; bumping a wall stays."""

    MOVES = ((0, 1), (0, -1), (-1, 0), (1, 0))

    def __init__(self):
        self.observation_space = spaces.Discrete(SIZE * SIZE)
        self.action_space = spaces.Discrete(4)
        self.pos = (5, 1)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = (5, 1)
        return 5 * SIZE + 1, {}

    def step(self, action):
        dx, dy = self.MOVES[action]
        x, y = min(max(self.pos[0] + dx, 0), SIZE - 1), min(max(self.pos[1] + dy, 0), SIZE - 1)
        self.pos = (x, y)
        if (x, y) == (10, 10):
            return x * SIZE + y, 1.0, True, False, {}
        return x * SIZE + y, 0.01 if (x, y) == (5, 0) else 0.0, False, False, {}


def stream(master: int, run: agents.Run) -> np.random.Generator:
    """The run's own training generator, seeded as ours seeds it (master, stream 0, beta's bits, seed)."""
    bits = int(np.float64(run.beta).view(np.int64))
    return np.random.default_rng([master, 0, bits & 0xFFFFFFFF, bits >> 32 & 0xFFFFFFFF, run.seed])


def greedy_episode(env: gym.Env, q: np.ndarray, rng: np.random.Generator) -> bool:
    s, _ = env.reset()
    while True:
        row = q[s]
        s, _, term, trunc, _ = env.step(int(np.argmax(np.where(row == row.max(), rng.random(4) + 1.0, 0.0))))
        if term or trunc:
            return bool(term)


def reference(runs: list[agents.Run], episodes: int, master: int = 0):
    """(evaluated tables (R, S, A), greedy success per run, environment steps taken in training)."""
    env = TimeLimit(GridEnv(), max_episode_steps=H)
    S, A = env.observation_space.n, env.action_space.n
    tables, success, steps = [], [], 0
    for run in runs:
        rng, beta = stream(master, run), run.beta
        q_pi, q_mu, N = np.zeros((S, A)), np.zeros((S, A)), np.zeros(S)
        for _ in range(episodes):
            u, geo, _ = rng.random((H, 3 + A)), rng.geometric(P), rng.random(2)
            h = min(geo, H) if run.agent == "hyper" else 0
            s, _ = env.reset()
            t = 0
            while True:
                ut = u[t]
                if ut[0] < EPSILON:
                    a = min(int(ut[1] * A), A - 1)
                else:
                    row = q_mu[s] if t < h else q_pi[s]
                    a = int(np.argmax(np.where(row == row.max(), ut[3:] + 1.0, 0.0)))
                s2, r, term, trunc, _ = env.step(a)
                steps += 1
                N[s2] += 1.0
                bonus = 1.0 / math.sqrt(N[s2])
                cont = 0.0 if term else GAMMA
                q_pi[s, a] += ALPHA * (r + beta * bonus + cont * q_pi[s2].max() - q_pi[s, a])
                q_mu[s, a] += ALPHA * (r + cont * q_mu[s2].max() - q_mu[s, a])
                if term or trunc:
                    break
                s, t = s2, t + 1
        q = q_pi if run.agent == "curiosity" else q_mu
        tables.append(q)
        success.append(greedy_episode(env, q, np.random.default_rng(master)))
    return np.stack(tables), success, steps


def ours(runs, episodes):
    return agents.sweep(grid(), runs, episodes, every=episodes)


def ours_tables(runs, episodes) -> np.ndarray:
    """Ours' evaluated tables at the end, captured by wrapping agents.evaluate (untimed)."""
    seen, original = {}, agents.evaluate

    def spy(mdp, q, seed=0, gens=None):
        seen["q"] = q.copy()
        return original(mdp, q, seed, gens)

    agents.evaluate = spy
    try:
        ours(runs, episodes)
    finally:
        agents.evaluate = original
    return seen["q"]


def deep(runs: list[agents.Run]) -> None:
    from icml25.training import make_trainer
    from models.hyper.deep import DeepConfig, DeepSweep

    cfg = DeepConfig(steps=DEEP_STEPS, every=DEEP_STEPS, warmup=DEEP_WARMUP)
    module = DeepSweep(grid(), runs, cfg)
    make_trainer(max_steps=-1, seed=0, max_epochs=1).fit(module)


def deep_rows(times_deep: dict[str, list[float]], runs: list[agents.Run]) -> tuple[list[dict], str]:
    impls = {DEEP_OURS: lambda: deep(runs), DEEP_REF: lambda: [deep([r]) for r in runs]}
    for rep in range(REPEAT):
        for name in list(impls)[rep % 2 :] + list(impls)[: rep % 2]:
            gc.collect()
            t0 = time.perf_counter()
            impls[name]()
            times_deep[name].append(time.perf_counter() - t0)
    peaks = {name: tensor_peak_mib(fn) for name, fn in impls.items()}
    med = {name: statistics.median(times_deep[name]) for name in impls}
    steps = len(runs) * DEEP_STEPS
    rows = [
        {
            "implementation": name,
            "runs x episodes": f"{len(runs)} runs x {DEEP_STEPS} steps",
            "environment steps": steps,
            "seconds (median)": round(med[name], 3),
            "runs (s)": ", ".join(f"{v:.3f}" for v in times_deep[name]),
            "steps per second": round(steps / med[name]),
            "ours / reference": round(med[DEEP_REF] / med[DEEP_OURS], 2) if name == DEEP_OURS else "",
            "peak MiB (tracemalloc)": f"{peaks[name]:.1f} (torch allocator)",
            "check": f"{DEEP_WARMUP} warm-up steps, then one minibatch update per step",
        }
        for name in impls
    ]
    ratio = med[DEEP_REF] / med[DEEP_OURS]
    return rows, f"deep variant, {len(runs)} runs x {DEEP_STEPS} steps: batched / one at a time {ratio:.2f}"


def main() -> None:
    start = time.perf_counter()
    load = load_text()
    sizes = {seeds: agents.runs_of(AGENTS, BETAS, seeds) for seeds in SEEDS}
    impls = {OURS: ours, REF: lambda runs, e: reference(runs, e)}
    for fn in impls.values():
        fn(sizes[SEEDS[0]], 2)  # warm-up

    times = {(name, s): [] for name in impls for s in SEEDS}
    kept = {}
    for rep in range(REPEAT):
        for seeds, runs in sizes.items():
            names = list(impls)[rep % 2 :] + list(impls)[: rep % 2]
            for name in names:
                gc.collect()
                t0 = time.perf_counter()
                result = impls[name](runs, EPISODES)
                times[name, seeds].append(time.perf_counter() - t0)
                if rep == 0 and name == REF:
                    kept[seeds] = result
        print(f"repetition {rep + 1}/{REPEAT} done ({time.perf_counter() - start:.0f} s)", flush=True)

    # faithfulness (untimed): ours' evaluated tables equal the reference's, bitwise
    for seeds, runs in sizes.items():
        diff = float(np.abs(ours_tables(runs, EPISODES) - kept[seeds][0]).max())
        assert diff == 0.0, f"{len(runs)} runs: ours and the reference differ by {diff:g}"

    peaks = {
        (name, seeds): traced_peak_mib(lambda fn=fn, runs=runs: fn(runs, MEM_EPISODES))
        for name, fn in impls.items()
        for seeds, runs in sizes.items()
    }

    learn_run = agents.Run("hyper", 1.0, 0)
    t0 = time.perf_counter()
    _, learned, learn_steps = reference([learn_run], LEARN_EPISODES)
    learn_s = time.perf_counter() - t0
    assert learned[0], (
        "the reference's Hyper run (beta 1) does not reach the goal greedily after 2,000 episodes"
    )

    rows, summary = [], []
    for seeds, runs in sizes.items():
        steps = kept[seeds][2]
        eps = len(runs) * EPISODES
        med = {name: statistics.median(times[name, seeds]) for name in impls}
        for name in impls:
            row = {
                "implementation": name,
                "runs x episodes": f"{len(runs)} x {EPISODES}",
                "environment steps": steps,
                "steps per episode": round(steps / eps, 2),
                "seconds (median)": round(med[name], 3),
                "runs (s)": ", ".join(f"{v:.3f}" for v in times[name, seeds]),
                "runs x episodes per second": round(eps / med[name]),
                "steps per second": round(steps / med[name]),
                "ours / reference": round(med[REF] / med[OURS], 2) if name == OURS else "",
                "peak MiB (tracemalloc)": round(peaks[name, seeds], 3),
                "check": (
                    f"evaluated tables of all {len(runs)} runs bitwise equal to the reference's"
                    if name == OURS
                    else f"{sum(kept[seeds][1])} of {len(runs)} runs reach the goal greedily"
                ),
            }
            rows.append(row)
            summary.append(
                f"{name:<40} {len(runs):4d} runs x {EPISODES}: {med[name]:7.3f} s, "
                f"{eps / med[name]:8.0f} episodes/s, {steps / med[name]:9.0f} steps/s, "
                f"peak {peaks[name, seeds]:.3f} MiB"
            )
            print(summary[-1], flush=True)
    rows.append(
        {
            "implementation": REF,
            "runs x episodes": f"1 x {LEARN_EPISODES} (Hyper, beta 1, seed 0)",
            "environment steps": learn_steps,
            "steps per episode": round(learn_steps / LEARN_EPISODES, 2),
            "seconds (median)": round(learn_s, 3),
            "runs (s)": "one run",
            "runs x episodes per second": round(LEARN_EPISODES / learn_s),
            "steps per second": round(learn_steps / learn_s),
            "check": "learns: reaches the goal greedily (asserted)",
        }
    )
    columns = list(rows[0])
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    deep_runs = agents.runs_of(AGENTS, [1, 10], 2)
    deep([deep_runs[0]])  # warm-up
    more, deep_note = deep_rows({DEEP_OURS: [], DEEP_REF: []}, deep_runs)
    rows += more
    print(deep_note, flush=True)
    stages = stage_times("hyper")
    if stages:
        rows.append(
            {
                "implementation": "quick profile, `dvc repro` (last run's stage wall times)",
                "seconds (median)": round(sum(stages.values()), 1),
                "runs (s)": stage_times_text(stages),
            }
        )
    ratios = ", ".join(
        f"{len(runs)} runs {statistics.median(times[REF, s]) / statistics.median(times[OURS, s]):.2f}"
        for s, runs in sizes.items()
    )
    note = (
        f"CPU, NumPy {np.__version__}, gymnasium {gym.__version__}; {load} on {os.cpu_count()} cores (another "
        f"process may have been using them, which slows both alike). The grid, {EPISODES} episodes per run, "
        f"runs = {len(AGENTS)} agents x {len(BETAS)} betas x seeds. Ours: agents.sweep(every={EPISODES}); "
        f"reference: a per-run Python loop over a gymnasium.Env in TimeLimit({H}) with the same updates, "
        f"drawing the same per-run streams, so both take the same steps (the reference counts them; ours' "
        f"evaluated tables are asserted bitwise equal to the reference's). One warm-up, {REPEAT} repetitions "
        f"alternated, order rotated; median reported. Ours / reference in runs x episodes per second: {ratios}. "
        f"Peak memory: tracemalloc of one untimed call each at {MEM_EPISODES} episodes. The reference's Hyper "
        f"run (beta 1, seed 0) reaches the goal greedily after {LEARN_EPISODES} episodes. "
        f"The {deep_note} (torch {torch.__version__}, {torch.get_num_threads()} threads). "
        + (
            f"Quick profile's stages: {stage_times_text(stages)}. "
            if stages
            else "No quick-profile stage times recorded in this checkout. "
        )
        + f"Benchmark wall time {time.perf_counter() - start:.0f} s."
    )
    write("hyper", columns, rows, note=note)
    print("\n".join(["", "Summary:"] + summary), flush=True)


if __name__ == "__main__":
    main()
