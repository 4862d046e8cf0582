"""Simulated reasoners for the symbolic subset: checks of the analysis pipeline, NOT models of any LLM.

Each reads only the prompt text and writes a reply that goes through the same extraction and scoring as an
LLM's reply. Their parameters are fixed here (the spec's plan fixes h = 6 and the form of epsilon):

- ``exact``: full propagation from the assigned constants (the control; 100 % by construction).
- ``depth``: a depth-limited reasoner with per-step errors and bounded attention. Each statement of the context
  is missed independently with probability eps = EPS0 + KAPPA x (statements in the context); then it derives
  values breadth-first from the constants, one statement application per step, for at most B steps, where the
  budget B = LOC + SCALE x logit(V), V ~ Unif(0, 1), is drawn per attempt (a logistic capacity); each step
  errs (the derived value is off by one) with probability STEP_ERR, and the error propagates. A problem of
  difficulty op needs op - 1 derivations, so accuracy declines like a sigmoid in op centred near LOC; longer
  contexts raise eps. Attempts are independent, so best-of-k sampling shifts the curve by about
  SCALE x ln k.
- ``retrieval``: lexical retrieval-augmented solving: starting from the statements whose tokens match the
  queried value, it adds statements mentioning the variables retrieved so far, up to TOP_K statements, and
  propagates within them only. Enough for shallow trees, not for deep ones (the noise looks the same).
"""

from __future__ import annotations

import random

from .symbolic import parse_symbolic, propagate

EPS0 = 0.01
KAPPA = 2e-5
LOC = 14.0
SCALE = 3.0
STEP_ERR = 0.005
TOP_K = 20
NAMES = ("exact", "depth", "retrieval")


def _reply(values: dict[str, int], target: int) -> str:
    found = sorted(v for v, x in values.items() if x == target)
    return f"Derived {len(values)} variables.\nANSWER: {', '.join(found)}"


def exact_reply(prompt: str, rng: random.Random | None = None) -> str:
    constants, relations, target = parse_symbolic(prompt)
    return _reply(propagate(constants, relations), target)


def depth_reply(prompt: str, rng: random.Random) -> str:
    import math
    from collections import defaultdict

    constants, relations, target = parse_symbolic(prompt)
    n = len(constants) + len(relations)
    eps = min(1.0, EPS0 + KAPPA * n)
    values = {k: v for k, v in constants.items() if rng.random() >= eps}
    children: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for t, src, delta in relations:
        if rng.random() >= eps:
            children[src].append((t, delta))
    v = min(max(rng.random(), 1e-12), 1 - 1e-12)
    budget = LOC + SCALE * math.log(v / (1 - v))
    steps, frontier = 0, list(values)
    while frontier and steps < budget:
        nxt = []
        for node in frontier:
            for child, delta in children[node]:
                if child in values or steps >= budget:
                    continue
                err = (1 if rng.random() < 0.5 else -1) if rng.random() < STEP_ERR else 0
                values[child] = values[node] + delta + err
                steps += 1
                nxt.append(child)
        frontier = nxt
    return _reply(values, target)


def retrieval_reply(prompt: str, rng: random.Random | None = None) -> str:
    constants, relations, target = parse_symbolic(prompt)
    chosen_c = {k: v for k, v in constants.items() if v == target}
    mentioned = set(chosen_c)
    chosen_r: list[tuple[str, str, int]] = []
    budget = TOP_K - len(chosen_c)
    grew = True
    while budget > 0 and grew:
        grew = False
        for r in relations:
            if budget <= 0:
                break
            if r not in chosen_r and (r[0] in mentioned or r[1] in mentioned):
                chosen_r.append(r)
                mentioned.update(r[:2])
                budget -= 1
                grew = True
    if not chosen_c and budget > 0:  # the query value is not a constant: take the constants themselves
        for k, v in list(constants.items())[:budget]:
            chosen_c[k] = v
    return _reply(propagate(chosen_c, chosen_r), target)


REASONERS = {"exact": exact_reply, "depth": depth_reply, "retrieval": retrieval_reply}


def simulated(name: str):
    if name not in REASONERS:
        raise ValueError(f"unknown simulated reasoner {name!r}; one of {', '.join(REASONERS)}")
    return REASONERS[name]
