"""PIGDreamer: privileged-information-guided world models for safe partially observable RL, the CPU analogue.

Huang, Wang, Li, Xia, Zhang and Zhang, ICML 2025. The official code was not readable here and the spec comes from third-party notes; DreamerV3
world models on Safety-Gymnasium vision tasks are out of CPU reach. This is the spec's model-free analogue that
keeps the two mechanisms the abstract names: asymmetric critics (the critics see the privileged state, the actor
only its observation history; Theorem 3.3: sum_s b(s) V*(s) >= V*(b), so a critic told the state does not
underestimate risk) and privileged representation alignment (the actor's history state pulled toward an oracle
encoder of observation + privileged state).

Environment HiddenHazard (models/pigdreamer/env.py): 7 x 7, 40 steps, 5 hidden hazards between start and goal,
a 3 x 3 sensor that shows each hazard with probability 0.25 a step; privileged: the hazard map. Agents
(models/pigdreamer/agent.py, ppo.py): GRU(64) history encoder, actor on the history, reward and cost critics,
recurrent PPO-Lagrangian; A (critics on the history), B (critics on history + map), C (B + alignment), U (C with
the map zeroed), N (C unconstrained, a stub for the tests).

Stages: prepare (the evaluation episodes' layouts and the best blind route's expected cost on each) -> validate
(GX on the layouts) -> train (every variant x seed, stacked per seed, Lightning with manual optimisation) ->
evaluate (200 fresh episodes per agent: return, cost, success, normalised critic errors against the Monte-Carlo
cost-to-go, the leakage check) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    size: int = field(default=7, metadata={"ge": 3})
    horizon: int = field(default=40, metadata={"ge": 1})
    hazards: int = field(default=5, metadata={"ge": 0})
    visibility: float = field(default=0.25, metadata={"ge": 0.0, "le": 1.0})
    step_penalty: float = field(default=0.01, metadata={"ge": 0.0})
    episodes: int = field(default=200, metadata={"ge": 1})  # evaluation episodes per agent


@dataclass(frozen=True)
class Train:
    variants: tuple[str, ...] = ("A", "B", "C", "U")
    seeds: int = field(default=3, metadata={"ge": 1})
    updates: int = field(default=150, metadata={"ge": 1})
    envs: int = field(default=32, metadata={"ge": 2})
    rollout: int = field(default=40, metadata={"ge": 1})
    epochs: int = field(default=4, metadata={"ge": 1})
    minibatches: int = field(default=4, metadata={"ge": 1})
    lr: float = field(default=1e-3, metadata={"gt": 0.0})
    anneal_lr: bool = False  # decay lr linearly to 0 over the updates
    gamma: float = field(default=0.99, metadata={"gt": 0.0, "le": 1.0})
    gae_lambda: float = field(default=0.95, metadata={"ge": 0.0, "le": 1.0})
    entropy_coef: float = field(default=0.01, metadata={"ge": 0.0})
    cost_limit: float = field(default=0.5, metadata={"ge": 0.0})  # d, per episode
    lagrange_lr: float = field(default=0.01, metadata={"ge": 0.0})  # eta
    align_weight: float = field(default=1.0, metadata={"ge": 0.0})
    hidden: int = field(default=64, metadata={"ge": 1})
    workers: int = field(default=2, metadata={"ge": 1})


@dataclass(frozen=True)
class Evaluate:
    leak_states: int = field(default=1000, metadata={"ge": 1})


PAPER = Paper(
    slug="pigdreamer",
    citation=(
        "Dongchi Huang, Jiaqi Wang, Yang Li, Chunhe Xia, Tianle Zhang and Kaige Zhang. *PIGDreamer: Privileged "
        "Information Guided World Models for Safe Partially Observable Reinforcement Learning*. ICML 2025."
    ),
    url="https://github.com/hggforget/PIGDreamer (announced in the arXiv version; not in our store)",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
