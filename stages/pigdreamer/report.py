"""The claims of pigdreamer, computed from data/pigdreamer/evaluated (evaluation.csv: one row per trained agent;
history.csv: training curves; meta.json). ``asymmetric_critic`` and ``safe_and_useful`` are ``result``s: each
comes from trained agents that could have come out otherwise, and tests/papers/pigdreamer/test_claims.py shows
stubs failing them. ``no_leakage`` is an ``invariant``: the actor has no map input by construction, so the check
guards the implementation (an actor given the map fails it: test_claims.py::test_an_actor_given_the_map_fails_no_leakage) and is not evidence for the paper."""

from __future__ import annotations

from icml25.claims import claim
from icml25.reporting import Evaluated, pyplot, table
from models.pigdreamer import summary
from models.pigdreamer.agent import VARIANT_NAMES

TESTS = "test_claims.py::"
LEAD = """**What this is: the spec's model-free analogue, not PIGDreamer itself.** PIGDreamer trains DreamerV3-style
world models on Safety-Gymnasium vision tasks; those, and the official code, are out of reach here (no code in
our store; a Dreamer on pixel tasks does not fit a CPU budget; safety-gymnasium 1.0.0 pins pygame 2.1.0, which has
no Python 3.11 wheel). What runs is recurrent PPO-Lagrangian on a small partially observable grid with hidden
hazards, keeping the two mechanisms the abstract names: asymmetric critics and privileged representation
alignment. Its numbers are this analogue's, not the paper's."""


def _ev(ev: Evaluated):
    return ev.csv("evaluation.csv")


def _meta(ev: Evaluated) -> dict:
    return ev.json("meta.json")


@claim(
    "<=",
    0.7,
    kind="result",
    killed_by=TESTS + "test_zeroed_map_fails_asymmetric_critic",
    statement="median over seeds of max(B, C) / A, the agents' normalised cost-critic errors MSE / Var against "
    "the Monte-Carlo cost-to-go of their own final policies",
    source="Theorem 3.3 (privileged critics estimate cost better); the spec's floor 0.7",
    # PPO in torch: sampled actions can diverge across machines; per-seed ratios 0.39-0.54 on the machine that
    # set this, 0.41-0.65 (median 0.59, beyond this tolerance; icml25 verify flags it) on a later AMD EPYC one
    tol=0.1,
)
def asymmetric_critic(ev: Evaluated):
    frame = _ev(ev)
    ratios = summary.critic_ratios(frame)
    return summary.asymmetric_critic(frame), "per seed " + ", ".join(f"{r:.2f}" for r in ratios)


@claim(
    ">=",
    2,
    kind="result",
    killed_by=TESTS + "test_unconstrained_and_frozen_policies_fail_safe_and_useful",
    statement="seeds (3 in the quick profile) where agent C's evaluation cost <= d + 0.1 and its success >= 0.8",
    source="abstract (near-zero cost at state-of-the-art return); the spec: cost within d + 0.1 in 2 of 3 seeds",
    # integer count of seeds; costs sit 0.19-0.29 above the d + 0.1 cut
    tol=0,
)
def safe_and_useful(ev: Evaluated):
    n, rows = summary.safe_and_useful(_ev(ev), float(_meta(ev)["cost_limit"]))
    detail = "; ".join(
        f"seed {r.seed}: cost {r.cost:.2f}, success {r.success:.2f}" for r in rows.itertuples()
    )
    return n, detail


@claim(
    "==",
    0,
    kind="invariant",
    statement="largest change of any agent's action logits over the first 1,000 evaluation states when the map "
    "is replaced by random values",
    source="deployment uses the naive side only (the spec's gotcha: test for leakage)",
    # exactly 0 by construction (the actor never sees the map)
    tol=0,
)
def no_leakage(ev: Evaluated):
    return summary.no_leakage(_ev(ev)), f"{len(_ev(ev))} agents"


def _variant_table(frame, meta: dict) -> str:
    rows = []
    for v, g in frame.groupby("variant", sort=False):
        rows.append({
            "variant": VARIANT_NAMES[v],
            "return": f"{g['return'].mean():.3f} ({g['return'].min():.3f})",
            "cost": f"{g.cost.mean():.2f} ({g.cost.max():.2f})",
            "success": f"{g.success.mean():.2f} ({g.success.min():.2f})",
            "cost-critic error": f"{g.critic_error_cost.mean():.2f} ({g.critic_error_cost.max():.2f})",
            "reward-critic error": f"{g.critic_error_reward.mean():.2f} ({g.critic_error_reward.max():.2f})",
            "final lambda": f"{g['lambda'].mean():.2f}",
        })  # fmt: skip
    return table(rows)


def _seed_table(frame) -> str:
    rows = [{"seed": r["seed"], "variant": r["variant"], "return": f"{r['return']:.3f}", "cost": f"{r['cost']:.2f}",
             "success": f"{r['success']:.2f}", "length": f"{r['length']:.1f}",
             "cost-critic error": f"{r['critic_error_cost']:.3f}", "lambda": f"{r['lambda']:.2f}"}
            for r in frame.to_dict("records")]  # fmt: skip
    return table(rows)


def _matched_table(frame) -> str:
    m = summary.matched_cost(frame)
    rows = [{"seed": int(r.seed), "C return / cost": f"{r.return_C:.3f} / {r.cost_C:.2f}",
             "A return / cost": f"{r.return_A:.3f} / {r.cost_A:.2f}", "C - A return": f"{r.return_gap:+.3f}",
             "costs within 0.1": "yes" if r.matched else "no"} for r in m.itertuples()]  # fmt: skip
    return table(rows)


def _figures(ev: Evaluated, meta: dict) -> list[str]:
    plt = pyplot()
    h = ev.csv("history.csv")
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.3))
    window = max(1, int(h["update"].max()) // 15)
    for v, g in h.groupby("variant", sort=False):
        m = g.groupby("update")[["return", "cost", "success"]].mean().rolling(window, min_periods=1).mean()
        for ax, col in zip(axes, ("return", "cost", "success"), strict=True):
            ax.plot(m.index, m[col], label=VARIANT_NAMES[v].split(":")[0])
    axes[1].axhline(meta["cost_limit"], color="k", ls="--", lw=0.8, label="d")
    for ax, col in zip(axes, ("episode return", "episode cost", "success"), strict=True):
        ax.set_xlabel("PPO update")
        ax.set_ylabel(col)
    axes[1].legend(fontsize=7)
    figs = [ev.figure("curves.png", fig, f"training curves, mean over seeds ({window}-update rolling mean)")]
    frame = _ev(ev)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    variants = list(dict.fromkeys(frame.variant))
    for v in variants:
        g = frame[frame.variant == v]
        ax.plot([variants.index(v)] * len(g), g.critic_error_cost, "o", alpha=0.7)
    ax.set_xticks(range(len(variants)), variants)
    ax.set_ylabel("cost-critic error MSE / Var")
    ax.axhline(1.0, color="0.6", lw=0.8)
    figs.append(
        ev.figure("critic_error.png", fig, "normalised cost-critic error per agent (1 = the target's mean)")
    )
    return figs


def _range(rows) -> dict:
    def span(col: str, digits: int) -> str:
        lo, hi = rows[col].min(), rows[col].max()
        return f"{lo:.{digits}f}" if lo == hi else f"{lo:.{digits}f}-{hi:.{digits}f}"

    return {"length": span("length", 1), "cost": span("cost", 2), "success": span("success", 2)}


def context(ev: Evaluated) -> dict:
    """The tables, figures and computed phrases report.md shows."""
    frame, meta = _ev(ev), _meta(ev)
    variants = set(frame.variant)
    unpriv = None
    if {"A", "U"} <= variants:
        ratios = summary.critic_ratios(frame, ("U",))
        unpriv = f"{ratios.median():.2f} (per seed {', '.join(f'{r:.2f}' for r in ratios)})"
    h = ev.csv("history.csv")
    last = int(h["update"].max())
    c = h[h.variant == "C"]
    lam_rise = None
    if not c.empty and last > 10:
        lam = c.pivot(index="update", columns="seed", values="lambda")
        lam_rise = f"{(lam.loc[last] - lam.loc[last - 10]).min():+.3f} to {(lam.loc[last] - lam.loc[last - 10]).max():+.3f}"
    return {
        "m": meta,
        "variant_table": _variant_table(frame, meta),
        "seed_table": _seed_table(frame),
        "matched_table": _matched_table(frame) if {"A", "C"} <= variants else "",
        "unprivileged_ratio": unpriv,
        "lam_rise": lam_rise,
        "figures": _figures(ev, meta),
        "train_seconds": " and ".join(f"{t:.0f} s" for t in meta["train_seconds"])
        + (" (one stack per worker, in parallel)" if len(meta["train_seconds"]) > 1 else ""),
        "blind_cost": f"{meta['blind_cost']:.3f}",
        "shortest_route": f"{meta['shortest_route']:.1f}",
        "c_range": _range(frame[frame.variant == "C"]) if "C" in variants else None,
    }


def metrics(ev: Evaluated) -> dict:
    frame = _ev(ev)
    out = {}
    for v, g in frame.groupby("variant"):
        for col in ("return", "cost", "success", "critic_error_cost"):
            out[f"{v}_{col}"] = float(g[col].mean())
    return out
