"""The reproduction's experiment: which fits, how they are seeded, and what is measured on them.

Stage 1, per seed, from one initialisation (one seed for every variant: same encoder, decoder, codebook and
minibatch order): RaRSQ (``rotation``) and STE (``ste``), the gated pair; the ablations ``rotation_normal`` and
``ste_normal`` (codebook init N(0, 0.25^2)) and ``library_ema`` (vector-quantize-pytorch's ResidualVQ with the
rotation trick and EMA updates). Stage 2, per seed, on that seed's RaRSQ codes: the 2 x 2 of autoregressive x
offset, with ``cst`` (both) and ``independent`` (neither: the spec's ablation) among them.

Measured on held-out chunks: per-depth perplexity and active codes, reconstruction MSE; the rotation's forward
gap |q~ - q| and its agreement with the reference library's ``rotate_to`` (float64: value and input gradient);
closed-loop success per task."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# variant -> (estimator, codebook init)
SKILL_VARIANTS = {
    "rotation": ("rotation", "kaiming"),
    "ste": ("ste", "kaiming"),
    "rotation_normal": ("rotation", "normal"),
    "ste_normal": ("ste", "normal"),
    "library_ema": ("library_ema", "kaiming"),
}
ABLATIONS = ("rotation_normal", "ste_normal", "library_ema")
# variant -> (autoregressive, offset head)
CST_VARIANTS = {
    "cst": (True, True),
    "ar_no_offset": (True, False),
    "independent_offset": (False, True),
    "independent": (False, False),
}


@dataclass(frozen=True)
class SkillFit:
    seed: int
    variant: str

    @property
    def name(self) -> str:
        return f"skills_s{self.seed}_{self.variant}"


@dataclass(frozen=True)
class PolicyFit:
    seed: int
    variant: str

    @property
    def name(self) -> str:
        return f"policy_s{self.seed}_{self.variant}"

    @property
    def skills(self) -> str:
        return SkillFit(self.seed, "rotation").name


def skill_plan(seeds: int, ablations: tuple[str, ...]) -> list[SkillFit]:
    variants = ("rotation", "ste", *[a for a in ABLATIONS if a in ablations])
    return [SkillFit(s, v) for s in range(seeds) for v in variants]


def policy_plan(seeds: int, variants: tuple[str, ...]) -> list[PolicyFit]:
    return [PolicyFit(s, v) for s in range(seeds) for v in CST_VARIANTS if v in variants]


def skill_config(variant: str, horizon: int, action_dim: int, **sizes):
    from .skills import SkillConfig

    estimator, init = SKILL_VARIANTS[variant]
    return SkillConfig(horizon=horizon, action_dim=action_dim, estimator=estimator, init=init, **sizes)


def run_skill_fit(
    fit: SkillFit,
    chunks: np.ndarray,
    steps: int,
    seed: int,
    out: Path,
    batch: int = 256,
    lr: float = 1e-3,
    **sizes,
) -> dict:
    """Fit one stage-1 model on chunks (n, H, A) (standardised here, statistics saved with the model); save it
    to ``out/<name>.safetensors``; returns its history and wall time."""
    import torch

    from .api import SkillModel
    from .policy import Standardiser
    from .skills import fit_skills

    torch.set_num_threads(1)
    start = time.perf_counter()
    std = Standardiser.fit(chunks)
    cfg = skill_config(fit.variant, chunks.shape[1], chunks.shape[2], **sizes)
    model, history = fit_skills(std.forward(chunks), cfg, steps, seed, batch=batch, lr=lr)
    SkillModel(model, std.mean, std.sd, history).save(out / f"{fit.name}.safetensors")
    return {"history": history, "seconds": time.perf_counter() - start}


def run_policy_fit(
    fit: PolicyFit,
    data: dict[str, np.ndarray],
    tasks: int,
    steps: int,
    seed: int,
    out: Path,
    batch: int = 64,
    lr: float = 1e-3,
    **sizes,
) -> dict:
    """Fit one CST variant on the primitive-aligned chunks of ``data`` coded by the seed's RaRSQ model."""
    import torch

    from .api import SkillModel, save_cst
    from .cst import CSTConfig, fit_cst
    from .policy import stage2_samples

    torch.set_num_threads(1)
    start = time.perf_counter()
    skills = SkillModel.load(out / f"{fit.skills}.safetensors")
    H = skills.config.horizon
    max_chunks = int(data["prim_index"].max()) + 1
    samples = stage2_samples(skills.model, data, skills.standardiser, H, max_chunks)
    ar, offset = CST_VARIANTS[fit.variant]
    cfg = CSTConfig(
        tasks=tasks,
        depths=skills.config.depths,
        codes=skills.config.codes,
        chunk_dim=H * skills.config.action_dim,
        max_chunks=max_chunks,
        autoregressive=ar,
        offset=offset,
        **sizes,
    )
    policy, history = fit_cst(samples, cfg, steps, seed, batch=batch, lr=lr)
    save_cst(out / f"{fit.name}.safetensors", policy)
    return {"history": history, "seconds": time.perf_counter() - start}


def median(values: list[float]) -> float:
    return float(np.median(values)) if values else float("nan")


def summarize_skills(rows: list[dict]) -> dict:
    """The claims' numbers from per-fit scores (seed, variant, perplexity_1, mse, ...): per seed and their
    median, of RaRSQ / STE (depth-1 perplexity, MSE); the ablations' ratios against the same-init STE."""
    by = {(int(r["seed"]), r["variant"]): r for r in rows}
    seeds = sorted({s for s, v in by if v == "rotation" and (s, "ste") in by})
    per_seed = []
    for s in seeds:
        rot, ste = by[(s, "rotation")], by[(s, "ste")]
        row = {
            "seed": s,
            "perplexity_ratio": rot["perplexity_1"] / ste["perplexity_1"],
            "mse_ratio": rot["mse"] / ste["mse"],
            "active_rotation": rot["active_1"],
            "active_ste": ste["active_1"],
        }
        if (s, "rotation_normal") in by and (s, "ste_normal") in by:
            rn, sn = by[(s, "rotation_normal")], by[(s, "ste_normal")]
            row["normal_perplexity_ratio"] = rn["perplexity_1"] / sn["perplexity_1"]
            row["normal_mse_ratio"] = rn["mse"] / sn["mse"]
        if (s, "library_ema") in by:
            lib = by[(s, "library_ema")]
            row["library_perplexity_ratio"] = lib["perplexity_1"] / ste["perplexity_1"]
            row["library_mse_ratio"] = lib["mse"] / ste["mse"]
        per_seed.append(row)
    keys = sorted({k for r in per_seed for k in r} - {"seed"})
    return {
        "seeds": seeds,
        "per_seed": per_seed,
        "median": {k: median([r[k] for r in per_seed if k in r]) for k in keys},
        "seeds_ratio_at_least_1_2": sum(r["perplexity_ratio"] >= 1.2 for r in per_seed),
    }


def summarize_policies(success: list[dict]) -> dict:
    """Per variant: success (mean over tasks of per-task success) per seed, its mean and sd over seeds; and
    CST minus independent per seed."""
    by: dict[str, dict[int, list[float]]] = {}
    for r in success:
        by.setdefault(r["variant"], {}).setdefault(int(r["seed"]), []).append(float(r["success"]))
    out: dict = {"variants": {}}
    for v, seeds in by.items():
        vals = [float(np.mean(seeds[s])) for s in sorted(seeds)]
        out["variants"][v] = {
            "per_seed": vals,
            "mean": float(np.mean(vals)),
            "sd": float(np.std(vals, ddof=1)) if len(vals) > 1 else float("nan"),
            "worst_task": float(min(min(seeds[s]) for s in seeds)),
        }
    if "cst" in by and "independent" in by:
        common = sorted(set(by["cst"]) & set(by["independent"]))
        diff = [float(np.mean(by["cst"][s]) - np.mean(by["independent"][s])) for s in common]
        out["cst_minus_independent"] = {
            "per_seed": diff,
            "mean": float(np.mean(diff)),
            "sd": float(np.std(diff, ddof=1)) if len(diff) > 1 else float("nan"),
        }
    return out


def check_row(model, x: np.ndarray, upstream_seed: int, **switches) -> dict:
    """The rotation checks of one RaRSQ model on standardised chunks x (models/star/evaluation.py); the
    switches are the broken rotations of the tests."""
    from . import evaluation

    peer = evaluation.peer_gap(model, x, seed=upstream_seed, **switches)
    return {
        "forward_gap": evaluation.forward_gap(model, x, **switches),
        "code_norm": float(model.quantizer.codebooks.detach().norm(dim=-1).max()),
        "peer_value_gap": peer["value"],
        "peer_gradient_gap": peer["gradient"],
        "fallbacks": evaluation.fallbacks(model, x),
        "pairs": len(x) * model.quantizer.depths,
    }


def summarize(skill_rows: list[dict], check_rows: list[dict], success: list[dict]) -> dict:
    """summary.json's sections: ``skills`` (the result claims), ``checks`` (the invariants: worst over the gated
    RaRSQ fits; fallbacks over every RaRSQ fit), ``policies`` (reported)."""
    gated = [r for r in check_rows if r["variant"] == "rotation"]
    nan = float("nan")
    return {
        "skills": summarize_skills(skill_rows),
        "policies": summarize_policies(success),
        "checks": {
            "forward_gap": max((r["forward_gap"] for r in gated), default=nan),
            "code_norm": max((r["code_norm"] for r in gated), default=nan),
            "peer_gap": max((max(r["peer_value_gap"], r["peer_gradient_gap"]) for r in gated), default=nan),
            "fallbacks": int(sum(r["fallbacks"] for r in check_rows)),
            "pairs": int(sum(r["pairs"] for r in check_rows)),
        },
    }
