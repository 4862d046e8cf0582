"""Adaptive data collection across distributions (UCB-OGD): the controlled CPU reproduction.

Zang et al. ICML 2025. No official code is public: the method is reconstructed from the abstract (the spec,
../shared/papers/02-ucb_ogd.md, and the issue state the reconstruction), and the report says so.

Objective (stated, since the abstract is ambiguous): the worst-source risk min_theta max_k L_k(theta),
L_k(theta) = E_{z ~ D_k} l(theta; z), l in [0, 1] convex in theta. UCB-OGD plays a two-player game: a UCB sampler
picks the source (the max player, bandit feedback = the loss of the collected sample under the current model,
observed once), OGD updates theta (the min player):

    UCB_k(t) = S_k / n_k + sqrt(2 ln t / n_k)     (warm start: every source once, in order; ties: lowest k)
    theta_{t+1} = Proj_{||theta|| <= R}(theta_t - eta grad l(theta_t; z_t)),   eta = 2R / (G sqrt T)

and outputs the average iterate (``train.output: last`` for the last). Regret (the claims' definition):
R_T = sum_t max_k L_k(theta_t) - T F*, F* = min_theta max_k L_k(theta) (exact on the planted sources).

Stages: prepare (the label-shifted digits sources per seed, or a folder of CSV files; the planted problems) ->
validate (GX) -> train (every method on the same sample streams; the planted regret runs; the batched
Lightning variant; the gradient-rule ablation) -> evaluate (worst-source accuracy, allocation, regret slopes)
-> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper

METHODS = ("ucb_ogd", "uniform", "greedy", "entropy", "oracle")


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="digits", metadata={"choices": ("digits", "csv")})
    csv_folder: str = "sources"  # data/ucb_ogd/input/<csv_folder>/: one CSV per source (source: csv)
    label: str = "label"  # the class column of the CSV files
    seeds: int = field(default=10, metadata={"ge": 1})
    regret_sources: tuple[int, ...] = field(default=(3, 5), metadata={"choices": (3, 5)})


@dataclass(frozen=True)
class Train:
    horizon: int = field(default=4000, metadata={"ge": 10})
    methods: tuple[str, ...] = field(default=METHODS, metadata={"choices": METHODS})
    radius: float = field(default=10.0, metadata={"gt": 0.0})
    output: str = field(default="average", metadata={"choices": ("average", "last")})
    # ours: OGD steps on the gradient of the unclipped loss (the clip bounds the sampler's feedback only);
    # true steps on the clipped loss (zero gradient above 1). The other rule runs as the ablation.
    grad_of_clipped: bool = False
    ablation: bool = True
    val_size: int = field(default=100, metadata={"ge": 1})  # the oracle's validation points per source
    checkpoints: int = field(default=20, metadata={"ge": 2})
    regret_horizons: tuple[int, ...] = field(default=(250, 500, 1000, 2000, 4000, 8000), metadata={"ge": 10})
    regret_methods: tuple[str, ...] = field(
        default=("ucb_ogd", "uniform"), metadata={"choices": ("ucb_ogd", "uniform", "greedy", "oracle")}
    )
    batched_seeds: int = field(default=3, metadata={"ge": 0})
    batched_rounds: int = field(default=250, metadata={"ge": 1})
    batched_batch: int = field(default=16, metadata={"ge": 1})
    batched_steps: int = field(default=4, metadata={"ge": 1})


PAPER = Paper(
    slug="ucb_ogd",
    citation="Zang et al. *Adaptive data collection across distributions (UCB-OGD)*. ICML 2025.",
    url="none public",
    schema={"prepare": Prepare, "train": Train},
)
