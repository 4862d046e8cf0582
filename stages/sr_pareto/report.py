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
    kind="result",
    killed_by="test_stubs.py::test_random_search_and_gplearn_fronts_fail_exact_recovery",
    statement="minimum over the noise-free planted data sets of the full front's R^2 at the planted length",
    source="Sec. 3 (exhaustive search attains the optimum within the grammar)",
    # deterministic fits, no training: float noise only
    tol=1e-9,
)
def exact_recovery(ev: Evaluated):
    s = summary(ev)["exact_recovery"]
    value = float(s["min_r2"])
    worst = f"{s['worst']} (R^2 {fmt(value, 12)})" if s["planted_sets"] else "none"
    return value, f"{s['planted_sets']} planted noise-free data sets; worst: {worst}"


@claim(
    ">",
    1e-3,
    kind="result",
    killed_by="test_stubs.py::test_complete_enumeration_fails_karva_misses_shapes",
    statement="minimum over the noise-free planted data sets whose expression the Karva L = 3 space cannot encode "
    "of R^2(all-trees front) - R^2(Karva L = 3 front) at the planted length, the Karva space enumerated and "
    "fitted on its own (the paper's BFGS protocol)",
    source="Code/APO_File_Generator.py (Karva head length 3: only the balanced 3-operator tree shape)",
    # deterministic BFGS fits, no training: float noise only; 0 in a8afbab
    tol=1e-9,
)
def karva_misses_shapes(ev: Evaluated):
    s = summary(ev)["karva_gap"]
    rows = ", ".join(
        f"{r['dataset']}@{r['length']} {fmt(r['full'], 6)} vs {fmt(r['karva'], 6)}" for r in s["unreachable"]
    )
    control = ", ".join(f"{r['dataset']}@{r['length']} gap {fmt(r['gap'])}" for r in s["reachable"])
    if not s["unreachable"]:
        return float(
            s["min"]
        ), "no planted set out of the Karva space's reach has a Karva fit in this profile"
    return float(s["min"]), (f"out of reach: {rows}; within reach (control): {control or 'none'}")


@claim(
    "<=",
    1e-6,
    kind="invariant",
    statement="maximum over data sets and gplearn programs (length <= max) of R^2(program) - R^2(APO front at "
    "its length); every add/sub/mul program is an expression of the grammar, which the front fits exhaustively",
    source="Sec. 4 (the front bounds every SR method)",
    # deterministic fits, no training: float noise only
    tol=1e-9,
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
    kind="result",
    killed_by="test_stubs.py::test_optimizer_returning_its_start_fails_optimizers_close",
    statement="maximum over the optimiser data sets of the spread (max - min) over the eight scipy optimisers "
    "of the best R^2 at length 7 over a common candidate set (the fast path's best length-7 expressions holding a "
    "constant and a seeded random sample of the others), each optimiser from the paper's start",
    source="Sec. 4.2 (optimisers practically tied)",
    # deterministic scipy fits, no training: moved 1e-12 in a8afbab
    tol=1e-9,
    paper="mean length-7 R^2 0.5847 (CG) to 0.5856 over 34 data sets (result files)",
)
def optimizers_close(ev: Evaluated):
    s = summary(ev)["optimizers"]
    if not s["mean_best_r2"]:
        return float(s["spread"])
    means, bad, n = s["mean_best_r2"], s["invalid"], s["candidates"]
    invalid = ", ".join(f"{k} {bad[k]}/{n[k]}" for k in means)
    t = ev.params.train
    per_set = ", ".join(f"{k} {fmt(v)}" for k, v in s["spread_by_dataset"].items())
    return float(s["spread"]), (
        f"spread by data set: {per_set} (worst {s['worst_dataset']}); mean best R^2 highest for {s['best']} "
        f"{fmt(means[s['best']])}, lowest for {s['worst']} {fmt(means[s['worst']])} "
        f"(length {s['length']}, {s['datasets']} data sets, {t.optimizer_top} best + {t.optimizer_sample} drawn "
        f"candidates each); invalid fits: {invalid}"
    )


@claim(
    ">=",
    -1e-9,
    kind="invariant",
    statement="minimum over data sets and lengths of R^2(fast path front) - R^2(paper's BFGS protocol front) "
    "over the same expressions: all trees at the lengths the all-trees protocol ran (<= 5) on every data set, "
    "the Karva L = 3 space at the longer lengths on the Karva data sets; the fast path's refinement runs the "
    "protocol's own BFGS on each length's best (25), so this fails only where the protocol's best expression "
    "ranks outside them",
    source="Code/APO_File_Generator.py (our speed-up keeps the front)",
    # deterministic fits, no training: float noise only (1e-13 in a8afbab's note)
    tol=1e-9,
)
def fast_path_faithful(ev: Evaluated):
    s = summary(ev)["bfgs_gap"]
    if not s["pairs"]:
        return float(s["min"])
    w, k = s["closest"], s["karva"]
    at7 = (
        f"; {k['pairs']} on the Karva space at length(s) {', '.join(map(str, k['lengths']))} "
        f"(min {fmt(k['min'], 3)})"
        if k["pairs"]
        else ""
    )
    return float(s["min"]), (
        f"{s['trees']['pairs']} (data set, length) pairs over all trees up to length {s['trees']['max_length']}"
        f"{at7}; closest: {w['dataset']}@{w['length']} on {w['space']} ({fmt(w['fast'], 10)} vs "
        f"{fmt(w['protocol'], 10)})"
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
        opt = ev.csv("optimizers.csv")
        piv = opt.pivot(index="dataset", columns="optimizer", values="best_r2")[list(o["mean_best_r2"])]
        opt_rows = [{"data set": i, **{c: float(v) for c, v in row.items()}} for i, row in piv.iterrows()]
        opt_rows.append({"data set": "mean", **o["mean_best_r2"]})
        opt_rows.append(
            {
                "data set": "invalid fits",
                **{k: f"{o['invalid'][k]}/{o['candidates'][k]}" for k in o["invalid"]},
            }
        )
        optimizer_table = table(opt_rows)

    karva_table = ""
    kcol = s["karva_column"]
    kc = comp[comp[kcol].notna() & comp.length.eq(comp.length.max())]
    if len(kc):
        karva_table = table(
            [
                {
                    "data set": r.dataset,
                    "length": int(r.length),
                    "all trees (fast path)": fixed(float(r.full), 6),
                    "expression": f"`{r.full_expression}`",
                    "Karva (protocol)": fixed(float(getattr(r, kcol)), 6),
                    "Karva expression": f"`{getattr(r, kcol + '_expression')}`",
                    "Karva (fast path)": fixed(float(getattr(r, kcol + "_fast")), 6),
                    "planted": ""
                    if r.planted_length != r.length
                    else ("in Karva's reach" if r.planted_reachable == 1 else "out of reach"),
                }
                for r in kc.itertuples()
            ]
        )

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
        "optimizer_datasets": o.get("datasets"),
        "optimizer_table": optimizer_table.rstrip("\n"),
        "karva_table": karva_table.rstrip("\n"),
        "karva_head": meta["karva_head"],
        "karva_datasets": len(s["karva_gap"]["datasets"]),
        "refine_top": ev.params.train.refine_top,
        "protocol_max_length": ev.params.train.protocol_max_length,
        "optimizer_top": ev.params.train.optimizer_top,
        "optimizer_sample": ev.params.train.optimizer_sample,
        "fast_karva_min": s["bfgs_gap"].get("karva", {}).get("min"),
        "karva_drops": "; ".join(
            f"{r['dataset']}: {fixed(r['r2'], 6)} at L={r['length']} after {fixed(r['shorter'], 6)} at "
            f"L={r['length'] - 2}"
            for r in s["karva_gap"]["nonmonotone"]
        ),
        "peer_table": peer_table.rstrip("\n"),
        "karva_structures": meta["karva_structures"],
        "counts_table": table(ev.csv("counts.csv").to_dict("records")).rstrip("\n"),
    }


def metrics(ev: Evaluated) -> dict:
    comp, s = ev.csv("comparison.csv"), summary(ev)
    return {
        "front_r2": {f"{r.dataset}/{r.length}": float(r.full) for r in comp.itertuples()},
        "karva_gap_at_planted_length": {
            r["dataset"]: r["gap"] for r in s["karva_gap"]["unreachable"] + s["karva_gap"]["reachable"]
        },
        "optimizer_mean_best_r2": s["optimizers"]["mean_best_r2"],
        "optimizer_invalid_fits": s["optimizers"]["invalid"],
        "expressions": {k: v["expressions"] for k, v in ev.json("meta.json")["summary"].items()},
    }
