"""Hyper: hyperparameter-robust curiosity-driven exploration: the controlled CPU reproduction (tabular).

Wang et al. ICML 2025. No official code is public and the spec is a reconstruction; the paper's TD3
continuous-control runs are not reproduced here. The report says all three.

Agents (models/hyper/agents.py), tabular Q-learning on r^e and the count bonus r_i = 1 / sqrt(N(s'))::

    Q_pi <- r + beta r_i + gamma max Q_pi(s')     (explores)
    Q_mu <- r            + gamma max Q_mu(s')     (exploits; evaluated)

Curiosity: Q_pi acts and is evaluated. Decouple: Q_pi acts, Q_mu is evaluated. Hyper: Decouple plus
repositioning, h = min(Geom(p), H) per episode: epsilon-greedy on Q_mu for t < h, on Q_pi after.

Stages: prepare (the grids as tables, the run list; no data set) -> validate (GX: one start, the goal terminal and
worth 1, the distractor as set, H and gamma in range) -> train (every run in one batch of arrays, greedy
evaluations every ``every`` episodes; the terminal-trap grid beside it; the deep variant, DQN with target
networks and an RND bonus, where ``prepare.deep.agents`` names any: the paper profile) -> evaluate (success and return per agent
and beta) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper

AGENTS = ("curiosity", "decouple", "hyper", "baseline")


@dataclass(frozen=True)
class DeepPlan:
    """The deep variant's runs (models/hyper/deep.py) on ``grid``; no agents: not run (the quick profile)."""

    agents: tuple[str, ...] = field(default=(), metadata={"choices": AGENTS})
    betas: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0)
    seeds: int = field(default=3, metadata={"ge": 1})


@dataclass(frozen=True)
class DeepTrain:
    steps: int = field(default=30_000, metadata={"ge": 1})
    every: int = field(default=3_000, metadata={"ge": 1})
    warmup: int = field(default=500, metadata={"ge": 0})
    hidden: int = field(default=64, metadata={"ge": 1})
    rnd_dim: int = field(default=32, metadata={"ge": 1})
    batch: int = field(default=64, metadata={"ge": 1})
    lr: float = field(default=1e-3, metadata={"gt": 0.0})
    target_every: int = field(default=100, metadata={"ge": 1})
    obs: str = field(default="onehot", metadata={"choices": ("onehot", "xy")})


@dataclass(frozen=True)
class Prepare:
    distractor_reward: float = field(default=0.01, metadata={"ge": 0.0})
    trap_reward: float = field(default=0.2, metadata={"ge": 0.0})
    horizon: int = field(default=60, metadata={"ge": 1})
    gamma: float = field(default=0.98, metadata={"gt": 0.0, "le": 1.0})
    agents: tuple[str, ...] = field(default=AGENTS, metadata={"choices": AGENTS})
    betas: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0, 100.0)
    seeds: int = field(default=10, metadata={"ge": 1})
    trap_agents: tuple[str, ...] = field(default=("decouple", "hyper"), metadata={"choices": AGENTS})
    p_rep: float = field(default=1.0, metadata={"ge": 0.0, "le": 1.0})  # the spec's unverified reading: < 1
    trap_p_rep: float = field(default=0.5, metadata={"ge": 0.0, "le": 1.0})  # the trap's extra Hyper runs
    deep: DeepPlan = DeepPlan()


@dataclass(frozen=True)
class Train:
    episodes: int = field(default=2000, metadata={"ge": 1})
    every: int = field(default=250, metadata={"ge": 1})
    p: float = field(default=0.1, metadata={"gt": 0.0, "le": 1.0})
    alpha: float = field(default=0.5, metadata={"gt": 0.0, "le": 1.0})
    epsilon: float = field(default=0.05, metadata={"ge": 0.0, "le": 1.0})
    deep: DeepTrain = DeepTrain()


PAPER = Paper(
    slug="hyper",
    citation="Wang et al. *Hyper: Hyperparameter Robust Efficient Exploration in Reinforcement Learning*. ICML 2025.",
    url="none public",
    schema={"prepare": Prepare, "train": Train},
)
