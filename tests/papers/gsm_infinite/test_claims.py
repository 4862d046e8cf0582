"""gsm_infinite's claims computed through their own functions (tests.helpers.claim_verdict) on evaluated folders
built here: retrieval_fails (the one result) is failed by a generator that skips its filler; the planted
reasoner's known-answer claims hold for the planted reasoner and are failed by a linear decline and by
attempts that are all alike."""

from __future__ import annotations

import json
import random

import pandas as pd

from models.gsm_infinite.checks import depth_fits, retrieval_summary, score_replies, symbolic_rows
from models.gsm_infinite.harness import Simulated, evaluate
from models.gsm_infinite.reasoners import depth_reply, planted_accuracy
from models.gsm_infinite.scoring import is_correct
from models.gsm_infinite.symbolic import generate_symbolic
from tests.helpers import claim_verdict

SLUG = "gsm_infinite"
NOISE_8K = 685  # the official statement count for 8k Llama-3 tokens at op 10: 8000 x 828 / 9668


def _noisy_set(noise: int, ops=(10, 14, 20), n: int = 8, seed: int = 0) -> list[dict]:
    problems = []
    for op in ops:
        for i in range(n):
            p = generate_symbolic(op, seed * 10_000 + 100 * op + i, noise_statements=noise)
            p.update(id=f"symbolic-sym-c8000-op{op}-{i}", context=8000)  # labelled as the 8k set either way
            problems.append(p)
    return problems


def _retrieval_folder(folder, problems: list[dict]):
    """Run the exact solver and the retriever through the harness on one noisy set and summarise as evaluate
    does: ``folder`` becomes an evaluated folder for the retrieval claim."""
    folder.mkdir()
    stem = "symbolic_c8000"
    acc = []
    for name in ("exact", "retrieval"):
        out = folder / f"{stem}.{name}.jsonl"
        evaluate(problems, Simulated(name), out, durable=False)
        results = [json.loads(x) for x in out.read_text().splitlines()]
        acc += score_replies(results, f"{stem}.{name}")
    retrieval = pd.DataFrame([{"set": stem, "id": r["id"], "correct": r["correct"]} for r in results])
    rows = pd.DataFrame(symbolic_rows(problems, stem))
    summary = {"retrieval": retrieval_summary(pd.DataFrame(acc), rows, retrieval)}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_retrieval_fails_is_failed_by_a_generator_without_filler(root, tmp_path):
    honest = _retrieval_folder(tmp_path / "honest", _noisy_set(NOISE_8K))
    stub = _retrieval_folder(tmp_path / "stub", _noisy_set(0))  # the stub: no filler around the core
    skipped = claim_verdict(root, SLUG, "retrieval_fails", stub)
    assert skipped["passed"] == 0 and skipped["value"] == 1.0
    # with its filler the generator leaves retrieval only the problems whose value is the root's constant
    real = claim_verdict(root, SLUG, "retrieval_fails", honest)
    assert real["value"] < 0.75 and "root's constant" in real["note"]


def _depth_folder(tmp_path, correct, problems: int = 16, samples: int = 16) -> None:
    """An evaluated folder whose summary holds the planted reasoner's fits from replies decided by
    ``correct(op, problem, sample)``, scored by the pipeline's own functions."""
    results = [
        {
            "id": f"p{op}-{i}",
            "sample": s,
            "subset": "symbolic",
            "context": 0,
            "op": op,
            "seconds": 0.0,
            "correct": bool(correct(op, i, s)),
        }
        for op in range(2, 41, 2)
        for i in range(problems)
        for s in range(samples)
    ]
    acc = pd.DataFrame(score_replies(results, "symbolic_c0.depth"))
    (tmp_path / "summary.json").write_text(json.dumps({"depth": depth_fits(acc)}))


def _verdicts(root, folder) -> tuple[dict, dict]:
    return (
        claim_verdict(root, SLUG, "sigmoid_decline", folder),
        claim_verdict(root, SLUG, "inference_scaling_linear", folder),
    )


def test_planted_reasoner_passes_its_known_answer_claims(root, tmp_path):
    problems = {(op, i): generate_symbolic(op, 7 * op + i) for op in range(2, 41, 2) for i in range(16)}

    def planted(op, i, s):
        p = problems[(op, i)]
        return is_correct(p, depth_reply(p["prompt"], random.Random(f"{op}/{i}/{s}")))

    _depth_folder(tmp_path, planted)
    sig, scaling = _verdicts(root, tmp_path)
    assert sig["passed"] == 1 and scaling["passed"] == 1, (sig, scaling)


def test_a_linear_decline_fails_the_planted_sigmoid(root, tmp_path):
    """Same op50 (14), but accuracy falls linearly, 1 - op/28: R^2 of a sigmoid fit would still be high."""
    _depth_folder(tmp_path, lambda op, i, s: random.Random(f"{op}/{i}/{s}").random() < max(0.0, 1 - op / 28))
    sig, _ = _verdicts(root, tmp_path)
    assert sig["passed"] == 0 and sig["value"] > 0.2


def test_attempts_that_are_all_alike_fail_the_planted_scaling(root, tmp_path):
    """Each problem solved by all of its attempts or none, with the planted accuracy per op: the same k = 1
    curve, no gain from best-of-k."""
    _depth_folder(
        tmp_path, lambda op, i, s: random.Random(f"{op}/{i}").random() < float(planted_accuracy(op))
    )
    sig, scaling = _verdicts(root, tmp_path)
    assert scaling["passed"] == 0 and scaling["value"] > 0.5
