"""The catalogue of the 19 papers and the objects a paper module registers.

The catalogue (slug, number, short title, official code) is plain data so that ``icml25 list`` answers without
importing any paper code. A paper is *implemented* when params.yaml has a ``papers.<slug>`` section (that is what
``dvc.yaml`` iterates over); ``stages/<slug>.py`` then builds a :class:`Paper` with its stages and claims.
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

STAGES = ("prepare", "validate", "train", "evaluate", "report")


@dataclass(frozen=True)
class Entry:
    number: int
    slug: str
    title: str
    authors: str
    code: str
    has_tools: bool = False  # models/<slug>/cli.py registers `icml25 <slug> ...` commands


CATALOGUE: tuple[Entry, ...] = (
    Entry(
        1,
        "ghost",
        "GHOST: one-shot federated graph learning with proxy models",
        "Qian et al.",
        "JiaruQian/GHOST",
    ),
    Entry(
        2, "ucb_ogd", "Adaptive data collection across distributions (UCB-OGD)", "Zang et al.", "none public"
    ),
    Entry(3, "issm", "Interventional state-space models", "Nejatbakhsh et al.", "amin-nejat/issm"),
    Entry(
        4,
        "epd_serving",
        "Encode-Prefill-Decode disaggregation for LMM serving",
        "Singh et al.",
        "vbdi/epdserve",
    ),
    Entry(
        5,
        "gsm_infinite",
        "GSM-Infinity: long-context reasoning benchmark generator",
        "Zhou et al.",
        "Infini-AI-Lab/gsm_infinite",
        has_tools=True,
    ),
    Entry(6, "easyinv", "EasyInv: DDIM inversion", "Zhang et al.", "potato-kitty/EasyInv"),
    Entry(7, "star", "STAR: rotation-augmented residual skill quantization", "Li et al.", "not released"),
    Entry(8, "hyper", "Hyper: hyperparameter-robust exploration", "Wang et al.", "none public"),
    Entry(9, "autospeculative", "Autospeculative decoding for DDPMs", "Hu et al.", "none public"),
    Entry(
        10,
        "lsmooth_gd",
        "GD step size under ell-generalized smoothness",
        "Tyurin",
        "theory paper",
        has_tools=True,
    ),
    Entry(11, "neuroalgebraic", "Neuroalgebraic geometry (position paper)", "Marchetti et al.", "none"),
    Entry(
        12,
        "model_independence",
        "Independence tests for language models",
        "Zhu, Ahmed, Kuditipudi, Liang",
        "ahmeda14960/model-tracing",
        has_tools=True,
    ),
    Entry(
        13,
        "ferret",
        "Ferret: federated full-parameter tuning with shared randomness",
        "Shu et al.",
        "allen4747/Ferret",
    ),
    Entry(
        14,
        "cross_conformal",
        "Efficient cross-conformal prediction",
        "Gasparin & Ramdas",
        "matteogaspa/EffCrossCP",
        has_tools=True,
    ),
    Entry(
        15,
        "farma",
        "FaRMA: reward-guided generation, one reward call per token",
        "Rashid et al.",
        "ahmadrash/FaRMA",
    ),
    Entry(16, "bundle_cbf", "Measurement-induced bundles, mCBF and Neural ODE", "Zheng & Mei", "not public"),
    Entry(
        17,
        "sr_pareto",
        "Absolute Pareto-optimal fronts for symbolic regression",
        "Fong & Motani",
        "kentridgeai/SRParetoFronts",
        has_tools=True,
    ),
    Entry(18, "tmvml", "TMvML: tensorized multi-view multi-label learning", "Zhong et al.", "none public"),
    Entry(
        19,
        "pigdreamer",
        "PIGDreamer: privileged-information world models for safe RL",
        "Huang et al.",
        "not public",
    ),
)
BY_SLUG = {e.slug: e for e in CATALOGUE}

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}


def entry(slug: str) -> Entry:
    from .errors import UserError

    if slug not in BY_SLUG:
        raise UserError(f"unknown paper {slug!r}; known slugs: {', '.join(BY_SLUG)}")
    return BY_SLUG[slug]


@dataclass(frozen=True)
class Claim:
    """One claim of a paper: its acceptance threshold lives here, in code, never in params.yaml."""

    id: str
    statement: str
    source: str
    op: str
    threshold: float

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"claim {self.id}: op must be one of {sorted(OPS)}")

    def verdict(self, value: float) -> dict[str, Any]:
        """The claims.json record for a computed value (a non-finite value fails and says so)."""
        import math

        value = float(value)
        finite = math.isfinite(value)
        held = finite and OPS[self.op](value, self.threshold)
        rec: dict[str, Any] = {
            "statement": self.statement,
            "source": self.source,
            "value": value if finite else None,
            "op": self.op,
            "threshold": self.threshold,
            "passed": int(held),
        }
        if not finite:
            rec["reason"] = f"value was {value}, not a finite number"
        return rec


StageFn = Callable[["Any"], None]


@dataclass
class StageSpec:
    name: str
    fn: StageFn
    sections: tuple[str, ...]


@dataclass
class Paper:
    """What ``stages/<slug>.py`` registers: its stages, the params schema of each section, and its claims."""

    slug: str
    citation: str
    url: str
    schema: dict[str, type] = field(default_factory=dict)  # section name -> dataclass
    claims: tuple[Claim, ...] = ()
    stages: dict[str, StageSpec] = field(default_factory=dict)

    def stage(self, name: str, sections: tuple[str, ...] | None = None) -> Callable[[StageFn], StageFn]:
        """Register ``fn`` as stage ``name``; it sees the params ``sections`` (default: its own section)."""
        if name not in STAGES:
            raise ValueError(f"{self.slug}: unknown stage {name!r}; stages are {STAGES}")

        def deco(fn: StageFn) -> StageFn:
            self.stages[name] = StageSpec(name, fn, tuple(sections) if sections is not None else (name,))
            return fn

        return deco

    def claim(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(f"{self.slug}: no claim {claim_id!r}")


def load_paper(slug: str) -> Paper:
    """Import ``stages.<slug>`` and return its ``PAPER`` (lazy: only when a stage or report runs)."""
    entry(slug)
    module = importlib.import_module(f"stages.{slug}")
    paper = module.PAPER
    missing = [s for s in STAGES if s not in paper.stages]
    if missing:
        raise RuntimeError(f"stages/{slug}.py registers no stage {missing}")
    return paper
