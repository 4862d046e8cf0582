"""The catalogue of the 19 papers and the objects a paper module registers.

The catalogue (slug, number, short title, official code) is plain data so that ``icml25 list`` answers without
importing any paper code. A paper is *implemented* when params.yaml has a ``papers.<slug>`` section (that is what
``dvc.yaml`` iterates over); ``stages/<slug>/__init__.py`` then declares its :class:`Paper` and
``stages/<slug>/<stage>.py`` its stages. The core finds a paper's code by this naming convention (the plugin
boundary): it never imports paper code by name.
"""

from __future__ import annotations

import importlib
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
        2,
        "ucb_ogd",
        "Adaptive data collection across distributions (UCB-OGD)",
        "Zang et al.",
        "none public",
        has_tools=True,
    ),
    Entry(
        3,
        "issm",
        "Interventional state-space models",
        "Nejatbakhsh et al.",
        "amin-nejat/issm",
        has_tools=True,
    ),
    Entry(
        4,
        "epd_serving",
        "Encode-Prefill-Decode disaggregation for LMM serving",
        "Singh et al.",
        "vbdi/epdserve",
        has_tools=True,
    ),
    Entry(
        5,
        "gsm_infinite",
        "GSM-Infinity: long-context reasoning benchmark generator",
        "Zhou et al.",
        "Infini-AI-Lab/gsm_infinite",
        has_tools=True,
    ),
    Entry(6, "easyinv", "EasyInv: DDIM inversion", "Zhang et al.", "potato-kitty/EasyInv", has_tools=True),
    Entry(
        7,
        "star",
        "STAR: rotation-augmented residual skill quantization",
        "Li et al.",
        "not released",
        has_tools=True,
    ),
    Entry(
        8, "hyper", "Hyper: hyperparameter-robust exploration", "Wang et al.", "none public", has_tools=True
    ),
    Entry(
        9,
        "autospeculative",
        "Autospeculative decoding (ASD) for DDPMs",
        "Hu, Das, Sadigh & Anari",
        "none public",
        has_tools=True,
    ),
    Entry(
        10,
        "lsmooth_gd",
        "GD step size under ell-generalized smoothness",
        "Tyurin",
        "theory paper",
        has_tools=True,
    ),
    Entry(
        11,
        "neuroalgebraic",
        "Neuroalgebraic geometry (position paper)",
        "Marchetti, Shahverdi, Mereta, Trager & Kohn",
        "none",
        has_tools=True,
    ),
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
        "Shu, Hu, Ng, Low & Yu",
        "allen4747/Ferret",
        has_tools=True,
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
        "Rashid, Wu, Fan, Li, Kristiadi & Poupart",
        "ahmadrash/FaRMA",
        has_tools=True,
    ),
    Entry(
        16,
        "bundle_cbf",
        "Measurement-aware CBFs with Neural ODE dynamics (measurement-induced bundles)",
        "Zheng & Mei",
        "not public",
        has_tools=True,
    ),
    Entry(
        17,
        "sr_pareto",
        "Absolute Pareto-optimal fronts for symbolic regression",
        "Fong & Motani",
        "kentridgeai/SRParetoFronts",
        has_tools=True,
    ),
    Entry(
        18,
        "tmvml",
        "TMvML: tensorized multi-view multi-label classification via the Laplace tensor rank",
        "Zhong, Shan, Wang, Yang & Lyu",
        "none public",
        has_tools=True,
    ),
    Entry(
        19,
        "pigdreamer",
        "PIGDreamer: privileged-information world models for safe RL",
        "Huang, Wang, Li, Xia, Zhang & Zhang",
        "announced (github.com/hggforget/PIGDreamer), not in our store",
        has_tools=True,
    ),
)
BY_SLUG = {e.slug: e for e in CATALOGUE}


def entry(slug: str) -> Entry:
    from .errors import UserError

    if slug not in BY_SLUG:
        raise UserError(f"unknown paper {slug!r}; known slugs: {', '.join(BY_SLUG)}")
    return BY_SLUG[slug]


@dataclass(frozen=True)
class Paper:
    """What ``stages/<slug>/__init__.py`` declares: the citation, the official code and the params schema (one
    dataclass per section; a section left out takes no parameters). Its stages are the modules
    ``stages/<slug>/<stage>.py`` (each with ``run(ctx)``; the report's declares claims, see
    :mod:`icml25.reporting`)."""

    slug: str
    citation: str
    url: str
    schema: dict[str, type] = field(default_factory=dict)  # section name -> dataclass


def load_paper(slug: str) -> Paper:
    """Import ``stages.<slug>`` and return its ``PAPER`` (lazy: only when a stage or report runs)."""
    entry(slug)
    try:
        module = importlib.import_module(f"stages.{slug}")
    except ModuleNotFoundError as exc:
        if exc.name in (f"stages.{slug}", "stages"):
            from .errors import UserError

            raise UserError(
                f"paper {slug!r} has no stages package (stages/{slug}/); `icml25 new {slug}`"
            ) from None
        raise
    return module.PAPER


def load_stage(slug: str, stage: str) -> Any:
    """The module ``stages.<slug>.<stage>`` (it defines ``run(ctx)``; the report's defines claims)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages are {STAGES}")
    return importlib.import_module(f"stages.{slug}.{stage}")
