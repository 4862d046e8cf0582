"""The claims of tmvml, computed from data/tmvml/evaluated (summary.json; metrics, table, planted, spectra and
fits for the report). All four are ``result``s: each comes from fits or denoising runs that could have come out
otherwise, and tests/papers/tmvml/test_claims.py shows a stub failing each."""

from __future__ import annotations

import math

from icml25.claims import claim
from icml25.reporting import Evaluated, pyplot, table

TESTS = "test_claims.py::"
LABELS = {
    "ltr": "TMvML, Laplace tensor rank",
    "tnn": "the same ADMM, tensor nuclear norm",
    "ridge": "per-view ridge, averaged",
    "concat": "ridge on the concatenated views",
    "freq": "label-frequency ranker",
}
METRICS = {"ap": "AP", "ranking_loss": "ranking loss", "coverage": "coverage - 1", "one_error": "one-error",
           "hamming": "Hamming loss", "micro_f1": "micro-F1"}  # fmt: skip
# HyperAHSF (AAAI-26), an independent rerun of TMvML on Yeast: AP and Hamming loss
THIRD_PARTY = {"ap": 0.745, "hamming": 0.214}


def _s(ev: Evaluated) -> dict:
    return ev.json("summary.json")


@claim(
    "<=",
    0.90,
    kind="result",
    killed_by=TESTS + "test_tnn_in_place_of_ltr_fails_tighter_surrogate",
    statement="best relative error of the LTR prox / of the TNN prox on planted tubal-rank-1 tensors (each at its "
    "best threshold, and delta, on a grid), worst seed",
    source="abstract (LTR is a tighter surrogate of tensor rank); the issue's floor (it reads the mean: shown in the note)",
    # closed-form NumPy ADMM and proxes, no training: float noise only
    tol=1e-9,
)
def tighter_surrogate(ev: Evaluated):
    s = _s(ev)
    return s["surrogate_ratio_worst"], (
        f"mean {s['surrogate_ratio_mean']:.3f} over {s['planted_seeds']} seeds; per seed "
        + ", ".join(f"{v:.2f}" for v in s["surrogate_ratio_seeds"])
    )


@claim(
    ">=",
    0.9,
    kind="result",
    killed_by=TESTS + "test_tnn_in_place_of_ltr_fails_rank_recovered",
    statement="share of planted seeds whose best LTR estimate has tubal rank exactly 1",
    source="abstract (LTR captures the low-rank structure); the issue's floor (9 of 10)",
    # exact decision per seed (tubal rank), share of 10 seeds
    tol=0,
)
def rank_recovered(ev: Evaluated):
    s = _s(ev)
    return s["rank_one_seeds"] / s["planted_seeds"], (
        f"{s['rank_one_seeds']} of {s['planted_seeds']}; LTR's ranks {s['ltr_ranks']}, TNN's {s['tnn_ranks']}"
    )


@claim(
    "<=",
    300,
    kind="result",
    killed_by=TESTS + "test_fixed_rho_and_a_flipped_dual_step_fail_converges",
    statement="most ADMM iterations to ||rot(W) - G||_inf < 1e-4 over every LTR and TNN fit (inner CV included; "
    "a fit that never gets there counts max_iter + 1)",
    source="the spec's acceptance (primal residual < 1e-4 within 300 iterations)",
    # exact iteration count of deterministic ADMM
    tol=0,
)
def converges(ev: Evaluated):
    s = _s(ev)
    return s["max_iterations"], f"{s['admm_fits']} ADMM fits"


@claim(
    ">=",
    0.735,
    kind="result",
    killed_by=TESTS + "test_label_frequency_ranker_fails_yeast_level",
    statement="mean 5-fold average precision of TMvML (LTR) on Yeast",
    source="HyperAHSF's rerun of TMvML (AP .745) minus 0.01; the issue's floor",
    # closed-form NumPy ADMM, seeded inner CV, no training: float noise only
    tol=1e-9,
)
def yeast_level(ev: Evaluated):
    s = _s(ev)
    if s["source"] != "yeast":
        return float("nan"), f"not Yeast ({s['data']}): the floor is Yeast's"
    return s["real_ltr_ap"], f"worst fold {s['real_ltr_ap_worst_fold']:.3f} over {s['real_folds']} fold(s)"


def _methods_table(t, dataset: str, third_party: bool) -> str:
    t = t[t.dataset == dataset].set_index("method")
    rows = []
    for m in LABELS:
        if m not in t.index:
            continue
        r = t.loc[m]
        row = {"method": LABELS[m]}
        for k, name in METRICS.items():
            sd = r[f"{k}_std"]
            row[name] = f"{r[f'{k}_mean']:.3f}" + ("" if math.isnan(sd) else f" ± {sd:.3f}")
        rows.append(row)
    if third_party:
        rows.append({"method": "TMvML, HyperAHSF's rerun (AAAI-26)", **{n: "-" for n in METRICS.values()},
                     "AP": f"{THIRD_PARTY['ap']:.3f}", "Hamming loss": f"{THIRD_PARTY['hamming']:.3f}"})  # fmt: skip
    return table(rows)


def _coupling_table(ev: Evaluated) -> str:
    m = ev.csv("metrics.csv")
    rows = []
    for d, g in m.groupby("dataset", sort=False):
        ap = g.pivot(index="split", columns="method", values="ap")
        row = {"data": "Yeast (folds)" if d == "real" else d, "splits": len(ap)}
        for other in ("ridge", "concat", "tnn"):
            if "ltr" in ap and other in ap:
                diff = ap["ltr"] - ap[other]
                row[f"LTR - {other}"] = f"{diff.mean():+.3f} (min {diff.min():+.3f}, max {diff.max():+.3f})"
        rows.append(row)
    return table(rows)


def _planted_table(ev: Evaluated) -> str:
    p = ev.csv("planted.csv")
    rows = []
    for k, g in p.groupby("seed"):
        r = g.set_index("penalty")
        rows.append({"seed": int(k), "LTR error": f"{r.loc['ltr', 'error']:.4f}",
                     "LTR rank": int(r.loc["ltr", "rank"]), "LTR t, delta (x top sigma)":
                     f"{r.loc['ltr', 't']:.3g}, {r.loc['ltr', 'delta']:.3g}",
                     "TNN error": f"{r.loc['tnn', 'error']:.4f}", "TNN rank": int(r.loc["tnn", "rank"]),
                     "TNN t": f"{r.loc['tnn', 't']:.3g}",
                     "ratio": f"{r.loc['ltr', 'error'] / r.loc['tnn', 'error']:.3f}"})  # fmt: skip
    return table(rows)


def _lambda_table(ev: Evaluated) -> str:
    f = ev.csv("fits.csv")
    rows = []
    for (d, m), g in f.groupby(["dataset", "method"], sort=False):
        if m == "freq":
            continue
        chosen = g.lam.value_counts().sort_index()
        rows.append({"data": "Yeast" if d == "real" else d, "method": LABELS.get(m, m),
                     "lambda chosen (times)": ", ".join(f"{a:g} ({n})" for a, n in chosen.items()),
                     "most ADMM iterations": int(g.iterations.max()) if m in ("ltr", "tnn") else "-",
                     "seconds per split": f"{g.seconds.mean():.2f}"})  # fmt: skip
    return table(rows)


def _figures(ev: Evaluated) -> list[str]:
    plt = pyplot()
    figs = []
    sp = ev.csv("spectra.csv")
    if not sp.empty:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
        for ax, (m, g) in zip(axes, sp.groupby("method"), strict=False):
            for i, gi in g.groupby("index"):
                ax.plot(gi["slice"], gi.sigma, "o-", ms=3, label=f"sigma_{i + 1}")
            ax.set_title(LABELS.get(m, m), fontsize=8)
            ax.set_xlabel("Fourier slice k (along the label mode)")
        axes[0].set_ylabel("singular value of Gbar_k")
        axes[0].legend(fontsize=6)
        figs.append(ev.figure("spectra.png", fig, "the Fourier slices' singular values of the first fold's "
                              "rotated classifier tensor (Yeast)"))  # fmt: skip
    return figs


def _coupling_verdict(ev: Evaluated) -> str:
    """One sentence on the real set: LTR's mean AP against the better ridge's, per split."""
    m = ev.csv("metrics.csv")
    ap = m[m.dataset == "real"].pivot(index="split", columns="method", values="ap")
    if not {"ltr", "ridge", "concat"} <= set(ap.columns):
        return "(the ridges were not run: no comparison)"
    gap = ap["ltr"] - ap[["ridge", "concat"]].max(axis=1)
    wins = int((gap > 0).sum())
    word = "beats" if gap.mean() > 0 else "does not beat"
    return (f"On the real set the coupled tensor classifier {word} the better tuned ridge: mean AP difference "
            f"{gap.mean():+.3f}, ahead on {wins} of {len(gap)} folds.")  # fmt: skip


def context(ev: Evaluated) -> dict:
    s = _s(ev)
    t = ev.csv("table.csv")
    synthetic = [d for d in t.dataset.unique() if d != "real"]
    return {
        "s": s,
        "real_table": _methods_table(t, "real", s["source"] == "yeast"),
        "synthetic_tables": {d: _methods_table(t, d, False) for d in synthetic},
        "coupling_table": _coupling_table(ev),
        "coupling_verdict": _coupling_verdict(ev),
        "planted_table": _planted_table(ev),
        "lambda_table": _lambda_table(ev),
        "figures": _figures(ev),
    }


def metrics(ev: Evaluated) -> dict:
    s = _s(ev)
    out = {k: v for k, v in s.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    out.update({f"real_ap_{k}": v for k, v in s["real_ap"].items()})
    return out
