"""gsm_infinite: the symbolic generator and its oracle, the scoring, the simulated reasoners, the harness
(resume, the HTTP back-end against a server on 127.0.0.1) and the CLI."""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from flows.cli import main as cli_main
from models.gsm_infinite.harness import (
    OpenAIChat,
    Simulated,
    evaluate,
    read_problems,
    read_results,
    summarize,
)
from models.gsm_infinite.reasoners import REASONERS
from models.gsm_infinite.scoring import (
    auc,
    extract_realistic,
    extract_symbolic,
    fit_line,
    fit_sigmoid,
    is_correct,
    pass_at_k,
    sigmoid,
)
from models.gsm_infinite.symbolic import generate_symbolic, parse_symbolic, propagate, solve_symbolic_text
from models.gsm_infinite.tokens import fit_noise, parse_context


@pytest.mark.parametrize("op", [1, 2, 5, 17, 40])
def test_op_counts_the_core_assignments_and_the_oracle_agrees(op):
    for seed in range(15):
        p = generate_symbolic(op, seed, noise_statements=seed * 7)
        constants, relations, value = parse_symbolic(p["prompt"])
        assert len(p["graph"]["core"]) == op and len(constants) == 1
        assert len(constants) + len(relations) == op + seed * 7
        assert solve_symbolic_text(p["prompt"]) == sorted(p["answer"]) and p["answer"]
        core_values = {row[0]: row[3] for row in p["graph"]["core"]}
        assert value in core_values.values()
        assert sorted(k for k, v in core_values.items() if v == value) == sorted(p["answer"])


def test_noise_variables_are_never_derivable():
    for seed in range(20):
        p = generate_symbolic(8, seed, noise_statements=60)
        noise = set(p["graph"]["noise_names"])
        assert p["graph"]["noise_root"] == p["graph"]["noise_names"][0]
        assert len(noise) == 61  # 60 statements: a tree on 61 names, its root never assigned
        derived = propagate(*parse_symbolic(p["prompt"])[:2])
        assert not noise & set(derived)
        assert set(derived) == {row[0] for row in p["graph"]["core"]}


def test_generation_is_seeded():
    assert generate_symbolic(9, 3, 10) == generate_symbolic(9, 3, 10)
    assert generate_symbolic(9, 3, 10)["prompt"] != generate_symbolic(9, 4, 10)["prompt"]
    with pytest.raises(ValueError, match="op must be an integer >= 1, got 0"):
        generate_symbolic(0, 1)


def test_realistic_extraction_cascade_on_hand_written_replies():
    assert extract_realistic("Step 1 ... Answer: 42.") == 42
    assert extract_realistic("We get \\boxed{7} first, then \\boxed{9}") == 9  # the last box
    assert extract_realistic("the total is 5. so the result is 12.") == 12  # "is " uses the last match
    assert extract_realistic("**Answer:** 3.") == 3
    assert (
        extract_realistic("solution: x. answer: 8.") == 8
    )  # "answer: x" fails to parse, the cascade moves on
    assert extract_realistic("no number here") is None
    assert extract_realistic("ANSWER: -4.") == -4


def test_symbolic_extraction_and_set_scoring():
    reply = "<think>V000001 maybe</think> chain V000007 = 3 ... Final answer: V000002, V000003 and V000002."
    assert extract_symbolic(reply) == ["V000002", "V000003"]
    assert extract_symbolic("V000001\nV000004, V000005\n") == ["V000004", "V000005"]
    problem = {"subset": "symbolic", "answer": ["V000003", "V000002"]}
    assert is_correct(problem, reply)
    assert not is_correct(problem, "ANSWER: V000002")  # a partial list scores 0


def test_pass_at_k_and_auc_on_known_values():
    assert pass_at_k(0, 4, 2) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(1, 4, 2) == pytest.approx(1 - 0.75**2)
    assert auc([1, 2, 3], [1.0, 1.0, 1.0]) == pytest.approx(200.0)
    assert auc([3, 1, 2], [0.0, 1.0, 0.5]) == pytest.approx(100.0)  # sorted by op first: trapz of 1, .5, 0
    with pytest.raises(ValueError):
        pass_at_k(5, 4, 1)


def test_sigmoid_fit_recovers_a_planted_curve():
    ops = np.arange(1, 41)
    fit = fit_sigmoid(ops, sigmoid(ops, 0.3, 17.0))
    assert fit["k"] == pytest.approx(0.3, rel=1e-4) and fit["op50"] == pytest.approx(17.0, rel=1e-4)
    assert fit["r2"] == pytest.approx(1.0)
    assert fit_line([0, 1, 2], [1, 3, 5])["slope"] == pytest.approx(2.0)


def test_reasoners_exact_depth_hround_and_retrieval():
    deep = [generate_symbolic(30, s) for s in range(40)]
    shallow = [generate_symbolic(2, s) for s in range(40)]
    rng = random.Random(0)
    acc = {}
    for name, fn in REASONERS.items():
        acc[name] = (
            np.mean([is_correct(p, fn(p["prompt"], rng)) for p in shallow]),
            np.mean([is_correct(p, fn(p["prompt"], rng)) for p in deep]),
        )
    assert acc["exact"] == (1.0, 1.0)
    assert acc["depth"][0] > 0.9 and acc["depth"][1] < 0.2  # planted: 0.98 at op 2, 0.02 at op 30
    assert acc["hround"][0] > 0.9 and 0.4 < acc["hround"][1] < 0.95  # only the answers deeper than h fail
    assert acc["retrieval"][0] == 1.0 and acc["retrieval"][1] < 0.5  # 20 statements hold no op-30 core


def test_fit_noise_hits_a_token_target_with_any_counter():
    def words(text: str) -> int:
        return len(text.split())

    for target in (500, 2000):
        k, n = fit_noise(lambda j: generate_symbolic(5, 1, j)["prompt"], target, words, probe=50)
        assert abs(n - target) / target <= 0.01 and k > 0
    assert parse_context("16k") == 16000 and parse_context("0") == 0
    with pytest.raises(ValueError, match="got 'lots'"):
        parse_context("lots")


class _Chat(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that answers with the exact solver (and counts its calls)."""

    calls = 0
    auth: list = []  # the Authorization header of each call (None when absent)

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls += 1
        type(self).auth.append(self.headers.get("Authorization"))
        prompt = body["messages"][0]["content"]
        doc = {"choices": [{"message": {"content": f"ANSWER: {', '.join(solve_symbolic_text(prompt))}"}}]}
        data = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def chat_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    # shutdown() waits for serve_forever's next poll: 0.5 s by default, on each of four tests
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    _Chat.calls = 0
    _Chat.auth = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _problems(tmp_path, n=6):
    path = tmp_path / "problems.jsonl"
    assert (
        cli_main(
            [
                "gsm_infinite",
                "generate",
                "--subset",
                "symbolic",
                "--op",
                "2-6:2",
                "--n",
                str(n),
                "-o",
                str(path),
            ]
        )
        == 0
    )
    return path


def test_http_backend_and_resume_lose_nothing(tmp_path, chat_server):
    path = _problems(tmp_path)
    problems = read_problems(path)
    results = tmp_path / "results.jsonl"
    backend = OpenAIChat(chat_server, "exact-solver")

    class Interrupt(Exception):
        pass

    def stop_after_five(_):
        if sum(1 for _ in results.open()) >= 5:
            raise Interrupt

    with pytest.raises(Interrupt):
        evaluate(problems, backend, results, progress=stop_after_five)
    assert _Chat.calls == 5
    with results.open("a") as fh:
        fh.write('{"id": "torn')  # a line cut by a kill
    assert evaluate(problems, backend, results) == len(problems) - 5
    assert _Chat.calls == len(problems)  # nothing asked twice
    rows, scores = summarize(read_results(results))  # the reader skips the torn line, as the writer does
    assert [r["accuracy"] for r in rows] == [1.0, 1.0, 1.0] and scores[0]["AUC"] == pytest.approx(400.0)


def test_the_evaluate_command_resumes_past_a_torn_line(tmp_path, chat_server, capsys):
    """Issue 14 (8): the replies were completed, then the summary crashed with JSONDecodeError on every re-run."""
    path = _problems(tmp_path)
    results = tmp_path / "r.jsonl"
    argv = [
        "gsm_infinite",
        "evaluate",
        str(path),
        "--endpoint",
        chat_server,
        "--model",
        "m",
        "--results",
        str(results),
    ]
    assert cli_main(argv) == 0
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:3]) + "\n" + lines[3][:17])  # killed while writing the fourth reply
    capsys.readouterr()
    for _ in range(2):  # the resumed run and one more: both read exactly the complete records
        assert cli_main(argv) == 0
        assert "AUC symbolic context 0 (op 2-6): 400.0" in capsys.readouterr().out
    assert _Chat.calls == len(lines) + len(lines) - 3  # only the lost replies were asked again


def test_an_api_key_goes_only_where_it_was_asked_for(tmp_path, chat_server, monkeypatch):
    """Issue 14 (11): OPENAI_API_KEY was sent to any endpoint, plain http included."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("MY_KEY", "sk-mine")
    problem = read_problems(_problems(tmp_path, n=1))[0]
    OpenAIChat(chat_server, "m").reply(problem, 0)  # http, no explicit variable: no key
    OpenAIChat(chat_server, "m", key_env="MY_KEY").reply(problem, 0)  # named explicitly: sent
    assert _Chat.auth == [None, "Bearer sk-mine"]
    assert OpenAIChat("https://api.example.invalid/v1", "m").key == "sk-secret"  # https: the default variable
    with pytest.raises(ValueError, match="the API key variable UNSET_KEY is unset or empty"):
        OpenAIChat(chat_server, "m", key_env="UNSET_KEY")
    with pytest.raises(ValueError, match="expected an http:// or https:// URL"):
        OpenAIChat("ftp://example/v1", "m")
    with pytest.raises(ValueError, match="timeout must be > 0 seconds, got 0"):
        OpenAIChat(chat_server, "m", timeout=0)


def test_evaluate_command_prints_accuracy_and_auc(tmp_path, chat_server, capsys):
    path = _problems(tmp_path)
    assert cli_main(["gsm_infinite", "evaluate", str(path), "--endpoint", chat_server, "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "AUC symbolic context 0 (op 2-6): 400.0" in out
    assert (
        cli_main(
            [
                "gsm_infinite",
                "evaluate",
                str(path),
                "--simulated",
                "depth",
                "--samples",
                "2",
                "--results",
                str(tmp_path / "sim.jsonl"),
            ]
        )
        == 0
    )
    assert "pass@2" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["generate", "--subset", "easy", "--op", "3", "-o", "{out}"], "unknown subset 'easy'"),
        (["generate", "--subset", "symbolic", "--op", "0-3", "-o", "{out}"], "op must be >= 1, got 0"),
        (["generate", "--subset", "symbolic", "--op", "x", "-o", "{out}"], "op must look like"),
        (
            ["generate", "--subset", "symbolic", "--op", "3", "--context", "9q", "-o", "{out}"],
            "context must be",
        ),
        (
            ["generate", "--subset", "symbolic", "--op", "3", "--seed", "-1", "-o", "{out}"],
            "--seed must be >= 0",
        ),
        (
            ["generate", "--subset", "symbolic", "--op", "3", "--context", "100000000k", "-o", "{out}"],
            "--context must be at most 1000k tokens, got 100000000k",
        ),
        (["evaluate", "{bad}", "--simulated", "exact"], "bad.jsonl:2: not a JSON object"),
        (["evaluate", "{dup}", "--simulated", "exact"], "dup.jsonl:2: duplicate id"),
        (
            ["evaluate", "{typed}", "--simulated", "exact"],
            "typed.jsonl:1: field 'op' must be an integer, got '3'",
        ),
        (["evaluate", "{good}", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"], "cannot reach"),
        (["evaluate", "{good}", "--simulated", "oracle"], "unknown simulated reasoner 'oracle'"),
        (["evaluate", "{good}"], "give exactly one of"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, message):
    good = _problems(tmp_path, n=1)
    capsys.readouterr()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text().splitlines()[0] + "\n{not json\n")
    dup = tmp_path / "dup.jsonl"
    dup.write_text(good.read_text().splitlines()[0] + "\n" + good.read_text().splitlines()[0] + "\n")
    typed = tmp_path / "typed.jsonl"
    typed.write_text(json.dumps({**json.loads(good.read_text().splitlines()[0]), "op": "3"}) + "\n")
    out = tmp_path / "out.jsonl"
    argv = [a.format(out=out, bad=bad, good=good, dup=dup, typed=typed) for a in argv]
    assert cli_main(["gsm_infinite", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob(".*tmp"))


def test_realistic_sets_alternate_modes_and_op_1_is_forward_only(tmp_path):
    from models.gsm_infinite.generate import problem_set
    from models.gsm_infinite.realistic import solve_realistic_text

    problems = list(problem_set("hard", [1, 4], 0, 2, seed=3))
    assert [(p["op"], p["mode"]) for p in problems] == [
        (1, "forward"),
        (1, "forward"),
        (4, "forward"),
        (4, "reverse"),
    ]
    assert all(solve_realistic_text(p["prompt"]) == p["answer"] for p in problems)


def test_every_subset_is_the_same_in_any_process():
    """No set- or hash-order dependence: two interpreters with different hash seeds draw the same problems."""
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, json\n"
        "from models.gsm_infinite.generate import problem_set\n"
        "h = hashlib.md5()\n"
        "for subset in ('symbolic', 'medium', 'hard'):\n"
        "    for p in problem_set(subset, [3, 9], 0, 6, seed=1):\n"
        "        h.update(json.dumps(p, sort_keys=True).encode())\n"
        "print(h.hexdigest())\n"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            cwd=str(Path(__file__).resolve().parents[3]),
        ).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1


def test_simulated_backend_refuses_realistic_problems():
    with pytest.raises(ValueError, match="symbolic problems only"):
        Simulated("exact").reply({"subset": "medium", "id": "x", "prompt": ""}, 0)
