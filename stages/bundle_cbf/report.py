"""The claims of bundle_cbf, computed from data/bundle_cbf/evaluated (summary.json's numbers; episodes, tables,
the sweep, paths and fields for the report). All four are ``result``s: each comes from closed-loop episodes or
fits that could have come out otherwise, and tests/papers/bundle_cbf/test_claims.py shows a stub failing each.
A claim's value is its worst seed."""

from __future__ import annotations

from icml25.claims import claim
from icml25.reporting import Evaluated, fmt, pyplot, table

TESTS = "test_claims.py::"
LABELS = {
    "mcbf": "mCBF (margin delta(p), learned model)",
    "mcbf_true": "mCBF, true model",
    "robust": "robust CBF (margin max delta)",
    "nominal": "nominal CBF (margin 0)",
    "none": "no filter",
}
ORDER = ("mcbf", "mcbf_true", "robust", "nominal", "none")
# The paper's Table 1/2 numbers (success %, path length m, constraint satisfaction %) beside our analogue.
PAPER = {
    "mcbf": "full method: 96.3 / 18.5 / 99.3",
    "robust": "learned CBFs: 82-86 success (Neural-CBF 84.0 / 22.3 / 98.7)",
    "nominal": "w/o bundle: 62.7 / 35.3 / 88.2",
    "none": "w/o mCBF (Neural ODE only): 45.7 / 48.2 / 72.8",
}


def _s(ev: Evaluated) -> dict:
    return ev.json("summary.json")


def _seeds(values: list[float], digits: int = 2) -> str:
    return ", ".join(f"{v:.{digits}f}" for v in values)


@claim(
    ">=",
    0.99,
    kind="result",
    killed_by=TESTS + "test_no_filter_fails_mcbf_safe",
    statement="share of mCBF episodes (learned model, narrow passage) without a true collision, worst seed",
    source="Table 1 (constraint satisfaction 99.3%); the spec's floor",
    # share of 100 closed-loop episodes with a torch-trained model: one episode may flip
    tol=0.01,
    paper="constraint satisfaction 99.3% (Table 1)",
)
def mcbf_safe(ev: Evaluated):
    s = _s(ev)
    return s["mcbf_safe"], f"per seed {_seeds(s['mcbf_safe_seeds'])}; {s['layouts']} layouts a seed"


@claim(
    ">=",
    0.10,
    kind="result",
    killed_by=TESTS + "test_worst_case_margin_fails_less_conservative",
    statement="mCBF success minus robust-CBF success (narrow passage, same layouts), worst seed",
    source="Table 1 (96.3% against 82-86% for learned CBFs); the spec's floor of 10 points",
    # difference of two shares of 100 episodes: one episode may flip on each side
    tol=0.02,
    paper="success 96.3% vs 82-86% for learned CBFs (Table 1)",
)
def less_conservative(ev: Evaluated):
    s = _s(ev)
    return s["less_conservative"], f"per seed {_seeds(s['less_conservative_seeds'])}"


@claim(
    ">=",
    0.05,
    kind="result",
    killed_by=TESTS + "test_nominal_with_a_hidden_margin_fails_nominal_unsafe",
    statement="share of nominal-CBF episodes (margin 0, narrow passage) with a true collision, worst seed",
    source="Table 2 (w/o bundle: constraint satisfaction 88.2%); the spec's floor",
    # share of 100 closed-loop episodes with a torch-trained model: one episode may flip
    tol=0.01,
    paper="w/o bundle: constraint satisfaction 88.2% (Table 2)",
)
def nominal_unsafe(ev: Evaluated):
    s = _s(ev)
    return s["nominal_unsafe"], f"per seed {_seeds(s['nominal_unsafe_seeds'])}"


@claim(
    "<=",
    0.8,
    kind="result",
    killed_by=TESTS + "test_uniform_weights_fail_weighting_helps",
    statement="held-out one-step error of the Sigma^-1-weighted Neural ODE / the unweighted one's, worst seed",
    source="Sec. 4 (the uncertainty-weighted loss T); the issue's floor",
    # torch Adam fits (600 steps): a few % relative drift, as torch training moved elsewhere
    tol=0.02,
)
def weighting_helps(ev: Evaluated):
    s = _s(ev)
    return s["weighting_ratio"], f"{s['metric']}; per seed {_seeds(s['weighting_ratio_seeds'])}"


def _condition_table(t, family: str, paper: bool) -> str:
    t = t[t.family == family]
    rows = []
    for c in ORDER:
        g = t[t.condition == c]
        if g.empty:
            continue
        row = {
            "condition": LABELS[c],
            "success": f"{g.success.mean():.2f} (worst {g.success.min():.2f})",
            "constraint satisfaction": f"{g.satisfaction.mean():.3f} (worst {g.satisfaction.min():.2f})",
            "path length (successes)": fmt(g.path.mean(), 2),
            "time to goal, s": f"{g.steps.mean() * 0.02:.1f}",
            "closest approach": f"{g.min_h.min():.3f}",
            "infeasible steps / episode": f"{g.infeasible.mean():.1f}",
        }
        if paper:
            row["paper (success / path / satisfaction)"] = PAPER.get(c, "-")
        rows.append(row)
    return table(rows)


def _fits_table(ev: Evaluated) -> str:
    e = ev.csv("errors.csv").pivot(index="seed", columns="weighting", values="error")
    f = ev.csv("fits.csv").set_index(["seed", "weighting"])
    rows = []
    for k in e.index:
        rows.append(
            {
                "seed": int(k),
                "weighted error": f"{e.loc[k, 'weighted']:.4f}",
                "unweighted error": f"{e.loc[k, 'unweighted']:.4f}",
                "ratio": f"{e.loc[k, 'weighted'] / e.loc[k, 'unweighted']:.2f}",
                "gain b (weighted)": f"{f.loc[(k, 'weighted'), 'gain_x']:.3f}, {f.loc[(k, 'weighted'), 'gain_y']:.3f}",
                "gain b (unweighted)": f"{f.loc[(k, 'unweighted'), 'gain_x']:.3f}, "
                f"{f.loc[(k, 'unweighted'), 'gain_y']:.3f}",
                "fit s": f"{f.loc[(k, 'weighted'), 'seconds']:.1f} / {f.loc[(k, 'unweighted'), 'seconds']:.1f}",
            }
        )
    return table(rows)


def _sweep_table(ev: Evaluated) -> str:
    sw = ev.csv("sweep.csv")
    if sw.empty:
        return "(no sweep ran)"
    m = sw.groupby(["alpha", "condition"])[["success", "satisfaction"]].mean()
    rows = []
    for a in sorted(sw.alpha.unique()):
        row = {"alpha": f"{a:g}", "max delta": f"{a * 2 * 2**0.5:.3f}"}
        for c in ("mcbf", "robust", "nominal"):
            r = m.loc[(a, c)]
            row[f"{c}: success / satisfaction"] = f"{r.success:.2f} / {r.satisfaction:.2f}"
        rows.append(row)
    return table(rows)


def _ablation_table(ev: Evaluated) -> str:
    a = ev.csv("ablation.csv")
    if a.empty:
        return "(no ablation ran)"
    rows = []
    for variant, g in a.groupby("variant", sort=False):
        r = g.set_index("condition")
        n = r.episodes
        rows.append(
            {
                "setting": variant,
                "mCBF success / satisfaction": f"{r.succeeded['mcbf'] / n['mcbf']:.2f} / "
                f"{1 - r.collided['mcbf'] / n['mcbf']:.2f}",
                "robust success": f"{r.succeeded['robust'] / n['robust']:.2f}",
                "mCBF - robust success": f"{(r.succeeded['mcbf'] - r.succeeded['robust']) / n['mcbf']:.2f}",
                "nominal collisions": f"{r.collided['nominal'] / n['nominal']:.2f}",
            }
        )
    return table(rows)


def _figures(ev: Evaluated) -> list[str]:
    import numpy as np

    plt = pyplot()
    figs = []
    paths = ev.csv("paths.csv")
    if not paths.empty:
        lay = ev.csv("layouts.csv")
        obs = ev.csv("obstacles.csv")
        ids = sorted(paths.layout.unique())
        fig, axes = plt.subplots(1, len(ids), figsize=(3.2 * len(ids), 3.4), squeeze=False)
        colors = {"mcbf": "C0", "robust": "C2", "nominal": "C3", "none": "0.5"}
        for ax, i in zip(axes[0], ids, strict=True):
            pick = (obs.seed == 0) & (obs.family == "passage") & (obs.layout == i)
            for o in obs[pick].itertuples():
                ax.add_patch(plt.Circle((o.ox, o.oy), o.r, color="0.8"))
            row = lay[(lay.seed == 0) & (lay.family == "passage") & (lay.layout == i)].iloc[0]
            for c, g in paths[paths.layout == i].groupby("condition"):
                ax.plot(g.x, g.y, lw=1.1, color=colors.get(c, "k"), label=LABELS.get(c, c))
            ax.plot(row.start_x, row.start_y, "ko", ms=3)
            ax.plot(row.goal_x, row.goal_y, "k*", ms=6)
            ax.set_xlim(0, 4)
            ax.set_ylim(0, 4)
            ax.set_aspect("equal")
            ax.set_title(f"gap {row.gap_width:.2f} at y = {row.gap_y:.2f}", fontsize=8)
        axes[0][0].legend(fontsize=5, loc="lower left")
        figs.append(
            ev.figure("paths.png", fig, "seed 0's first passage layouts: the paths under each condition")
        )
    sw = ev.csv("sweep.csv")
    if not sw.empty:
        m = sw.groupby(["alpha", "condition"])[["success", "satisfaction"]].mean().reset_index()
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
        for c, g in m.groupby("condition"):
            axes[0].plot(g.alpha, g.success, "o-", label=LABELS.get(c, c))
            axes[1].plot(g.alpha, g.satisfaction, "o-", label=LABELS.get(c, c))
        axes[0].set_ylabel("success")
        axes[1].set_ylabel("constraint satisfaction")
        for ax in axes:
            ax.set_xlabel("alpha (delta(p) = alpha min_j ||p - s_j||)")
        axes[0].legend(fontsize=6)
        figs.append(ev.figure("alpha_sweep.png", fig, "success and constraint satisfaction against alpha"))
    f = ev.csv("field.csv")
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.5))
    for ax, name in zip(axes, ("true", "weighted", "unweighted"), strict=True):
        ax.quiver(f.vx, f.vy, f[f"{name}_ax"], f[f"{name}_ay"], scale=6)
        err = np.sqrt(((f[f"{name}_ax"] - f.true_ax) ** 2 + (f[f"{name}_ay"] - f.true_ay) ** 2).mean())
        ax.set_title(f"{name} drift a(v)" + ("" if name == "true" else f": RMS error {err:.3f}"), fontsize=8)
        ax.set_xlabel("v_x")
        ax.set_aspect("equal")
    axes[0].set_ylabel("v_y")
    figs.append(
        ev.figure("field.png", fig, "the drift a(v) = -(c_d/m)||v|| v against seed 0's learned drifts")
    )
    return figs


def context(ev: Evaluated) -> dict:
    s = _s(ev)
    t = ev.csv("table.csv")
    means = t.groupby(["family", "condition"])[["success", "satisfaction", "path"]].mean()
    pick = {
        f"{fam}_{c}": r._asdict()
        for (fam, c), r in zip(means.index, means.itertuples(index=False), strict=True)
    }
    return {
        "s": s,
        "passage_table": _condition_table(t, "passage", True),
        "random_table": _condition_table(t, "random", False) if (t.family == "random").any() else "",
        "fits_table": _fits_table(ev),
        "sweep_table": _sweep_table(ev),
        "ablation_table": _ablation_table(ev),
        "m": pick,
        "figures": _figures(ev),
    }


def metrics(ev: Evaluated) -> dict:
    s = _s(ev)
    return {k: v for k, v in s.items() if isinstance(v, int | float) and not isinstance(v, bool)}
