"""gsm_infinite's smoke pipeline (in process), its Great Expectations suite on a tampered set, and (slow) the
SmolLM2 tokenizer's length control and the real model through the harness."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from icml25.errors import ValidationFailed
from icml25.runner import run_stage
from models.gsm_infinite.generate import make_problem, problem_set
from models.gsm_infinite.scoring import is_correct
from tests.helpers import check_report, paper_params

SLUG = "gsm_infinite"
IDS = {
    "solver_agreement",
    "op_exact",
    "length_control",
    "sigmoid_decline",
    "inference_scaling_linear",
    "retrieval_fails",
}


def test_smoke_pipeline_checks_every_problem_and_scores_the_reasoners(smoke):
    work = smoke.run(SLUG)
    readme = check_report(work, SLUG, "smoke")
    ev = work / "data" / SLUG / "evaluated" / "main"
    checks = pd.read_csv(ev / "checks.csv")
    assert set(checks.subset) == {"symbolic", "medium", "hard"}
    assert (
        checks.agree.all()
        and (checks.op == checks.op_text).all()
        and (checks.op == checks.op_requested).all()
    )
    acc = pd.read_csv(ev / "accuracy.csv")
    assert set(acc.reasoner) == {"exact", "depth", "hround", "retrieval"}
    assert (acc[acc.reasoner == "exact"].accuracy == 1.0).all()
    claims = json.loads((work / "reports" / SLUG / "claims.json").read_text())["claims"]
    assert set(claims) == IDS
    assert claims["solver_agreement"]["value"] == 0 and claims["op_exact"]["value"] == 0
    assert {c: claims[c]["kind"] for c in ("op_exact", "sigmoid_decline", "retrieval_fails")} == {
        "op_exact": "invariant",
        "sigmoid_decline": "simulated",
        "retrieval_fails": "result",
    }
    assert "No LLM result of the paper is reproduced here" in readme and "--endpoint" in readme
    assert "figures/symbolic_reasoners.png" in readme


def test_great_expectations_suite_rejects_a_tampered_set(tmp_path, root):
    params = paper_params(root, SLUG)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    prepared = tmp_path / "data" / SLUG / "prepared" / "main"
    prepared.mkdir(parents=True)
    problems = list(problem_set("symbolic", [2, 3], 0, 2, seed=1))
    (prepared / "symbolic_c0.jsonl").write_text("".join(json.dumps(p) + "\n" for p in problems))
    with pytest.raises(ValidationFailed, match="meta.json"):  # prepare always records its sets
        run_stage(tmp_path, SLUG, "validate")
    (prepared / "meta.json").write_text(json.dumps({"sets": {"symbolic_c0.jsonl": len(problems)}, "seed": 1}))
    run_stage(tmp_path, SLUG, "validate")  # the honest set passes
    problems[1]["answer"] = 7  # an integer answer on a symbolic problem
    problems[2]["op"] = 0
    (prepared / "symbolic_c0.jsonl").write_text("".join(json.dumps(p) + "\n" for p in problems))
    with pytest.raises(ValidationFailed) as info:
        run_stage(tmp_path, SLUG, "validate")
    assert "answer_ok" in str(info.value) and "op" in str(info.value)


@pytest.mark.slow
def test_smollm2_tokenizer_sizes_8k_and_16k_contexts_within_ten_percent():
    for subset, mode in (("symbolic", None), ("medium", "forward"), ("hard", "reverse")):
        for target in (8000, 16000):
            p = make_problem(subset, 6, 11, context=target, mode=mode)
            assert abs(p["context_tokens"] - target) / target <= 0.10
            assert p["noise_statements"] > 0


@pytest.mark.slow
def test_real_small_model_answers_through_the_harness(tmp_path):
    from models.gsm_infinite.harness import LocalTransformers, evaluate
    from models.gsm_infinite.tokens import gguf_path

    backend = LocalTransformers(gguf_path(), max_new_tokens=48)
    problems = list(problem_set("symbolic", [1, 2], 0, 1, seed=3))
    out = tmp_path / "results.jsonl"
    assert evaluate(problems, backend, out) == 2
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(isinstance(r["reply"], str) and r["reply"] for r in rows)
    assert [r["correct"] for r in rows] == [
        is_correct(p, r["reply"]) for p, r in zip(problems, rows, strict=True)
    ]
