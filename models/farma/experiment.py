"""One seed of the synthetic experiment: the base LM, the reward models, and the decodes that the claims read.

Per seed: the base LM pi_ref is fitted to ``corpus`` (samples of pi*); every RM starts as a copy of it and learns
from the seed's preference pairs (P(y1 > y2) = sigmoid(beta (R*(y1) - R*(y2)))): FaRMA (BT epoch then max epoch,
``alternations`` times), ARGS (BT on full responses, scalar head), PARGS (BT on equal-length prefixes) and CD
(beta R* regressed on every prefix of the pairs' responses, samples of pi*); report-only variants: FaRMA with the
official code's gradient through the max target, and FaRMA with BT epochs only (no max constraint).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .decoders import Decoded, ExactScorer, FarmaScorer, ScalarScorer, decode
from .fit import Phase, fit, mean_abs_residual
from .language import Language
from .nets import CausalNet, reward_model

RMS = ("farma", "args", "pargs", "cd", "farma_grad", "farma_bt")
SCALAR = ("args", "pargs", "cd")


@dataclass(frozen=True)
class Config:
    emb: int = 32
    hidden: int = 64
    lm_epochs: int = 4
    lm_lr: float = 3e-3
    rm_lr: float = 1e-3
    batch: int = 128
    alternations: int = 5
    rm_epochs: int = 5  # the baselines' epochs (as many passes over the pairs as FaRMA's BT phases)
    beta: float = 10.0
    target_grad: bool = False
    reset_optimizer: bool = True


def tensors(*arrays: np.ndarray) -> tuple[torch.Tensor, ...]:
    return tuple(torch.as_tensor(np.asarray(a), dtype=torch.long) for a in arrays)


def train_lm(lang: Language, corpus: dict, cfg: Config, seed: int) -> tuple[CausalNet, list]:
    torch.manual_seed(seed)
    lm = CausalNet(lang.tokens, lang.prompts, lang.tokens, cfg.emb, cfg.hidden)
    data = tensors(corpus["prompt"], corpus["y"])
    hist = fit(lm, [Phase("lm", data)] * cfg.lm_epochs, lr=cfg.lm_lr, batch=cfg.batch * 4, seed=seed)
    return lm, hist


def chosen(pairs: dict) -> tuple[np.ndarray, np.ndarray]:
    """(winner, loser) responses of each pair from its label (1: y1 preferred)."""
    first = pairs["label"].astype(bool)[:, None]
    return np.where(first, pairs["y1"], pairs["y2"]), np.where(first, pairs["y2"], pairs["y1"])


def train_rm(name: str, lm: CausalNet, pairs: dict, cfg: Config, seed: int) -> tuple[CausalNet, list]:
    """The reward model ``name`` (one of :data:`RMS`) trained from a copy of ``lm``."""
    torch.manual_seed(seed)
    yw, yl = chosen(pairs)
    p, yw_t, yl_t = tensors(pairs["prompt"], yw, yl)
    if name in SCALAR:
        net = reward_model(lm, 1)
        if name == "cd":
            both = tensors(
                np.concatenate([pairs["prompt"], pairs["prompt"]]), np.concatenate([pairs["y1"], pairs["y2"]])
            )
            target = torch.as_tensor(
                cfg.beta * np.concatenate([pairs["r1"], pairs["r2"]]), dtype=torch.float32
            )
            phases = [Phase("regress", (*both, target))] * cfg.rm_epochs
        else:
            phases = [Phase("bt_scalar" if name == "args" else "prefix_bt", (p, yw_t, yl_t))] * cfg.rm_epochs
        return net, fit(net, phases, lr=cfg.rm_lr, batch=cfg.batch, seed=seed)
    net = reward_model(lm, lm.out_dim)
    bt, mx = Phase("bt", (p, yw_t, yl_t)), Phase("max", (p, yw_t))
    phases = [bt] * cfg.alternations if name == "farma_bt" else [bt, mx] * (cfg.alternations - 1) + [bt]
    grad = name == "farma_grad" or cfg.target_grad  # farma_grad: the official code's gradient, always
    hist = fit(net, phases, lr=cfg.rm_lr, batch=cfg.batch, seed=seed, target_grad=grad,
               reset_optimizer=cfg.reset_optimizer)  # fmt: skip
    return net, hist


def residual(net: CausalNet, pairs: dict) -> float:
    yw, _ = chosen(pairs)
    return mean_abs_residual(net, *tensors(pairs["prompt"], yw))


def scorer(name: str, net: CausalNet | None = None, lang: Language | None = None, beta: float = 1.0):
    if name in SCALAR:
        return ScalarScorer(net=net)
    if name.startswith("exact_"):
        return ExactScorer(lang=lang, kind=name[6:], beta=beta)
    return FarmaScorer(net=net)


def run_decoder(
    lm: CausalNet, sc, lang: Language | None, prompts: np.ndarray, *, w: float, top_k: int, greedy: bool,
    seed: int, candidates: str = "lm", length: int | None = None,
) -> tuple[Decoded, np.ndarray]:  # fmt: skip
    """Decode every prompt (``length`` tokens, the language's by default); returns the decodes and R* of each
    (NaN without a language: a user's data has no known reward)."""
    T = lang.length if length is None else length
    d = decode(lm, sc, prompts, T, w=w, top_k=top_k, greedy=greedy, seed=seed, candidates=candidates)
    return d, lang.reward(prompts, d.tokens) if lang is not None else np.full(len(prompts), np.nan)


@torch.no_grad()
def trap_path(lang: Language, lm: CausalNet, rm: CausalNet) -> dict:
    """FaRMA's scores along the trap: at the prompt for A and B; after A for X and the best other token."""
    p = torch.tensor([lang.trap])
    at_prompt = rm(p, torch.zeros((1, 0), dtype=torch.long))[0, -1]
    after_a = rm(p, torch.tensor([[lang.A]]))[0, -1]
    others = torch.cat([after_a[: lang.X], after_a[lang.X + 1 :]])
    lm_a = torch.log_softmax(lm(p, torch.tensor([[lang.A]]))[0, -1], -1)
    return {
        "r_A": float(at_prompt[lang.A]),
        "r_B": float(at_prompt[lang.B]),
        "r_max_prompt": float(at_prompt.max()),
        "r_AX": float(after_a[lang.X]),
        "r_A_best_other": float(others.max()),
        "r_max_after_A": float(after_a.max()),
        "lm_logp_X_after_A": float(lm_a[lang.X]),
        "lm_rank_X_after_A": int((lm_a > lm_a[lang.X]).sum()) + 1,
    }


def seed_data(arrays, k: int) -> tuple[dict, dict]:
    """(corpus, pairs) of seed ``k`` from prepare's data.npz arrays."""
    c = arrays["corpus_seed"] == k
    s = arrays["seed"] == k
    corpus = {"prompt": arrays["corpus_prompt"][c], "y": arrays["corpus_y"][c]}
    return corpus, {key: arrays[key][s] for key in ("prompt", "y1", "y2", "r1", "r2", "label")}


def save_net(path, net: CausalNet, **meta) -> None:
    from models.common.weights import save_weights

    save_weights(path, dict(net.state_dict()), {"kind": "farma-net", **net.config(), **meta})


def load_net(path) -> CausalNet:
    from models.common.weights import load_weights

    tensors, meta = load_weights(path, "farma-net")
    net = CausalNet(*(int(meta[k]) for k in ("tokens", "prompts", "out", "emb", "hidden")))
    net.load_state_dict(tensors)
    return net.eval()


def exact_trap(lang: Language, beta: float) -> dict:
    """The exact scorers' choices on the trap (Theorems 1-3): V_max's first and second token (A then X), V_ref's
    first token (B), PARGS's population preference for A (< 1/2 picks B); ``wrong`` counts the misses."""
    p = np.array([lang.trap])
    none = np.zeros((1, 0), np.int64)
    vmax0 = lang.exact_scores("max", p, none)[0]
    vmax1 = lang.exact_scores("max", p, np.array([[lang.A]]))[0]
    vref0 = lang.exact_scores("ref", p, none)[0]
    pargs = lang.pargs_prefers_a(beta)
    picks = {
        "vmax_first": int(vmax0.argmax()),
        "vmax_second": int(vmax1.argmax()),
        "vref_first": int(vref0.argmax()),
        "pargs_first": lang.A if pargs > 0.5 else lang.B,
    }
    want = {"vmax_first": lang.A, "vmax_second": lang.X, "vref_first": lang.B, "pargs_first": lang.B}
    return picks | {
        "wrong": sum(picks[k] != want[k] for k in want),
        "vmax_A": float(vmax0[lang.A]),
        "vmax_B": float(vmax0[lang.B]),
        "vref_A": float(vref0[lang.A]),
        "vref_B": float(vref0[lang.B]),
        "pargs_p_A": pargs,
        "A": lang.A,
        "B": lang.B,
        "X": lang.X,
    }


def summarise(decodes, timing):
    """Per seed, decoder, mode and candidate rule: mean R*, LM and RM calls per token, seconds."""
    keys = ["seed", "decoder", "mode", "candidates"]
    g = decodes.groupby(keys, sort=False)
    out = g.agg(reward=("reward", "mean"), lm_calls=("lm_calls", "sum"), rm_calls=("rm_calls", "sum"),
                tokens=("tokens", "sum"), decodes=("reward", "size")).reset_index()  # fmt: skip
    out["lm_per_token"] = out.lm_calls / out.tokens
    out["rm_per_token"] = out.rm_calls / out.tokens
    return out.merge(timing, on=keys)


def call_violations(decodes, top_k: int) -> int:
    """Decodes where FaRMA's RM calls != tokens or ARGS's != k x tokens."""
    f = decodes[decodes.decoder == "farma"]
    a = decodes[decodes.decoder == "args"]
    return int((f.rm_calls != f.tokens).sum() + (a.rm_calls != top_k * a.tokens).sum())


def claim_numbers(decodes, trap, top_k: int, candidates: str) -> dict:
    """The claims' numbers: call violations; per seed (greedy, the default candidates) FaRMA's mean R* minus
    pi_ref's and minus ARGS's (worst seed and mean; the same sampled, for the report); the share of seeds whose
    FaRMA greedy decode of the trap reaches R* = 1."""
    d = decodes[decodes.candidates == candidates]
    mean = d.groupby(["mode", "decoder", "seed"]).reward.mean()
    out: dict = {"call_violations": call_violations(d, top_k), "decodes": int(len(d))}
    for mode in ("greedy", "sampled"):
        m = mean.loc[mode]
        gain = (m.loc["farma"] - m.loc["pi_ref"]).to_numpy()
        comp = (m.loc["farma"] - m.loc["args"]).to_numpy()
        out[mode] = {
            "gain_min": float(gain.min()),
            "gain_mean": float(gain.mean()),
            "gain": gain.tolist(),
            "vs_args_min": float(comp.min()),
            "vs_args_mean": float(comp.mean()),
            "vs_args": comp.tolist(),
            "reward": {dec: float(v.mean()) for dec, v in m.groupby(level="decoder")},
        }
    if len(trap):
        f = trap[trap.decoder == "farma"]
        out["trap_learned"] = float((f.reward >= 1.0 - 1e-9).mean())
        out["trap_rewards"] = {dec: float(v.mean()) for dec, v in trap.groupby("decoder").reward}
    else:
        out["trap_learned"] = float("nan")
    return out
