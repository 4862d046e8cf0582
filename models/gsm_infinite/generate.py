"""Problem sets: every subset, op and context length, seeded per problem, as JSONL-ready records.

A record holds at least ``id``, ``subset`` (symbolic | medium | hard), ``mode`` (None | forward | reverse),
``op``, ``context`` (the token target, 0 = no noise), ``context_tokens`` (the prompt's measured length),
``noise_statements``, ``seed``, ``prompt``, ``solution``, ``answer`` (a list of variable names for symbolic, an
integer otherwise) and ``graph`` (the structured problem). Each problem's seed is drawn from
``SeedSequence([seed, subset, op, context, index])``, so any slice of a set can be regenerated alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

SUBSETS = ("symbolic", "medium", "hard")
MODES = ("forward", "reverse")


def problem_seed(seed: int, subset: str, op: int, context: int, index: int) -> int:
    state = np.random.SeedSequence([seed, SUBSETS.index(subset), op, context, index]).generate_state(1)
    return int(state[0])


def check_subset(subset: str) -> str:
    if subset not in SUBSETS:
        raise ValueError(f"unknown subset {subset!r}; one of {', '.join(SUBSETS)}")
    return subset


def parse_ops(text: str) -> list[int]:
    """'5', '2-20', '2-20:2' or '2,4,8' as a list of ops (each >= 1)."""
    t = str(text).strip()
    try:
        if "," in t:
            ops = [int(x) for x in t.split(",")]
        elif "-" in t[1:]:
            span, _, step = t.partition(":")
            lo, hi = span.split("-", 1)
            ops = list(range(int(lo), int(hi) + 1, int(step) if step else 1))
        else:
            ops = [int(t)]
    except ValueError:
        raise ValueError(f"op must look like 5, 2-20, 2-20:2 or 2,4,8; got {text!r}") from None
    bad = [o for o in ops if o < 1]
    if not ops or bad:
        raise ValueError(f"op must be >= 1, got {bad[0] if bad else text!r}")
    return ops


def make_problem(
    subset: str,
    op: int,
    seed: int,
    context: int = 0,
    mode: str | None = None,
    template: str | None = None,
    count: Callable[[str], int] | None = None,
) -> dict:
    """One problem whose prompt is sized to ``context`` tokens (0: no noise)."""
    check_subset(subset)
    if subset == "symbolic":
        from .symbolic import generate_symbolic

        def build(k: int) -> dict:
            return generate_symbolic(op, seed, noise_statements=k)
    else:
        from .realistic import generate_realistic

        d = 2 if subset == "medium" else 3
        if mode not in MODES:
            raise ValueError(f"mode must be forward or reverse for {subset}, got {mode!r}")

        def build(k: int) -> dict:
            return generate_realistic(op, d, mode, seed, template=template, noise_statements=k)

    k = 0
    if context > 0:
        from .tokens import count_tokens, fit_noise

        count = count or count_tokens
        k, tokens = fit_noise(lambda j: build(j)["prompt"], context, count)
        problem = build(k)
    else:
        problem = build(0)
        tokens = count(problem["prompt"]) if count else None
    problem.update(context=context, context_tokens=tokens, seed=seed, noise_statements=k)
    return problem


def problem_set(
    subset: str,
    ops: list[int],
    context: int,
    n: int,
    seed: int = 0,
    count: Callable[[str], int] | None = None,
) -> Iterator[dict]:
    """n problems per op (realistic: forward and reverse alternate; op 1 is forward only), with stable ids, one
    at a time (each is written and dropped by the caller: holding thousands of fresh containers only feeds the
    garbage collector)."""
    check_subset(subset)
    if n < 1:
        raise ValueError(f"n must be >= 1 problem per op, got {n}")
    for op in ops:
        for i in range(n):
            # realistic sets alternate forward and reverse; reverse needs op >= 2 (a hidden constant and the query)
            mode = None if subset == "symbolic" else ("forward" if op < 2 else MODES[i % 2])
            s = problem_seed(seed, subset, op, context, i)
            problem = make_problem(subset, op, s, context, mode=mode, count=count)
            problem["id"] = f"{subset}-{mode or 'sym'}-c{context}-op{op}-{i}"
            yield problem
