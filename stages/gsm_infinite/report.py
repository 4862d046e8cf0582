"""The claims of gsm_infinite, computed from data/gsm_infinite/evaluated (summary.json holds every fit and
count; evaluate wrote it), and what report.md shows."""

from __future__ import annotations

from typing import Any

from icml25.claims import claim
from icml25.reporting import Evaluated, fmt, pyplot, table

ZERO = "symbolic_c0"  # the zero-noise symbolic set the fits use


def summary(ev: Evaluated) -> dict:
    return ev.json("summary.json")


@claim(
    "==",
    0.0,
    statement="disagreements between the text-only solver and the generator's answers (all subsets, with and "
    "without noise)",
    source="Sec. 3 (answers are computable from the text alone)",
)
def solver_agreement(ev: Evaluated):
    c = summary(ev)["checks"]
    note = f"over {c['problems']} problems: " + ", ".join(f"{s} {n}" for s, n in c["by_subset"].items())
    if c["missing_subsets"]:
        note += f" (not generated in this profile: {', '.join(c['missing_subsets'])})"
    return float(c["disagreements"]), note


@claim(
    "==",
    0.0,
    statement="generated problems whose op differs from the requested op",
    source="Sec. 3 (difficulty = op, exactly controlled)",
)
def op_exact(ev: Evaluated):
    c = summary(ev)["checks"]
    return float(c["wrong_op"]), f"over the same {c['problems']} problems"


@claim(
    "<=",
    0.10,
    statement="largest relative deviation of a noisy prompt's length (SmolLM2 tokens) from its token target (8k "
    "and 16k in the quick profile)",
    source="Sec. 3.3 (noise sized to the context length)",
)
def length_control(ev: Evaluated):
    lengths = summary(ev)["lengths"]
    note = (
        f"{lengths['prompts']} noisy prompts at {lengths['contexts']} tokens; mean deviation "
        f"{fmt(float(lengths['mean_rel_dev']))}"
    )
    return float(lengths["max_rel_dev"]), note


@claim(
    ">=",
    0.95,
    statement="R^2 of the sigmoid fit of the depth-limited reasoner's accuracy against op",
    source="Sec. 5 (accuracy declines like a sigmoid in op)",
)
def sigmoid_decline(ev: Evaluated):
    fit = summary(ev)["sigmoid"]
    return float(fit["r2"]), f"op50 = {fmt(float(fit['op50']), 3)}, k = {fmt(float(fit['k']), 3)}"


@claim(
    ">=",
    0.95,
    statement="R^2 of the line fit of best-of-k AUC against log2 k (the slope must be > 0, else the value is 0)",
    source="Sec. 5 (exponentially more samples, linear gains)",
)
def inference_scaling_linear(ev: Evaluated):
    s = summary(ev)
    slope = float(s["line"]["slope"])
    note = (
        f"k in {s['ks']}: AUC {', '.join(fmt(a, 4) for a in s['aucs'])}; slope {fmt(slope, 3)} per doubling"
    )
    return (float(s["line"]["r2"]) if slope > 0 else 0.0), note


@claim(
    "<=",
    0.2,
    statement="the retrieval reasoner's accuracy at op >= 10 (if the exact solver's is not 1.0, the value is 1)",
    source="Sec. 3.2 (noise defeats retrieval)",
)
def retrieval_fails(ev: Evaluated):
    s = summary(ev)
    hi_exact, hi_retr = float(s["exact_acc_op_ge_10"]), float(s["retrieval_acc_op_ge_10"])
    note = f"retrieval {fmt(hi_retr, 3)} vs exact {fmt(hi_exact, 3)} at op >= 10"
    return (hi_retr if hi_exact == 1.0 else 1.0), note


def figure(ev: Evaluated) -> str:
    """Best-of-k accuracy against op with the sigmoid fit, and the AUC of best-of-k against log2 k."""
    import numpy as np

    s = summary(ev)
    acc = ev.csv("accuracy.csv")
    curve = ev.csv("sigmoid_curve.csv")
    zero = acc[acc.set == f"{ZERO}.depth"].sort_values("op")
    exact = acc[acc.set == f"{ZERO}.exact"]
    retr = acc[acc.set == f"{ZERO}.retrieval"]
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for k in s["ks"]:
        axes[0].plot(zero.op, zero[f"pass@{k}"], marker="o", ms=3, label=f"best of {k}")
    axes[0].plot(curve.op, curve.accuracy, "k--", lw=1, label="sigmoid fit (k = 1)")
    for name, part in (("exact", exact), ("retrieval", retr)):
        axes[0].plot(part.op, part.accuracy, ls=":", marker="x", ms=3, label=name)
    axes[0].set_xlabel("op")
    axes[0].set_ylabel("accuracy")
    axes[0].legend(fontsize=7)
    axes[1].plot(np.log2(s["ks"]), s["aucs"], "o-")
    axes[1].set_xlabel("log2 k")
    axes[1].set_ylabel("AUC of best-of-k")
    return ev.figure("symbolic_reasoners.png", fig, "Simulated reasoners on the zero-noise symbolic set")


def context(ev: Evaluated) -> dict[str, Any]:
    s = summary(ev)
    acc = ev.csv("accuracy.csv")
    fig_md = figure(ev)
    noisy = acc[(acc.reasoner == "depth") & acc.set.str.startswith("symbolic_c")]
    noise_rows = [
        {"set": name, **{f"op={int(r.op)}": fmt(r.accuracy, 3) for r in part.itertuples()}}
        for name, part in noisy.groupby("set", sort=False)
    ]
    len_rows = [
        {
            "subset": r["subset"],
            "context": r["context"],
            "prompts": r["prompts"],
            "mean tokens": fmt(float(r["mean_tokens"]), 5),
            "max rel. deviation": fmt(float(r["max_rel_dev"]), 3),
        }
        for r in s["lengths"]["by_set"]
    ]
    real = acc[acc.reasoner == "real_smollm2"]
    meta = ev.json("meta.json")
    real_model = meta.get("real_model") if len(real) else None
    real_rows = [
        {
            "op": int(r.op),
            "problems": int(r.problems),
            "accuracy": fmt(r.accuracy, 3),
            "seconds per problem": fmt(r.seconds, 3),
        }
        for r in real.itertuples()
    ]
    return {
        "count_table": table(s["checks"]["by_set"]),
        "length_table": table(len_rows) if len_rows else "",
        "figure": fig_md,
        "noise_table": table(noise_rows) if noise_rows else "",
        "real_model": real_model,
        "real_table": table(real_rows) if real_model else "",
    }


def metrics(ev: Evaluated) -> dict:
    s = summary(ev)
    return {
        "disagreements": s["checks"]["disagreements"],
        "wrong_op": s["checks"]["wrong_op"],
        "length_max_rel_dev": s["lengths"]["max_rel_dev"],
        "sigmoid": s["sigmoid"],
        "best_of_k_auc": dict(zip(map(str, s["ks"]), s["aucs"], strict=True)),
        "retrieval_acc_op_ge_10": s["retrieval_acc_op_ge_10"],
    }
