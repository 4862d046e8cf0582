"""The claims of neuroalgebraic, computed from data/neuroalgebraic/evaluated (summary.json; table.csv and
descent.csv for the report). All five are ``result``s of numerical checks of known theorems (each could come out
otherwise: a wrong rank, a wrong reading of singular values, descent that ends elsewhere), and
tests/papers/neuroalgebraic/test_claims.py shows a stub failing each."""

from __future__ import annotations

from icml25.claims import claim
from icml25.reporting import Evaluated, fmt, pyplot, table
from models.neuroalgebraic.neuromanifold import AH_EXCEPTIONS

TESTS = "test_claims.py::"
SPEC_SHALLOW = {(3, 3, 2): 6, (4, 2, 2): 7, (5, 3, 7): 34, (3, 4, 5): 14, (4, 3, 3): 12}  # (n, k, r): rank
SPEC_LINEAR = {(3, 1, 3): 5, (4, 2, 5): 14, (5, 3, 4): 18}


def _s(ev: Evaluated) -> dict:
    return ev.json("summary.json")


@claim(
    "==",
    0,
    kind="result",
    killed_by=TESTS + "test_the_naive_count_fails_dims_shallow",
    statement="shallow z^k networks (n, r, 1): cases whose exact Jacobian rank differs from Alexander-Hirschowitz",
    source="Sec. on dimension (shallow networks = Waring rank; Alexander-Hirschowitz)",
    # exact count: ranks over GF(p)
    tol=0,
)
def dims_shallow(ev: Evaluated):
    s = _s(ev)
    return s["shallow_mismatches"], f"of {s['shallow_cases']} cases" + (
        f"; first: {s['shallow_first']}" if s["shallow_first"] else ""
    )


@claim(
    "==",
    0,
    kind="result",
    killed_by=TESTS + "test_the_parameter_count_fails_dims_linear",
    statement="linear networks (N0, N1, N2): cases whose exact Jacobian rank differs from the determinantal closed form",
    source="Appendix (linear networks: dim = N1 (N0 + N2 - N1))",
    # exact count: ranks over GF(p)
    tol=0,
)
def dims_linear(ev: Evaluated):
    s = _s(ev)
    return s["linear_mismatches"], f"of {s['linear_cases']} cases" + (
        f"; first: {s['linear_first']}" if s["linear_first"] else ""
    )


@claim(
    "==",
    0,
    kind="result",
    killed_by=TESTS + "test_the_fixed_threshold_fails_float_matches_exact",
    statement="every architecture: cases whose float64 rank (largest log-gap) differs from the exact rank over GF(p)",
    source="the issue (float ranks need a gap, not a fixed threshold)",
    # exact count: float rank at the largest log-gap vs GF(p) rank; 0 in a8afbab
    tol=0,
)
def float_matches_exact(ev: Evaluated):
    s = _s(ev)
    return s["float_mismatches"], f"of {s['cases']} cases" + (
        f"; first: {s['float_first']}" if s["float_first"] else ""
    )


@claim(
    ">=",
    0.95,
    kind="result",
    killed_by=TESTS + "test_the_signed_control_fails_singular_attraction",
    statement="descent on |W W' - T|^2 (rank <= 4 PSD): share of trials where 'endpoint singular' equals the "
    "prediction (T has fewer than 4 positive eigenvalues)",
    source="Sec. on singularities and implicit bias",
    # share of 200 seeded NumPy descents: one trial may flip at s4/s1 = 1e-3; 0 in a8afbab
    tol=0.005,
)
def singular_attraction(ev: Evaluated):
    s = _s(ev)
    return s["agreement"], f"{s['trials']} trials"


@claim(
    ">=",
    0.5,
    kind="result",
    killed_by=TESTS + "test_the_signed_control_fails_singular_common",
    statement="descent on |W W' - T|^2: share of trials ending at a singular point (rank < 4)",
    source="Sec. on singularities (singular points attract with positive probability)",
    # share of 200 seeded NumPy descents: one trial may flip at s4/s1 = 1e-3; 0 in a8afbab
    tol=0.005,
)
def singular_common(ev: Evaluated):
    s = _s(ev)
    return s["singular_fraction"], f"predicted {fmt(s['predicted_fraction'], 3)}"


def _rank_table(t, cases: dict, family: str) -> str:
    rows = []
    for key, spec in cases.items():
        if family == "shallow":
            n, k, r = key
            g = t[(t.family == "shallow") & (t.widths == f"{n},{r},1") & (t.degree == k)]
            label = f"(n, k, r) = {key}"
        else:
            g = t[(t.family == "linear") & (t.widths == ",".join(map(str, key)))]
            label = "-".join(map(str, key))
        if g.empty:
            continue
        r0 = g.iloc[0]
        rows.append(
            {
                "architecture": label,
                "params": int(r0.params),
                "symmetries": int(r0.symmetries),
                "expected": int(r0.expected),
                "exact rank": int(r0.exact),
                "float rank": int(r0.float),
                "closed form": int(r0.closed_form),
                "the spec's": spec,
                "ambient": int(r0.ambient),
                "defect": int(r0.defect),
                "fiber": int(r0.fiber),
            }
        )
    return table(rows)


def _deep_table(t) -> str:
    g = t[t.family == "deep"]
    return table(
        [
            {
                "widths": r.widths,
                "k": int(r.degree),
                "params": int(r.params),
                "params - hidden widths": int(r.params_minus_hidden),
                "ambient": int(r.ambient),
                "exact rank": int(r.exact),
                "float rank": int(r.float),
                "fiber": int(r.fiber),
            }
            for r in g.itertuples()
        ]
    )


def _figure(ev: Evaluated) -> list[str]:
    import numpy as np

    plt = pyplot()
    d = ev.csv("descent.csv")
    fig, ax = plt.subplots(figsize=(6, 3.2))
    bins = np.logspace(-12, 0, 40)
    ax.hist(np.clip(d.ratio, 1e-12, 1), bins=bins, alpha=0.6, label="sum of squares W W'")
    ax.hist(np.clip(d.control_ratio, 1e-12, 1), bins=bins, alpha=0.6, label="signed control W1 W0")
    ax.axvline(1e-3, color="k", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("s_4 / s_1 at the end of descent (singular left of the line)")
    ax.set_ylabel("trials")
    ax.legend(fontsize=7)
    return [ev.figure("descent.png", fig, "where descent ends: the rank-4 PSD model and the signed control")]


def context(ev: Evaluated) -> dict:
    t = ev.csv("table.csv")
    s = _s(ev)
    deep = t[t.family == "deep"]
    sh = t[t.family == "shallow"]
    return {
        "s": s,
        "shallow_table": _rank_table(t, SPEC_SHALLOW, "shallow"),
        "linear_table": _rank_table(t, SPEC_LINEAR, "linear"),
        "deep_table": _deep_table(t),
        "deep_match": int((deep.exact == deep[["params_minus_hidden", "ambient"]].min(axis=1)).sum()),
        "deep_n": len(deep),
        "spec_misreads": int((t.float_spec != t.exact).sum()),
        "spec_first": ", ".join(
            f"{r.widths} k={r.degree} ({r.float_spec} for {r.exact})"
            for r in t[t.float_spec != t.exact].head(3).itertuples()
        ),
        "defective": int(
            (sh.exact < sh[["params", "ambient"]].assign(params=sh.params - sh.symmetries).min(axis=1)).sum()
        ),
        "defective_k2": int(((sh.degree == 2) & (sh.defect > 0)).sum()),
        "defective_exceptions": int(
            sh.apply(
                lambda r: (int(r.widths.split(",")[0]), int(r.degree), int(r.widths.split(",")[1])), axis=1
            )
            .isin(list(AH_EXCEPTIONS))
            .sum()
        )
        if len(sh)
        else 0,
        "gap": abs(s["singular_fraction"] - s["predicted_fraction"]),
        "figures": _figure(ev),
    }


def metrics(ev: Evaluated) -> dict:
    return _s(ev)
