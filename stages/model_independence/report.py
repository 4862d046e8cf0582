"""The claims of model_independence, computed from data/model_independence/evaluated, and what report.md shows.

Every number comes from evaluate: pvalues.csv (one row per pair and statistic), heatmap.csv and summary.json
(KS tests, minima, PERMTEST's rank, accuracies); here they are only selected and rendered.
"""

from __future__ import annotations

from typing import Any

from icml25.claims import claim
from icml25.reporting import Evaluated, fmt, pyplot, table

STAT_NAMES = {"u": "phi_U", "h": "phi_H", "match": "phi_MATCH", "l2": "PERMTEST-l2"}


def one(ev: Evaluated, a: str, b: str, stat: str) -> float:
    """log10 p of ``stat`` on the pair (a, b)."""
    pv = ev.csv("pvalues.csv")
    return float(pv[(pv.a == a) & (pv.b == b) & (pv.stat == stat)].log10p.iloc[0])


def summary(ev: Evaluated) -> dict[str, Any]:
    return ev.json("summary.json")


@claim(
    "<",
    -10.0,
    kind="result",
    killed_by="test_claims.py::test_valid_but_powerless_noise_fails_every_detection_claim",
    statement="phi_U detects the fine-tune: log10 p(base, ft) < -10",
    source="Table 1 (phi_U = eps)",
    # the floor -log10(64!) per block under Fisher: float closed form; 0 in a8afbab
    tol=1e-9,
    paper="phi_U = eps (2.2e-308, underflow) on every fine-tune (Table 1)",
)
def finetune_detected_u(ev: Evaluated):
    return one(ev, "base", "ft", "u")


@claim(
    "<",
    -10.0,
    kind="result",
    killed_by="test_claims.py::test_valid_but_powerless_noise_fails_every_detection_claim",
    statement="phi_MATCH detects the fine-tune: log10 p(base, ft) < -10",
    source="Sec. 4.2 (phi_MATCH <= eps on dependent pairs)",
    # the floor -log10(64!) per block under Fisher: float closed form; 0 in a8afbab
    tol=1e-9,
    paper="phi_MATCH <= eps (2.2e-308) on every dependent pair (Sec. 4.2)",
)
def finetune_detected_match(ev: Evaluated):
    return one(ev, "base", "ft", "match")


@claim(
    "<",
    -10.0,
    kind="result",
    killed_by="test_claims.py::test_a_constrained_match_is_fooled_by_the_permuted_fine_tune",
    statement="phi_MATCH detects the fine-tune after an output-preserving permutation + rescaling: log10 p < -10",
    source="Sec. 4.2, App. G (robust to T1-T6)",
    # the floor -log10(64!) per block under Fisher: float closed form; 0 in a8afbab
    tol=1e-9,
)
def permuted_detected_match(ev: Evaluated):
    return one(ev, "base", "ft_perm", "match")


@claim(
    "==",
    1.0,
    kind="result",
    killed_by="test_claims.py::test_valid_but_powerless_noise_fails_every_detection_claim",
    statement="PERMTEST-l2 on (base, ft) reaches its floor p = 1/(T+1): value = (T+1) p, the original's rank",
    source="Table 1 (phi_l2 = 0.01 with T = 99)",
    # exact: integer rank of the original among T + 1
    tol=0,
    paper="phi_l2 p = 0.01 = 1/(T+1), T = 99, on dependent pairs (Table 1)",
)
def permtest_exact_floor(ev: Evaluated):
    s = summary(ev)
    return s["permtest_rank"], f"p = {fmt(s['permtest_p'])} with T = {s['permutations']}"


@claim(
    ">",
    0.001,
    kind="result",
    killed_by="test_claims.py::test_tests_that_always_reject_fail_every_null_claim",
    statement="phi_U p-values of independent pairs look uniform: KS p > 0.001",
    source="Thm 2; Sec. 4.1",
    # KS p over 20 retrained pairs: a8afbab moved u 0.004, match 0.044, l2 0.076, h 0.27
    tol=0.3,
)
def independent_uniform_u(ev: Evaluated):
    return summary(ev)["independent_ks_p"]["u"]


@claim(
    ">",
    0.001,
    kind="result",
    killed_by="test_claims.py::test_tests_that_always_reject_fail_every_null_claim",
    statement="phi_MATCH p-values of independent pairs look uniform: KS p > 0.001",
    source="Sec. 4.2 (~uniform on 141 independent pairs)",
    # KS p over 20 retrained pairs: a8afbab moved u 0.004, match 0.044, l2 0.076, h 0.27
    tol=0.3,
)
def independent_uniform_match(ev: Evaluated):
    return summary(ev)["independent_ks_p"]["match"]


@claim(
    ">",
    -4.0,
    kind="result",
    killed_by="test_claims.py::test_tests_that_always_reject_fail_every_null_claim",
    statement="no independent pair is flagged by phi_U: log10 min p > -4",
    source="Table 1 (independent rows)",
    # log10 min p over 20 retrained pairs: moved 0.83 (u), 0.98 (match) in a8afbab
    tol=2.0,
    paper="phi_U p 0.16 to 0.60 on the independent rows (Table 1)",
)
def independent_min_u(ev: Evaluated):
    return summary(ev)["independent_min_log10p"]["u"]


@claim(
    ">",
    -4.0,
    kind="result",
    killed_by="test_claims.py::test_tests_that_always_reject_fail_every_null_claim",
    statement="no independent pair is flagged by phi_MATCH: log10 min p > -4",
    source="Sec. 4.2",
    # log10 min p over 20 retrained pairs: moved 0.83 (u), 0.98 (match) in a8afbab
    tol=2.0,
)
def independent_min_match(ev: Evaluated):
    return summary(ev)["independent_min_log10p"]["match"]


@claim(
    ">",
    0.001,
    kind="result",
    killed_by="test_claims.py::test_tests_that_always_reject_fail_every_null_claim",
    statement="PERMTEST-l2 p-values of independent pairs look uniform: KS p > 0.001 (p lies on "
    "{1, ..., T+1}/(T+1), uniform there under H_0; the KS test against Unif(0, 1) is then conservative)",
    source="Thm 1 (PERMTEST is exact under H_0)",
    # KS p over 20 retrained pairs: a8afbab moved u 0.004, match 0.044, l2 0.076, h 0.27
    tol=0.3,
)
def permtest_independent_uniform(ev: Evaluated):
    s = summary(ev)
    pv = ev.csv("pvalues.csv")
    p = 10.0 ** pv[(pv.kind == "independent") & (pv.stat == "l2")].log10p.to_numpy()
    floor = 1 / (s["permutations"] + 1)
    at_floor = int(sum(abs(x - floor) <= 1e-9 * floor for x in p))
    return s["independent_ks_p"]["l2"], (
        f"{len(p)} independent pairs, T = {s['permutations']}: smallest p {fmt(float(p.min()))}, "
        f"{at_floor} at the floor 1/(T+1) ({fmt(len(p) * floor)} expected), mean p {fmt(float(p.mean()))}"
    )


def context(ev: Evaluated) -> dict:
    import numpy as np

    s = summary(ev)
    ks, mins = s["independent_ks_p"], s["independent_min_log10p"]
    rows = [
        {"pair": f"({a}, {b})", "kind": kind, **{STAT_NAMES[st]: one(ev, a, b, st) for st in STAT_NAMES}}
        for a, b, kind in [
            ("base", "ft", "dependent"),
            ("base", "ft_perm", "adversarial (ft permuted + rescaled)"),
        ]
    ]
    rows.append(
        {
            "pair": f"{s['independent_pairs']} independent pairs: min",
            "kind": "independent",
            **{STAT_NAMES[st]: mins[st] for st in STAT_NAMES},
        }
    )
    rows.append(
        {
            "pair": "independent pairs: KS p vs uniform (plain p)",
            "kind": "independent",
            **{STAT_NAMES[st]: ks[st] for st in STAT_NAMES},
        }
    )

    plt = pyplot()
    pv = ev.csv("pvalues.csv")
    indep = pv[pv.kind == "independent"]
    fig, axes = plt.subplots(1, 4, figsize=(13, 3), sharey=True)
    for ax, st in zip(axes, STAT_NAMES, strict=True):
        p = np.sort(10.0 ** indep[indep.stat == st].log10p.to_numpy())
        ax.hist(p, bins=10, range=(0, 1), density=True, color="#4c72b0", alpha=0.8, label="independent pairs")
        ax.axhline(1.0, color="k", ls="--", lw=1, label="Uniform(0, 1)")
        ax.set_title(f"{STAT_NAMES[st]} (KS p = {fmt(ks[st], 2)})", fontsize=9)
        ax.set_xlabel("p-value")
    axes[0].set_ylabel("density")
    axes[0].legend(fontsize=7)
    histogram = ev.figure(
        "pvalue_histogram.png", fig, "p-values of the independent pairs against Uniform(0, 1)"
    )

    heat = ev.csv("heatmap.csv")
    names = list(dict.fromkeys(list(heat.a) + list(heat.b)))
    m = np.zeros((len(names), len(names)))
    for r in heat.itertuples():
        i, j = names.index(r.a), names.index(r.b)
        m[i, j] = m[j, i] = r.log10p
    fig, ax = plt.subplots(figsize=(6, 5))
    im = ax.imshow(np.maximum(m, -20), cmap="viridis_r", vmin=-20, vmax=0)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    fig.colorbar(im, ax=ax, label="log10 p (phi_MATCH), clipped at -20")
    heatmap = ev.figure("match_heatmap.png", fig, "phi_MATCH log10 p-values between models (diagonal: 0)")

    floor = 1 / (s["permutations"] + 1)
    return {
        "floor": fmt(floor),
        "floor_chance": f"{1 - (1 - floor) ** s['independent_pairs']:.0%}",
        "accuracy": s["test_accuracy"],
        "pvalue_table": table(rows),
        "fooled_u": s["fooled_u"],
        "dead_units_excluded": s["dead_units_excluded"],
        "histogram": histogram,
        "heatmap": heatmap,
    }


def metrics(ev: Evaluated) -> dict:
    s = summary(ev)
    return {
        "log10p": s["log10p"],
        "independent_ks_p": s["independent_ks_p"],
        "independent_min_log10p": s["independent_min_log10p"],
        "test_accuracy": s["test_accuracy"],
    }
