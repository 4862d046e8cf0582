"""The claims of ghost, computed from data/ghost/evaluated (summary.json and the evaluated tables), and what
report.md shows."""

from __future__ import annotations

from icml25.claims import claim
from icml25.reporting import Evaluated, fmt, pyplot, table

METHOD_LABELS = {
    "ghost_paper": "GHOST (paper)",
    "ghost_code": "GHOST (faithful_to_code)",
    "ghost_paper_noret": "GHOST (paper) w/o retention",
    "ghost_code_noret": "GHOST (faithful_to_code) w/o retention",
    "fedavg": "one-shot FedAvg",
    "local": "local-only (mean over clients)",
    "central": "centralised GCN (bound)",
}
BASELINE_NAMES = {"fedavg": "one-shot FedAvg", "local": "local-only"}
MAIN_LABELS = {"paper": "the paper's method", "code": "the official code's behaviour (faithful_to_code)"}


def summary(ev: Evaluated) -> dict:
    return ev.json("summary.json")


@claim(
    ">=",
    0.03,
    statement="GHOST's mean accuracy minus the better of one-shot FedAvg's and the local models' mean accuracy",
    source="Table 1 (GHOST above one-shot FL baselines on non-IID clients)",
)
def beats_baselines(ev: Evaluated):
    s = summary(ev)
    gh, runs = s["ghost"], s["runs"]
    note = (
        f"GHOST ({s['headline']}) {fmt(gh['mean'])} vs {BASELINE_NAMES[gh['best_baseline']]} "
        f"{fmt(gh['best_baseline_mean'])} (means over {runs} runs); GHOST is ahead of both baselines in "
        f"{gh['wins']} of {runs} runs (worst run: {fmt(gh['worst_run'], 3)})"
    )
    return gh["margin"], note


@claim(">=", 0.25, statement="GHOST's mean accuracy minus chance 1/C", source="Table 1")
def above_chance(ev: Evaluated):
    s = summary(ev)
    C = ev.json("meta.json")["num_classes"]
    note = f"GHOST ({s['headline']}) {fmt(s['ghost']['mean'])}, chance 1/{C} = {fmt(s['chance'])}"
    return s["ghost"]["above_chance"], note


@claim(
    ">=",
    0.9,
    statement="fraction of (client, class) pairs with >= 5 train nodes whose mean generated vector is "
    "cosine-closest to the client's real class centroid",
    source="Sec. 4.1 (proxies capture local knowledge)",
)
def proxy_fidelity(ev: Evaluated):
    s = summary(ev)
    f = s["fidelity"]["headline"]
    note = (
        f"{f['closest_count']} of {f['pairs']} (client, class) pairs over {s['runs']} runs"
        if f["pairs"]
        else "no (client, class) pair has enough train nodes"
    )
    return f["closest"], note


def accuracy_figure(ev: Evaluated, order: list[str]) -> str:
    s = summary(ev)
    mean, std, C = s["accuracy"]["mean"], s["accuracy"]["std"], ev.json("meta.json")["num_classes"]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 3.2))
    ax.bar(
        range(len(order)),
        [mean[m] for m in order],
        yerr=[std[m] for m in order],
        capsize=4,
        color=["#c44e52" if m.startswith("ghost") else "#4c72b0" for m in order],
    )
    ax.axhline(1.0 / C, color="k", ls="--", lw=1, label=f"chance 1/{C}")
    ax.set_xticks(range(len(order)), [METHOD_LABELS[m].replace(" (", "\n(") for m in order], fontsize=7)
    ax.set_ylabel("test accuracy (server test graph)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    return ev.figure("accuracy.png", fig, f"accuracy per method: mean and std over {s['runs']} runs")


def label_figure(ev: Evaluated) -> str:
    import numpy as np
    import pandas as pd

    lab = summary(ev)["labels_run0"]
    C = ev.json("meta.json")["num_classes"]
    l0 = pd.DataFrame(lab["nodes"], index=lab["clients"], columns=lab["classes"])
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3))
    bottom = np.zeros(len(l0))
    for c in l0.columns:
        ax.bar(l0.index, l0[c], bottom=bottom, label=f"class {c}")
        bottom += l0[c].to_numpy()
    ax.set_xlabel("client")
    ax.set_ylabel("nodes")
    ax.set_xticks(l0.index)
    ax.legend(fontsize=7, ncols=min(C, 6))
    caption = f"label distribution per client (run 0, Dirichlet alpha = {ev.params.prepare.alpha})"
    return ev.figure("label_distribution.png", fig, caption)


def context(ev: Evaluated) -> dict:
    s = summary(ev)
    meta = ev.json("meta.json")
    main = s["headline"]
    mean, std, per_run = s["accuracy"]["mean"], s["accuracy"]["std"], s["accuracy"]["per_run"]
    order = [m for m in METHOD_LABELS if m in mean]
    rows = [
        {
            "method": METHOD_LABELS[m],
            "mean accuracy": mean[m],
            "std": std[m],
            "per run": ", ".join(fmt(a, 3) for a in per_run[m]),
        }
        for m in order
    ]
    pc = ev.csv("per_client.csv")
    held = s["labels_run0"]["held"]
    pc_rows = [
        {
            "client": int(r.client),
            "nodes": int(r.nodes),
            "classes held": held[str(int(r.client))],
            f"GHOST ({main}) on its test nodes": r.ghost,
            "FedAvg on its test nodes": r.fedavg,
            "its local model on the server test graph": r.local_on_server_test,
        }
        for r in pc[pc.run == 0].itertuples()
    ]
    fid_rows = [
        {
            "mode": mode + (" (headline)" if mode == main else ""),
            "pairs": f["pairs"],
            "closest to own centroid": f["closest"],
            "mean cos to own centroid": f["cos_own"],
            "mean best cos to another centroid": f["cos_best_other"],
        }
        for mode, f in s["fidelity"]["by_mode"].items()
    ]
    ratio, norm_ratio = s["server"]["retention_over_nll_median"], s["server"]["norm_over_nll_median"]
    ret_rows = [
        {
            "method": METHOD_LABELS.get(m, m),
            "median lambda_r * retention / NLL": ratio[m],
            "median lambda_n * omega / NLL (constant, no gradient)": norm_ratio[m],
        }
        for m in sorted(ratio)
    ]
    g = f"ghost_{main}"
    return {
        "meta": meta,
        "main": main,
        "main_label": MAIN_LABELS[main],
        "accuracy_table": table(rows),
        "accuracy_figure": accuracy_figure(ev, order),
        "label_figure": label_figure(ev),
        "per_client_table": table(pc_rows),
        "fidelity_table": table(fid_rows),
        "retention_table": table(ret_rows),
        "ghost_mean": mean[g],
        "noret_mean": mean.get(g + "_noret", float("nan")),
        "paper_mean": mean["ghost_paper"],
        "code_mean": mean["ghost_code"],
        "central_mean": mean["central"],
    }


def metrics(ev: Evaluated) -> dict:
    s = summary(ev)
    return {
        "accuracy_mean": s["accuracy"]["mean"],
        "accuracy_std": s["accuracy"]["std"],
        "proxy_fidelity": {m: f["closest"] for m, f in s["fidelity"]["by_mode"].items()},
        "retention_over_nll_median": s["server"]["retention_over_nll_median"],
        "chance": s["chance"],
    }
