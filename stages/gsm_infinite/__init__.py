"""GSM-Infinity: the controlled CPU reproduction of the benchmark generator and its analysis pipeline.

Zhou et al. "GSM-Infinite: How Do Your LLMs Behave over Infinitely Increasing Context Length and Reasoning
Complexity?". ICML 2025. https://github.com/Infini-AI-Lab/gsm_infinite

Symbolic: a random assignment tree (op core statements) hidden among an unassigned look-alike tree sized to a
token budget; answer = the set of derivable variables equal to a queried value. Realistic medium (d = 2) and
hard (d = 3): iGSM-style entity problems, difficulty = the number of operations, forward or reverse (one
linear equation). Scoring: exact set / integer match, accuracy per op, pass@k = 1 - (1 - c/n)^k,
AUC = trapz(acc, op) x 100; the decline accuracy(op) ~ 1 / (1 + exp(k (op - op50))); inference scaling:
AUC(best-of-k) linear in log2 k.

Stages (one module each): prepare (problem sets: every subset at several ops, with and without noise sized by
SmolLM2's tokenizer) -> validate (GX: schema, op range, answer types, ids) -> train (inference: the simulated
reasoners, best-of-k samples, and optionally the real SmolLM2-135M on a symbolic slice) -> evaluate (the
text-only oracle against the generator, op recounted from the text, length control, the planted reasoner's
fits against their planted values, the h-round reasoner, retrieval on the noisy sets;
models/gsm_infinite/checks.py) -> report (claims in report.py, prose in report.md).

No LLM result is reproduced offline: the reasoners are stand-ins. A real model is measured with
``icml25 gsm_infinite evaluate PROBLEMS --endpoint URL --model NAME`` or ``--local PATH``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    symbolic_ops: tuple[int, ...] = field(default=tuple(range(2, 41, 2)), metadata={"ge": 1})
    realistic_ops: tuple[int, ...] = field(default=tuple(range(2, 31)), metadata={"ge": 1})
    n_per_op: int = field(default=32, metadata={"ge": 1})
    contexts: tuple[int, ...] = field(default=(8000, 16000), metadata={"ge": 1})
    noisy_ops: tuple[int, ...] = field(default=(2, 6, 10, 14, 20), metadata={"ge": 1})
    n_noisy: int = field(default=8, metadata={"ge": 1})
    #: problems per noisy op for the symbolic subset (the retrieval gate's cells); n_noisy is the realistic one
    n_noisy_symbolic: int = field(default=32, metadata={"ge": 1})
    subsets: tuple[str, ...] = field(
        default=("symbolic", "medium", "hard"), metadata={"choices": ("symbolic", "medium", "hard")}
    )


@dataclass(frozen=True)
class Train:
    max_samples: int = field(default=32, metadata={"ge": 1})
    real_model: bool = True
    real_ops: tuple[int, ...] = field(default=(1, 2, 3, 4, 6), metadata={"ge": 1})
    real_n: int = field(default=2, metadata={"ge": 1})
    real_max_new_tokens: int = field(default=128, metadata={"ge": 1})


PAPER = Paper(
    slug="gsm_infinite",
    citation="Zhou et al. *GSM-Infinite: How Do Your LLMs Behave over Infinitely Increasing Context Length and "
    "Reasoning Complexity?* ICML 2025.",
    url="https://github.com/Infini-AI-Lab/gsm_infinite",
    schema={"prepare": Prepare, "train": Train},
)
