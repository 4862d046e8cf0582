"""``icml25 gsm_infinite``: generate GSM-Infinity problem sets and evaluate models on them.

    icml25 gsm_infinite generate --subset symbolic|medium|hard --op 2-20 --context 0|8k|16k|32k --n 100
                                 -o problems.jsonl [--seed S]
    icml25 gsm_infinite evaluate problems.jsonl (--endpoint URL --model NAME | --local PATH | --simulated NAME)
                                 [--results results.jsonl] [--samples K]

generate writes n problems per op (atomically: nothing appears until the set is complete). evaluate appends
each reply to the results file (default: PROBLEMS.results.jsonl) as it arrives and skips those already there,
so an interrupted evaluation resumes where it stopped; it prints accuracy per op and the AUC score. Bad input
is a one-line error and exit status 2, before any model is loaded: among it a ``--results`` path in a missing or
read-only folder or naming a folder, and a ``--local`` path that is neither a model folder (config.json) nor a
GGUF file.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_causal_lm
from icml25.outputs import atomic_output, check_append, check_output


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 gsm_infinite",
        description="GSM-Infinity: long-context reasoning problems of controlled difficulty (Zhou et al., ICML 2025).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    g = sub.add_parser("generate", help="write a problem set (JSONL)")
    g.add_argument("--subset", required=True, help="symbolic, medium or hard")
    g.add_argument("--op", required=True, help="difficulty: 5, 2-20, 2-20:2 or 2,4,8 (each >= 1)")
    g.add_argument(
        "--context", default="0", help="noise to reach this many tokens: 0, 8k, 16k, 32k (default 0)"
    )
    g.add_argument("--n", type=int, default=100, help="problems per op (default 100)")
    g.add_argument("--seed", type=int, default=0, help="seed of the set (default 0)")
    g.add_argument("-o", "--output", type=Path, required=True, help="the JSONL file to write")
    e = sub.add_parser("evaluate", help="score a model on a problem set")
    e.add_argument("problems", type=Path, metavar="PROBLEMS.jsonl")
    e.add_argument("--endpoint", help="base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:8000/v1)")
    e.add_argument("--model", help="model name at the endpoint")
    e.add_argument(
        "--api-key-env",
        "--key-env",
        dest="key_env",
        help="the variable holding the API key, sent to the endpoint (without it, OPENAI_API_KEY is sent to "
        "https endpoints only, never over plain http)",
    )
    e.add_argument("--timeout", type=float, default=600.0, help="seconds per request (default 600)")
    e.add_argument("--local", type=Path, help="a local transformers model folder or GGUF file")
    e.add_argument(
        "--simulated", help="a simulated reasoner: exact, depth, hround or retrieval (symbolic only)"
    )
    e.add_argument("--samples", type=int, default=1, help="samples per problem (default 1)")
    e.add_argument("--temperature", type=float, default=0.0, help="sampling temperature at the endpoint")
    e.add_argument("--max-tokens", type=int, default=4096, help="reply length limit (default 4096)")
    e.add_argument("--results", type=Path, help="results JSONL (default: PROBLEMS.results.jsonl)")
    return parser


#: The longest context `generate` builds (the paper's longest is 128k; 100000000k tried to allocate 39 GiB).
MAX_CONTEXT = 1_000_000


def _bar(total: int, unit: str):
    from icml25.training import show_progress

    if not show_progress():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, leave=False)


def cmd_generate(args: argparse.Namespace) -> int:
    from .generate import check_subset, parse_ops, problem_set
    from .tokens import parse_context

    try:
        check_subset(args.subset)
        ops = parse_ops(args.op)
        context = parse_context(args.context)
        if args.n < 1:
            raise ValueError(f"--n must be >= 1, got {args.n}")
        if args.seed < 0:
            raise ValueError(f"--seed must be >= 0, got {args.seed}")
        if context > MAX_CONTEXT:
            raise ValueError(f"--context must be at most {MAX_CONTEXT // 1000}k tokens, got {args.context}")
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out: Path = check_output(args.output)
    bar = _bar(len(ops) * args.n, "problem")
    try:
        with atomic_output(out) as tmp, tmp.open("w") as fh:
            for problem in problem_set(args.subset, ops, context, args.n, args.seed):
                fh.write(json.dumps(problem) + "\n")
                if bar:
                    bar.update(1)
    except (ValueError, RuntimeError) as exc:
        raise UserError(str(exc)) from None
    finally:
        if bar:
            bar.close()
    print(
        f"wrote {len(ops) * args.n} {args.subset} problems (op {ops[0]}..{ops[-1]}, context {context}) to {out}"
    )
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .harness import (
        LocalTransformers,
        OpenAIChat,
        Simulated,
        evaluate,
        read_problems,
        read_results,
        summarize,
    )
    from .scoring import fit_sigmoid, ks_for

    chosen = [x for x in (args.endpoint, args.local, args.simulated) if x]
    if len(chosen) != 1:
        raise UserError("give exactly one of --endpoint URL --model NAME, --local PATH, --simulated NAME")
    if args.endpoint and not args.model:
        raise UserError("--endpoint needs --model NAME")
    if args.samples < 1:
        raise UserError(f"--samples must be >= 1, got {args.samples}")
    if args.max_tokens < 1:
        raise UserError(f"--max-tokens must be >= 1, got {args.max_tokens}")
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        raise UserError(f"--temperature must be a finite number >= 0, got {args.temperature:g}")
    try:
        problems = read_problems(args.problems)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    # The results file is appended to (and read back to resume): check it, and a --local model's path, before a
    # model is loaded (tens of seconds for a GGUF file).
    results_path = check_append(
        args.results or args.problems.with_name(args.problems.stem + ".results.jsonl"), "--results"
    )
    if results_path.exists() and results_path.samefile(args.problems):
        raise UserError(
            f"--results {results_path}: the problems file itself (the replies would be appended to it)"
        )
    if args.local:
        check_causal_lm(args.local, "--local")
    try:
        if args.simulated:
            backend = Simulated(args.simulated)
        elif args.local:
            backend = LocalTransformers(args.local)
        else:
            backend = OpenAIChat(
                args.endpoint, args.model, args.key_env, args.temperature, args.max_tokens, args.timeout
            )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    bar = _bar(len(problems) * args.samples, "reply")
    try:
        added = evaluate(problems, backend, results_path, args.samples, progress=bar.update if bar else None)
    except (RuntimeError, ValueError) as exc:
        raise UserError(f"{exc} (replies so far are kept in {results_path}; rerun to resume)") from None
    except OSError as exc:  # e.g. a full disk, or a file system that turned read-only after the check
        raise UserError(f"--results {results_path}: cannot write: {exc.strerror or exc}") from None
    finally:
        if bar:
            bar.close()
    ids = {p["id"] for p in problems}
    results = [r for r in read_results(results_path) if r["id"] in ids and r["sample"] < args.samples]
    ks = ks_for(args.samples)
    rows, scores = summarize(results, ks)
    print(f"{added} new replies ({len(results)} in {results_path})")
    head = ["subset", "context", "op", "problems", "accuracy", *[f"pass@{k}" for k in ks]]
    print("\t".join(head))
    for r in rows:
        print("\t".join(f"{r[h]:.4g}" if isinstance(r[h], float) else str(r[h]) for h in head))
    for s in scores:
        print(f"AUC {s['subset']} context {s['context']} (op {s['ops']}): {s['AUC']:.1f}")
        part = [r for r in rows if (r["subset"], r["context"]) == (s["subset"], s["context"])]
        if len(part) >= 4:
            try:
                fit = fit_sigmoid([r["op"] for r in part], [r["accuracy"] for r in part])
                print(f"  sigmoid fit: op50 {fit['op50']:.1f}, k {fit['k']:.3f}, R^2 {fit['r2']:.3f}")
            except RuntimeError:
                pass
    return 0


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "generate":
        return cmd_generate(args)
    if args.command == "evaluate":
        return cmd_evaluate(args)
    raise AssertionError(args.command)
