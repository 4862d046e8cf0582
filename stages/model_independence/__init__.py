"""Independence tests for language models: the controlled CPU reproduction.

Zhu, Ahmed, Kuditipudi, Liang. "Independence Tests for Language Models". ICML 2025.
https://arxiv.org/abs/2502.12292 · official code: https://github.com/ahmeda14960/model-tracing

H_0: theta_1 and theta_2 are independent (independent random initialisations; training data may be shared).

- PERMTEST (Alg. 1): p = (1 + #{t : phi(pi_t(theta_1), theta_2) more similar than phi(theta_1, theta_2)})/(T+1),
  pi_t ~ Unif(Pi), ties randomised; exact under H_0 (Thm 1). Here phi = phi_l2 and T = 99.
- phi_M (Eq. 2) = SPEARMAN(MATCH(M(theta_1), M(theta_2)), id), MATCH = LAP on cosine similarities (Alg. 2),
  SPEARMAN one-sided via the t law with h - 2 d.o.f. (Alg. 3), FISHER over blocks (Alg. 4):
  p = 1 - F_{chi^2_{2L}}(-2 sum_l log p_l). phi_U: M = up-projection weights; phi_H: M = hidden activations.
- phi_MATCH (Eq. 3) = SPEARMAN(MATCH(H_gate(theta_1), H_gate(theta_2)), MATCH(H_up(theta_1), H_up(theta_2))):
  robust to output-preserving permutations and scalings of hidden units.

Stages (one module each): prepare (scikit-learn's digits, stratified split) -> validate (GX suite) -> train
(Lightning: base, its fine-tune, 2 x n_pairs independent models, a permuted + rescaled copy of the fine-tune;
checkpoints in the Llama weight layout) -> evaluate (every test on every pair: the p-value table, a phi_MATCH
heatmap, and the summary the claims read: KS tests against uniform, minima, PERMTEST's rank) -> report (claims
in report.py, prose in report.md: tables, histogram against uniform, heatmap). The method is in
models/model_independence (experiment.py drives it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    test_fraction: float = field(default=0.25, metadata={"gt": 0.0, "lt": 1.0})


@dataclass(frozen=True)
class Train:
    d_model: int = field(default=32, metadata={"ge": 2})
    d_hidden: int = field(default=64, metadata={"ge": 3})
    n_blocks: int = field(default=2, metadata={"ge": 1})
    batch_size: int = field(default=64, metadata={"ge": 1})
    base_steps: int = field(default=400, metadata={"ge": 1})
    lr: float = field(default=0.01, metadata={"gt": 0.0})
    ft_steps: int = field(default=300, metadata={"ge": 1})
    ft_lr: float = field(default=0.05, metadata={"gt": 0.0})
    ft_classes: tuple[int, ...] = field(default=(0, 1, 2, 3, 4), metadata={"ge": 0, "le": 9})
    n_pairs: int = field(default=20, metadata={"ge": 1})
    scale_permuted: bool = True


@dataclass(frozen=True)
class Evaluate:
    permutations: int = field(default=99, metadata={"ge": 1})
    n_inputs: int = field(default=200, metadata={"ge": 3})
    match_metric: Literal["cosine", "sqeuclidean"] = "cosine"
    spearman_sides: Literal["one", "two"] = "one"
    dead_units: Literal["exclude", "keep"] = "exclude"
    heatmap_models: int = field(default=10, metadata={"ge": 2})


PAPER = Paper(
    slug="model_independence",
    citation="Zhu, Ahmed, Kuditipudi, Liang. *Independence Tests for Language Models*. ICML 2025.",
    url="https://github.com/ahmeda14960/model-tracing",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
