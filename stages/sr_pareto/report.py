"""The claims of sr_pareto, computed from data/sr_pareto/evaluated (summary.json holds every number), and what
report.md shows."""

from __future__ import annotations

from typing import Any

from icml25.claims import claim
from icml25.reporting import Evaluated, fixed, fmt, pyplot, table


def summary(ev: Evaluated) -> dict:
    return ev.json("summary.json")


@claim(
    ">=",
    1.0 - 1e-8,
    statement="minimum over the noise-free planted data sets of the full front's R^2 at the planted length",
    source="Sec. 3 (exhaustive search attains the optimum within the grammar)",
)
def exact_recovery(ev: Evaluated):
    s = summary(ev)["exact_recovery"]
    value = float(s["min_r2"])
    worst = f"{s['worst']} (R^2 {fmt(value, 12)})" if s["planted_sets"] else "none"
    return value, f"{s['planted_sets']} planted noise-free data sets; worst: {worst}"


@claim(
    ">=",
    -1e-9,
    statement="minimum over data sets and lengths of R^2(full trees) - R^2(Karva L = 3)",
    source="Sec. 3 (APO = the best over the whole grammar)",
)
def full_dominates_karva(ev: Evaluated):
    s = summary(ev)["karva_gap"]
    pairs = ", ".join(f"{r['dataset']}@{r['length']}" for r in s["strict"]) or "none"
    return float(
        s["min"]
    ), f"full trees strictly higher at {len(s['strict'])} (data set, length) pairs: {pairs}"


@claim(
    "<=",
    1e-6,
    statement="maximum over data sets and gplearn programs (length <= max) of R^2(program) - R^2(APO front at its length)",
    source="Sec. 4 (the front bounds every SR method)",
)
def apo_dominates_peer(ev: Evaluated):
    s = summary(ev)["peer_gap"]
    if not s["programs"]:
        return float(s["max"])
    w = s["closest"]
    return float(s["max"]), (
        f"{s['programs']} distinct gplearn programs of length <= {ev.json('meta.json')['max_length']}; closest: "
        f"{w['program']} on {w['dataset']} (R^2 {fmt(w['r2'])} vs front {fmt(w['front'])})"
    )


@claim(
    "<=",
    0.01,
    statement="spread (max - min) over the eight scipy optimisers of the mean best R^2 at the longest length",
    source="Sec. 4.2 (optimisers practically tied)",
)
def optimizers_close(ev: Evaluated):
    s = summary(ev)["optimizers"]
    if not s["mean_best_r2"]:
        return float(s["spread"])
    means = s["mean_best_r2"]
    return float(s["spread"]), (
        f"best {s['best']} {fmt(means[s['best']])}, worst {s['worst']} {fmt(means[s['worst']])} "
        f"(length {s['length']}, {s['datasets']} data sets)"
    )


@claim(
    ">=",
    -1e-9,
    statement="minimum over data sets and lengths of R^2(fast path front) - R^2(paper's BFGS protocol front)",
    source="Code/APO_File_Generator.py (our speed-up keeps the front)",
)
def fast_path_faithful(ev: Evaluated):
    s = summary(ev)["bfgs_gap"]
    if not s["pairs"]:
        return float(s["min"])
    w = s["closest"]
    return float(s["min"]), (
        f"{s['pairs']} (data set, length) pairs up to length {s['max_length']}; closest: {w['dataset']}@"
        f"{w['length']} ({fmt(w['full'], 10)} vs {fmt(w['bfgs_protocol'], 10)})"
    )


def fronts_rows(ev: Evaluated) -> list[dict[str, Any]]:
    """The fronts table: R^2 by length per data set to six decimals (rounding noise such as 2.2e-16 at length 1
    prints as 0), (K ...) where the Karva front is strictly lower."""
    import math

    comp, s = ev.csv("comparison.csv"), summary(ev)
    kcol = s["karva_column"]
    lower = {(r["dataset"], r["length"]) for r in s["karva_gap"]["strict"]}
    rows = []
    for name, part in comp.groupby("dataset", sort=False):
        r = {"data set": name, "features": int(part.features.iloc[0])}
        for x in part.itertuples():
            r[f"L={x.length}"] = f"{fixed(float(x.full), 6)}" + (
                f" (K {fixed(float(getattr(x, kcol)), 6)})" if (name, int(x.length)) in lower else ""
            )
        pl = part.planted_length.iloc[0]
        r["planted"] = "" if math.isnan(pl) else f"L={int(pl)}"
        rows.append(r)
    return rows


def context(ev: Evaluated) -> dict:
    s, meta = summary(ev), ev.json("meta.json")
    comp = ev.csv("comparison.csv")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    colours = plt.get_cmap("tab20").colors
    for i, (name, part) in enumerate(comp.groupby("dataset", sort=False)):
        ax.plot(part.length, part.full, marker="o", label=name, color=colours[i % len(colours)])
    ax.set_xlabel("length (nodes)")
    ax.set_ylabel("front R^2")
    ax.set_ylim(-0.05, 1.02)
    ax.legend(fontsize=6, ncols=2)
    fronts_figure = ev.figure("fronts.png", fig, "APO fronts (all trees) per data set")

    optimizer_table = ""
    o = s["optimizers"]
    if o["mean_best_r2"]:
        piv = ev.csv("optimizers.csv").pivot(index="dataset", columns="optimizer", values="best_r2")
        opt_rows = [{"data set": i, **{c: float(v) for c, v in row.items()}} for i, row in piv.iterrows()]
        opt_rows.append({"data set": "mean", **o["mean_best_r2"]})
        optimizer_table = table(opt_rows)

    peer_table = ""
    if s["peer_gap"]["programs"]:
        peer_table = table(
            [
                {
                    "data set": r["dataset"],
                    "programs <= max length": r["programs"],
                    "best program R^2": r["best_r2"],
                    "max R^2(program) - front": r["max_gap"],
                }
                for r in s["peer_gap"]["by_dataset"]
            ]
        )

    below = s["below_planted"]
    shorter = "; ".join(f"{r['dataset']}: {fixed(r['r2'], 6)} at L={r['length']}" for r in below["rows"])
    return {
        "max_length": meta["max_length"],
        "fronts_table": table(fronts_rows(ev)).rstrip("\n"),
        "shorter": shorter,
        "shorter_below": below["below"],
        "shorter_sets": len(below["rows"]),
        "fronts_figure": fronts_figure.rstrip("\n"),
        "optimizer_length": o.get("length"),
        "optimizer_table": optimizer_table.rstrip("\n"),
        "peer_table": peer_table.rstrip("\n"),
        "karva_structures": meta["karva_structures"],
        "counts_table": table(ev.csv("counts.csv").to_dict("records")).rstrip("\n"),
    }


def metrics(ev: Evaluated) -> dict:
    comp = ev.csv("comparison.csv")
    return {
        "front_r2": {f"{r.dataset}/{r.length}": float(r.full) for r in comp.itertuples()},
        "optimizer_mean_best_r2": summary(ev)["optimizers"]["mean_best_r2"],
        "expressions": {k: v["expressions"] for k, v in ev.json("meta.json")["summary"].items()},
    }
