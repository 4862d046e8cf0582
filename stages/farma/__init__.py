"""FaRMA: reward-guided generation with one reward call per token: the controlled CPU reproduction.

Rashid, Wu, Fan, Li, Kristiadi and Poupart, ICML 2025. Official code: https://github.com/ahmadrash/FaRMA.

The reward model is a causal LM whose logits are read as rewards, r(s, x) = logits(s)[x] for every next token x
of a prefix s (one RM call scores every candidate), r(y) = logits(y_<T)[y_T] for a whole response. It learns by
alternating a Bradley-Terry epoch on full responses with a max epoch on chosen prefixes,
L_max = (logits(y_<t)[y_t] - max_x logits(y_<=t)[x])^2, so that a prefix scores as its best extension
(V = max Q). Decoding: log pi(x | s) + w r(s, x) over the LM's top-k.

The paper's models and data are out of CPU reach: the experiment is a synthetic token language with a known
reward R* (models/farma/language.py). Stages: prepare (the language, per seed 20k base-LM samples and 6k BT-labelled
pairs; or a user's prompt/chosen/rejected JSONL) -> validate (GX: tokens and prompts in range, labels binary,
rewards in range, per-seed counts) -> train (per seed: the base LM and every reward model, Lightning) -> evaluate
(decodes of 200 prompts per seed and decoder, greedy and sampled, with LM and RM call counts; the exact
scorers on the trap) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="synthetic", metadata={"choices": ("synthetic", "jsonl")})
    jsonl: str = ""  # with source jsonl: prompt/chosen/rejected lines under data/farma/input/
    tokens: int = field(
        default=16, metadata={"ge": 4}
    )  # the vocabulary (jsonl: the most frequent words + unk)
    length: int = field(default=6, metadata={"ge": 2})  # response length T
    prompts: int = field(default=8, metadata={"ge": 1})
    alpha: float = field(default=1.0, metadata={"gt": 0.0})  # Dirichlet concentration of the grammar (ours)
    value_scale: float = field(default=0.1, metadata={"ge": 0.0})  # per-token values u ~ U[0, this] (ours)
    bonus: float = field(default=1.0, metadata={"ge": 0.0})  # a later followed by c
    trap_x: float = field(default=0.1, metadata={"gt": 0.0, "lt": 1.0})  # P(X | A) on the trap
    trap_top: float = field(default=0.4, metadata={"gt": 0.0, "lt": 1.0})  # the most likely token after A
    beta: float = field(default=10.0, metadata={"gt": 0.0})  # BT labels sigmoid(beta dR*) (ours)
    corpus: int = field(default=20000, metadata={"ge": 10})  # base-LM training samples per seed
    pairs: int = field(default=6000, metadata={"ge": 10})  # preference pairs per seed
    seeds: int = field(default=3, metadata={"ge": 1})
    more_pairs: int = field(default=30000, metadata={"ge": 0})  # seed 0's data ablation (ours; 0: none)


@dataclass(frozen=True)
class Train:
    emb: int = field(default=32, metadata={"ge": 1})
    hidden: int = field(default=64, metadata={"ge": 1})
    lm_epochs: int = field(default=4, metadata={"ge": 1})
    lm_lr: float = field(default=3e-3, metadata={"gt": 0.0})
    rm_lr: float = field(default=1e-3, metadata={"gt": 0.0})
    batch: int = field(default=128, metadata={"ge": 1})  # the official effective batch (8 x 8 x 2 GPUs)
    alternations: int = field(default=5, metadata={"ge": 1})  # BT epochs; a max epoch between each two
    rm_epochs: int = field(default=5, metadata={"ge": 1})  # the baselines' epochs
    max_target_grad: bool = False  # true: the official code's gradient through max_x logits
    reset_optimizer: bool = True  # a fresh AdamW per phase, as the official scripts' separate runs
    workers: int = field(default=2, metadata={"ge": 1})


@dataclass(frozen=True)
class Evaluate:
    prompts: int = field(default=200, metadata={"ge": 1})  # sampled prompts per seed and decoder
    top_k: int = field(default=5, metadata={"ge": 1})
    w: float = field(default=1.0, metadata={"ge": 0.0})
    candidates: str = field(default="lm", metadata={"choices": ("lm", "guided")})  # guided: the official code


PAPER = Paper(
    slug="farma",
    citation="Rashid, Wu, Fan, Li, Kristiadi and Poupart. *Towards Cost-Effective Reward Guided Text "
    "Generation*. ICML 2025.",
    url="https://github.com/ahmadrash/FaRMA",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
