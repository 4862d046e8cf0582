"""Simulated reasoners and a lexical retriever for the symbolic subset: stand-ins for an LLM, NOT models of one.

Each reads only the prompt text and writes a reply that goes through the same extraction and scoring as an
LLM's reply. Their constants are fixed here (the spec's plan fixes h = 6, the form of eps and the top-20).

- ``exact``: full propagation from the assigned constants (the control; 100 % by construction).
- ``depth``: the planted reasoner, a known-answer check of the analysis (scoring, pass@k, AUC, the fits). Each
  attempt draws a step budget B = LOC + SCALE logit(V), V ~ Unif(0, 1), i.e. B is logistic with location LOC
  and scale SCALE; misses each statement of the context with probability eps = KAPPA n (n statements in the
  context); then propagates breadth-first from the constants, one step per statement applied (reading a
  constant included). If the propagation is not complete after B steps the reply ends without an answer (a
  reply cut at its length limit) and scores 0. A problem of difficulty op takes exactly op steps, so without
  misses an attempt succeeds iff B >= op:

      P(correct | op) = P(logit V >= (op - LOC)/SCALE) = 1 / (1 + exp((op - LOC)/SCALE)),

  the fitted sigmoid 1 / (1 + exp(k (op - op50))) with planted op50 = LOC and k = 1/SCALE. Attempts are
  independent, so pass@k(op) = 1 - (1 - P)^k, a curve whose tail moves right by about SCALE ln k: the AUC of
  best-of-k grows by about 100 SCALE ln 2 per doubling of k while the op range holds the whole curve.
  (Without noise eps = KAPPA op <= 1e-3, so a miss changes P by < 1 % at op <= 40.) This shape is designed in;
  the check is whether the pipeline recovers it (:func:`planted_accuracy`, :func:`planted_auc`).
- ``hround``: the spec's h-round substitution reasoner, whose shape is NOT designed in. Each attempt misses each
  statement with probability eps = EPS0 + KAPPA n, then runs H = 6 rounds of parallel substitution (round r
  derives every variable whose source was known after round r - 1) and lists the derived variables equal to
  the queried value. It is correct iff every answer variable sits at depth <= H of the core tree and no
  statement on the paths from the root to them was missed:

      E[correct] = 1[max depth of the answer variables <= H] (1 - eps)^|statements on those paths|

  (:func:`hround_expected`), so its decline with op comes from the depth of random recursive trees, and more
  attempts cannot fix a too-deep answer (best-of-k saturates).
- ``retrieval``: retrieval-augmented solving with a retriever that follows derivations. Okapi BM25 (k1 = 1.2,
  b = 0.75, idf = ln(1 + (N - df + 0.5)/(df + 0.5))) over the statements, tokens split on spaces. Seeds: the
  SEEDS statements scoring highest against the question (its words and the queried value), only those scoring
  > 0 when any does (else the first SEEDS in context order: BM25's tie). Then, hop by hop, the statements that
  mention a variable of the statements retrieved so far (BM25 against those variables, best first) until TOP_K
  statements are held; it propagates within them only. It finds the core whenever the queried value is the
  root's constant (the only assigned statement) or when the retrieved statements are the core by chance (a
  context without noise); otherwise its seeds are look-alike noise.
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from functools import lru_cache

from .symbolic import parse_symbolic, propagate

EPS0 = 0.01
KAPPA = 2e-5
LOC = 14.0
SCALE = 3.0
H = 6
TOP_K = 20
SEEDS = 5
BM25_K1, BM25_B = 1.2, 0.75
NAMES = ("exact", "depth", "hround", "retrieval")


@lru_cache(maxsize=8)
def _parsed(prompt: str):
    """parse_symbolic, cached: a reasoner answers the same prompt once per sample (callers must not mutate)."""
    return parse_symbolic(prompt)


def _reply(values: dict[str, int], target: int) -> str:
    found = sorted(v for v, x in values.items() if x == target)
    return f"Derived {len(values)} variables.\nANSWER: {', '.join(found)}"


def exact_reply(prompt: str, rng: random.Random | None = None) -> str:
    constants, relations, target = _parsed(prompt)
    return _reply(propagate(constants, relations), target)


def _kept(constants, relations, eps: float, rng: random.Random):
    """The statements an attempt reads: each missed independently with probability eps."""
    kept_c = {k: v for k, v in constants.items() if rng.random() >= eps}
    kept_r = [r for r in relations if rng.random() >= eps]
    return kept_c, kept_r


def depth_reply(prompt: str, rng: random.Random) -> str:
    constants, relations, target = _parsed(prompt)
    n = len(constants) + len(relations)
    values, kept_r = _kept(constants, relations, min(1.0, KAPPA * n), rng)
    children: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for t, src, delta in kept_r:
        children[src].append((t, delta))
    v = min(max(rng.random(), 1e-12), 1 - 1e-12)
    budget = LOC + SCALE * math.log(v / (1 - v))
    steps, frontier = len(values), list(values)
    if steps > budget:
        return "I ran out of steps before reading the assignments."
    while frontier:
        nxt = []
        for node in frontier:
            for child, delta in children[node]:
                if child in values:
                    continue
                if steps + 1 > budget:
                    return f"Derived {len(values)} variables so far; I ran out of steps."
                values[child] = values[node] + delta
                steps += 1
                nxt.append(child)
        frontier = nxt
    return _reply(values, target)


def hround_reply(prompt: str, rng: random.Random) -> str:
    constants, relations, target = _parsed(prompt)
    n = len(constants) + len(relations)
    kept_c, kept_r = _kept(constants, relations, min(1.0, EPS0 + KAPPA * n), rng)
    return _reply(propagate(kept_c, kept_r, rounds=H), target)


_TOKEN_SPLIT = re.compile(r"[\s.;,?]+")
_VAR = re.compile(r"^V\d+$")


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN_SPLIT.split(text) if t]


class BM25:
    """Okapi BM25 over a list of token lists (an inverted index; scores only the documents a query touches)."""

    def __init__(self, docs: list[list[str]], k1: float = BM25_K1, b: float = BM25_B):
        self.k1, self.b = k1, b
        self.n = len(docs)
        self.lengths = [len(d) for d in docs]
        self.avg = sum(self.lengths) / max(self.n, 1)
        self.postings: dict[str, dict[int, int]] = defaultdict(dict)
        for i, d in enumerate(docs):
            for t in d:
                self.postings[t][i] = self.postings[t].get(i, 0) + 1

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query: list[str]) -> dict[int, float]:
        """{document: score} for the documents holding at least one query term (the others score 0)."""
        out: dict[int, float] = defaultdict(float)
        for term in dict.fromkeys(query):
            idf = self.idf(term)
            for i, tf in self.postings.get(term, {}).items():
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                out[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out


def retrieve(prompt: str, top_k: int = TOP_K, seeds: int = SEEDS) -> list[int]:
    """The indices (in context order of the statements) the derivation-following BM25 retriever holds."""
    start, end = prompt.find("<context>"), prompt.find("</context>")
    statements = [s for s in prompt[start + len("<context>") : end].split(".") if s.strip()]
    docs = [_tokens(s) for s in statements]
    index = BM25(docs)
    question = prompt[end + len("</context>") :]
    first = index.scores(_tokens(question))
    if first:
        chosen = sorted(first, key=lambda i: (-first[i], i))[:seeds]
    else:
        chosen = list(range(min(seeds, len(docs))))
    held = set(chosen)
    seen = {t for i in chosen for t in docs[i] if _VAR.match(t)}
    frontier = sorted(seen)
    while len(chosen) < top_k and frontier:
        scores = index.scores(frontier)
        ranked = sorted((i for i in scores if i not in held), key=lambda i: (-scores[i], i))
        taken = ranked[: top_k - len(chosen)]
        chosen += taken
        held.update(taken)
        new = {t for i in taken for t in docs[i] if _VAR.match(t)} - seen
        seen |= new
        frontier = sorted(new)
    return sorted(chosen)


def retrieval_reply(prompt: str, rng: random.Random | None = None) -> str:
    constants, relations, target = _parsed(prompt)
    start, end = prompt.find("<context>"), prompt.find("</context>")
    statements = [s for s in prompt[start + len("<context>") : end].split(".") if s.strip()]
    sub = ". ".join(statements[i].strip() for i in retrieve(prompt)) + "."
    c, r, _ = parse_symbolic(f"<context>\n{sub}\n</context>\n{prompt[end + len('</context>') :]}")
    return _reply(propagate(c, r), target)


REASONERS = {"exact": exact_reply, "depth": depth_reply, "hround": hround_reply, "retrieval": retrieval_reply}


def simulated(name: str):
    if name not in REASONERS:
        raise ValueError(f"unknown simulated reasoner {name!r}; one of {', '.join(REASONERS)}")
    return REASONERS[name]


# --------------------------------------------------------------------------------------------------------
# Known answers
# --------------------------------------------------------------------------------------------------------
def planted_accuracy(op):
    """The depth reasoner's planted success probability without noise: 1 / (1 + exp((op - LOC)/SCALE))."""
    import numpy as np

    return 1.0 / (1.0 + np.exp((np.asarray(op, float) - LOC) / SCALE))


def expected_pass_at_k(p: float, samples: int, k: int) -> float:
    """E[1 - (1 - C/n)^k] for C ~ Binomial(n, p): the expectation of the official pass@k estimator (it is biased
    low for k > 1 since (1 - c/n)^k is convex in c), the value the pipeline should recover."""
    return float(
        sum(
            math.comb(samples, c) * p**c * (1 - p) ** (samples - c) * (1 - (1 - c / samples) ** k)
            for c in range(samples + 1)
        )
    )


def planted_auc(ops, ks, samples: int) -> list[float]:
    """The planted AUC = 100 trapz(E[pass@k], op) for each k over ``ops`` (the depth reasoner, no noise)."""
    from .scoring import auc

    ps = planted_accuracy(ops)
    return [auc(ops, [expected_pass_at_k(float(p), samples, k) for p in ps]) for k in ks]


def hround_expected(problem: dict) -> float:
    """The h-round reasoner's exact success probability on one symbolic problem (from its graph): 1 if every
    answer variable is within H rounds of the root and none of the statements on the root-to-answer paths is
    missed, each missed with probability eps = EPS0 + KAPPA n."""
    rows = problem["graph"]["core"]
    parent = {name: par for name, par, _, _ in rows}
    depth: dict[str, int] = {}
    for name, par, _, _ in rows:  # parents precede children
        depth[name] = 0 if par is None else depth[par] + 1
    if max(depth[a] for a in problem["answer"]) > H:
        return 0.0
    path: set[str] = set()
    for a in problem["answer"]:
        while a is not None and a not in path:
            path.add(a)
            a = parent[a]
    n = len(rows) + int(problem.get("noise_statements") or 0)
    return (1 - min(1.0, EPS0 + KAPPA * n)) ** len(path)
