"""Absolute Pareto-optimal fronts for symbolic regression: the controlled CPU reproduction.

Fong & Motani. "Pareto-Optimal Fronts for Benchmarking Symbolic Regression Algorithms". ICML 2025.
https://github.com/kentridgeai/SRParetoFronts

Grammar: Pow(a,b) = |a|^b, Mul, Add, Sub, Div over leaves x_i (standardised features) and constants; length =
number of nodes. For each length L the APO front holds max over expressions e of length L of
R^2(e) = 1 - mean((y_z - e(X_z; c*_e))^2), c*_e the fitted constants: an absolute bound within the grammar that
any SR method's expression of that length must respect.

Stages (one module each): prepare (planted, Friedman and diabetes sets, or PMLB files) -> validate (GX: finite,
no constant column, enough rows for the longest expression's constants) -> train (every expression of every data
set: the fast path over all trees; the paper's BFGS protocol; the official Karva space fitted on its own; the
eight optimisers on a length-7 candidate set; models/sr_pareto/search.py) -> evaluate (fronts: all trees vs the
official Karva L = 3 space; gplearn's population against the front; search-space counts; every number the claims
and tables need in summary.json) ->
report (claims in report.py, prose in report.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from icml25.registry import Paper

OPERATORS = ("Pow", "Mul", "Add", "Sub", "Div")  # models.sr_pareto.grammar.OPS
BUILTIN = (
    "planted_len3",
    "planted_len5",
    "planted_len5_noisy",
    "planted_len7_chain",
    "planted_len7_chain_noisy",
    "planted_len7_pow",
    "planted_len7_sum",
    "friedman1",
    "friedman2",
    "friedman3",
    "diabetes",
)


@dataclass(frozen=True)
class Prepare:
    source: Literal["builtin", "pmlb"] = "builtin"
    datasets: tuple[str, ...] = field(default=BUILTIN, metadata={"choices": BUILTIN})
    n_rows: int = field(default=300, metadata={"ge": 10})
    friedman_features: tuple[int, ...] = field(default=(0, 1), metadata={"ge": 0, "le": 3})
    pmlb_root: str = "pmlb"  # relative to data/sr_pareto/input/
    pmlb_names: tuple[str, ...] = ()
    max_length: int = field(default=7, metadata={"ge": 1, "le": 9})
    # the grammar's binary operators (the paper's five; fewer make a small grammar for the smoke profile)
    operators: tuple[str, ...] = field(default=OPERATORS, metadata={"choices": OPERATORS})


@dataclass(frozen=True)
class Train:
    n_jobs: int = field(default=2, metadata={"ge": 1})
    refine_top: int = field(default=25, metadata={"ge": 0})
    protocol_max_length: int = field(default=5, metadata={"ge": 1, "le": 9})
    # the official Karva space fitted on its own (BFGS protocol, and the fast path on the same expressions)
    karva_head: int = field(default=3, metadata={"ge": 1, "le": 4})
    karva_datasets: tuple[str, ...] = (
        "planted_len7_chain",
        "planted_len7_pow",
        "planted_len7_sum",
        "friedman1",
        "friedman2",
        "friedman3",
    )
    # the eight scipy optimisers on one candidate set of this length (search.optimizer_candidates)
    optimizer_length: int = field(default=7, metadata={"ge": 1, "le": 9})
    optimizer_top: int = field(default=25, metadata={"ge": 0})
    optimizer_sample: int = field(default=50, metadata={"ge": 0})
    optimizer_datasets: tuple[str, ...] = ("friedman1", "friedman2", "friedman3")


@dataclass(frozen=True)
class Evaluate:
    gplearn_population: int = field(default=500, metadata={"ge": 10})
    gplearn_generations: int = field(default=10, metadata={"ge": 1})
    count_features: tuple[int, ...] = field(default=(1, 2, 3), metadata={"ge": 1, "le": 5})
    count_karva4: bool = True


PAPER = Paper(
    slug="sr_pareto",
    citation="Fong & Motani. *Pareto-Optimal Fronts for Benchmarking Symbolic Regression Algorithms*. ICML 2025.",
    url="https://github.com/kentridgeai/SRParetoFronts",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
