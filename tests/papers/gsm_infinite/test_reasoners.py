"""gsm_infinite's stand-ins and readers on planted data: the planted reasoner's success law, the h-round
reasoner against its exact expectation, the BM25 retriever (scores, derivation hops, the lexical anchor), and
op recounted from the prompt text (symbolic and realistic)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from models.gsm_infinite import realistic, symbolic
from models.gsm_infinite.reasoners import (
    BM25,
    EPS0,
    KAPPA,
    LOC,
    REASONERS,
    H,
    depth_reply,
    expected_pass_at_k,
    hround_expected,
    hround_reply,
    planted_accuracy,
    planted_auc,
    retrieval_reply,
    retrieve,
)
from models.gsm_infinite.scoring import is_correct


def _prompt(statements: list[str], value: int) -> str:
    context = " ".join(f"{s}." for s in statements)
    return f"<context>\n{context}\n</context>\n\n" + symbolic.INSTRUCTION.format(value=value)


def _chain(length: int, value: int = 3) -> dict:
    """A chain V000000 = value, V000001 = V000000, ...: every variable equals ``value``, the last at depth
    ``length - 1``."""
    names = [f"V{i:06d}" for i in range(length)]
    statements = [f"assign {names[0]} = {value}"] + [
        f"assign {b} = {a}" for a, b in zip(names[:-1], names[1:], strict=True)
    ]
    rows = [[names[0], None, None, value]] + [
        [b, a, "=", value] for a, b in zip(names[:-1], names[1:], strict=True)
    ]
    return {
        "subset": "symbolic",
        "prompt": _prompt(statements[::-1], value),
        "answer": names,
        "noise_statements": 0,
        "graph": {"core": rows},
    }


@pytest.mark.parametrize("op", [6, 14, 22])
def test_planted_reasoner_succeeds_with_the_planted_probability(op):
    p = symbolic.generate_symbolic(op, 5)
    n = 3000
    hits = sum(is_correct(p, depth_reply(p["prompt"], random.Random(i))) for i in range(n))
    planted = float(planted_accuracy(op))
    assert abs(hits / n - planted) < 4 * math.sqrt(planted * (1 - planted) / n) + 0.01  # misses: < 0.5 %
    assert planted_accuracy(LOC) == pytest.approx(0.5)


def test_expected_pass_at_k_is_the_mean_of_the_official_estimator():
    rng = np.random.default_rng(0)
    c = rng.binomial(8, 0.3, size=200_000)
    assert expected_pass_at_k(0.3, 8, 4) == pytest.approx(np.mean(1 - (1 - c / 8) ** 4), abs=2e-3)
    assert expected_pass_at_k(0.3, 8, 1) == pytest.approx(0.3)
    assert expected_pass_at_k(0.3, 8, 4) < 1 - 0.7**4  # biased low
    aucs = planted_auc([2, 40], [1, 2], 8)
    assert aucs[0] == pytest.approx(100 * 38 * (planted_accuracy(2) + planted_accuracy(40)) / 2)
    assert aucs[1] > aucs[0]


def test_hround_reaches_depth_h_and_no_deeper():
    shallow, deep = _chain(H + 1), _chain(H + 2)  # last variable at depth H, then H + 1
    assert hround_expected(shallow) == pytest.approx((1 - EPS0 - KAPPA * (H + 1)) ** (H + 1))
    assert hround_expected(deep) == 0.0
    hits = [is_correct(shallow, hround_reply(shallow["prompt"], random.Random(i))) for i in range(400)]
    assert 0.85 < np.mean(hits) < 0.99
    assert not any(is_correct(deep, hround_reply(deep["prompt"], random.Random(i))) for i in range(50))
    assert all(is_correct(deep, REASONERS["exact"](deep["prompt"])) for _ in range(2))


def test_hround_matches_its_exact_expectation_on_generated_problems():
    problems = [symbolic.generate_symbolic(op, s, noise_statements=s) for op in (12, 40) for s in range(40)]
    expected = np.mean([hround_expected(p) for p in problems])
    measured = np.mean(
        [
            is_correct(p, hround_reply(p["prompt"], random.Random(f"{i}/{j}")))
            for i, p in enumerate(problems)
            for j in range(5)
        ]
    )
    assert 0.3 < expected < 0.97 and abs(measured - expected) < 0.05
    assert all(
        not is_correct(p, hround_reply(p["prompt"], random.Random(1)))
        for p in problems
        if hround_expected(p) == 0
    )


def test_bm25_scores_by_hand():
    index = BM25([["a", "b"], ["a", "a", "c", "d"], ["c"]])
    idf_a = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    norm0 = 1.2 * (1 - 0.75 + 0.75 * 2 / (7 / 3))
    assert index.scores(["a"])[0] == pytest.approx(idf_a * 2.2 / (1 + norm0))
    assert set(index.scores(["a"])) == {0, 1} and index.scores(["z"]) == {}
    assert index.scores(["a"])[1] > 0 and index.idf("c") == index.idf("a")


def test_retriever_follows_derivations_from_the_anchor_past_look_alike_noise():
    core = ["assign V000001 = 7", "assign V000002 = V000001 + 1", "assign V000003 = V000002 - 1"]
    noise = [f"assign V{100 + i:06d} = V{200 + i:06d} + 1" for i in range(60)]
    prompt = _prompt(noise[:30] + core[::-1] + noise[30:], 7)
    statements = [
        s.strip() for s in prompt.split("<context>")[1].split("</context>")[0].split(".") if s.strip()
    ]
    held = {statements[i] for i in retrieve(prompt)}
    assert set(core) <= held and len(held) <= 20
    problem = {"subset": "symbolic", "answer": ["V000001", "V000003"]}
    assert is_correct(problem, retrieval_reply(prompt))
    # the queried value not in the text: the seeds are the first statements, look-alike noise
    shifted = _prompt(noise[:30] + core[::-1] + noise[30:], 8)
    assert not is_correct({"subset": "symbolic", "answer": ["V000002"]}, retrieval_reply(shifted))
    # the same without noise: the seeds are the core itself
    assert is_correct({"subset": "symbolic", "answer": ["V000002"]}, retrieval_reply(_prompt(core, 8)))


def test_retrieval_without_noise_holds_the_core_up_to_its_budget():
    for seed in range(10):
        small = symbolic.generate_symbolic(15, seed)
        assert is_correct(small, retrieval_reply(small["prompt"]))
    big = [symbolic.generate_symbolic(40, s) for s in range(20)]
    assert np.mean([is_correct(p, retrieval_reply(p["prompt"])) for p in big]) < 0.3


def test_symbolic_op_is_recounted_from_the_text():
    for op in (1, 3, 17, 40):
        for seed in range(5):
            p = symbolic.generate_symbolic(op, seed, noise_statements=seed * 11)
            assert symbolic.count_ops_text(p["prompt"]) == op
    p = symbolic.generate_symbolic(9, 1, noise_statements=5)
    child = p["graph"]["core"][-1]  # a leaf: dropping its statement leaves the rest derivable
    stmt = f"assign {child[0]} = {child[1]}{'' if child[2] == '=' else ' ' + child[2]}."
    assert stmt in p["prompt"]
    assert symbolic.count_ops_text(p["prompt"].replace(stmt, "")) == 8


def test_realistic_op_is_recounted_from_the_text():
    for d in (2, 3):
        for mode in ("forward", "reverse"):
            for op in (2, 7, 19, 30):
                p = realistic.generate_realistic(op, d, mode, 100 * op + d, noise_statements=op % 4)
                assert realistic.count_ops_text(p["prompt"]) == op == realistic.count_ops(p["graph"])
    text = (
        "Answer the question below.\n"
        "Note: the total number of adult animals in a location is the sum of the number of every type of adult "
        "animals mentioned for that location in this problem; a type never mentioned for a location counts as 0.\n"
        "Problem: The number of adult owl in Bundle Zoo equals 3. The number of adult fox in Bundle Zoo equals "
        "2 plus the number of adult owl in Bundle Zoo. The number of adult bear in Pine Ridge equals the sum "
        "of the number of adult owl in Bundle Zoo and the number of adult fox in Bundle Zoo.\n"
        "Question: What is the total number of adult animals in Bundle Zoo?"
    )
    # the aggregate sums 2 counts (2), the fox reads 2 plus the owl (2), the owl a constant (1); not the bear
    assert realistic.count_ops_text(text) == 5 and realistic.solve_realistic_text(text) == 8
