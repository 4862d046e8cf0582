"""The claims of issm, computed from data/issm/evaluated (summary.json per data set; scores.csv per fit), and
what report.md shows. Every claim is a ``result``: the paper's own claims are on simulations, and each could
come out otherwise (tests/papers/issm/test_claims.py shows a stub or broken variant failing each)."""

from __future__ import annotations

import math

from icml25.claims import claim
from icml25.reporting import Evaluated, fmt, pyplot, table

TESTS = "test_claims.py::"


def _set(ev: Evaluated, name: str) -> dict | None:
    return ev.json("summary.json")["sets"].get(name)


def _absent(name: str) -> tuple[float, str]:
    return math.nan, f"no {name} data set in this run (prepare.sets / prepare.source)"


def _per_seed(ev: Evaluated, name: str, col: str, variant: str = "issm") -> str:
    s = ev.csv("scores.csv").query("data == @name and variant == @variant").sort_values("seed")
    return ", ".join(fmt(float(v), 3) for v in s[col])


@claim(
    ">=",
    0.8,
    kind="result",
    killed_by=TESTS + "test_an_untrained_recognition_network_fails_latents_identified",
    statement="dynamic attractor: mean over seeds of iSSM's unaligned correlation of the inferred and true "
    "latents on non-intervened entries",
    source="Sec. 5 (simulations: iSSM recovers the true latents); spec floor",
    # training (torch LSTM): moved 0.0077 (a8afbab), seeds up to 0.018; seed spread 0.13
    tol=0.025,
)
def latents_identified(ev: Evaluated):
    s = _set(ev, "attractor")
    if s is None:
        return _absent("attractor")
    note = (
        f"per seed {_per_seed(ev, 'attractor', 'xcorr')}; the angle x2 lies outside [-pi, pi] on "
        f"{100 * s['angle_beyond_pi']:.1f}% of its free entries, where y fixes it only modulo 2 pi"
    )
    official = _set(ev, "attractor_official")
    if official is not None:
        note += (
            f"; under the official protocol (not gated; {100 * official['angle_beyond_pi']:.1f}% outside) "
            f"x-corr {fmt(official['xcorr_issm'], 3)}"
        )
    return s["xcorr_issm"], note


@claim(
    ">=",
    0.2,
    kind="result",
    killed_by=TESTS + "test_issm_without_the_clamp_fails_beats_ssm_latents",
    statement="dynamic attractor: mean unaligned latent correlation of iSSM minus that of SSM (same data and "
    "seeds)",
    source="Sec. 5 (only iSSM's latents are identifiable); spec floor",
    # training (torch): moved 0.018 between machines (a8afbab), seeds up to 0.028
    tol=0.05,
)
def beats_ssm_latents(ev: Evaluated):
    s = _set(ev, "attractor")
    if s is None:
        return _absent("attractor")
    return s["xcorr_gap"], (
        f"SSM per seed {_per_seed(ev, 'attractor', 'xcorr', 'ssm')}; smallest per-seed gap "
        f"{fmt(s['xcorr_gap_worst'], 3)}"
    )


@claim(
    "<",
    0.1,
    kind="result",
    killed_by=TESTS + "test_an_issm_with_its_emission_at_initialisation_fails_fit_comparable",
    statement="dynamic attractor: |mean y reconstruction correlation of iSSM - that of SSM|",
    source="Sec. 5 (both models fit the observations); spec floor",
    # training (torch): moved 0.006 between machines (a8afbab)
    tol=0.02,
)
def fit_comparable(ev: Evaluated):
    s = _set(ev, "attractor")
    if s is None:
        return _absent("attractor")
    return s["ycorr_gap"], (
        f"y-corr iSSM {fmt(s['ycorr_issm'], 3)}, SSM {fmt(s['ycorr_ssm'], 3)}; largest per-seed gap "
        f"{fmt(s['ycorr_gap_worst'], 3)}"
    )


@claim(
    "<=",
    0.5,
    kind="result",
    killed_by=TESTS + "test_ssm_in_issms_place_fails_dynamics_identified",
    statement="linear system: mean over seeds of the largest distance from an eigenvalue of iSSM's learned A "
    "to the nearest eigenvalue of the true A (0.5 +- 2i)",
    source="Sec. 5 (iSSM identifies the dynamics); issue ceiling",
    # training (torch): moved 0.0017 (a8afbab), seeds up to 0.009
    tol=0.01,
)
def dynamics_identified(ev: Evaluated):
    s = _set(ev, "linear")
    if s is None:
        return _absent("linear")
    return s["eig_issm"], f"per seed {_per_seed(ev, 'linear', 'eig_dist')}; SSM {fmt(s['eig_ssm'], 3)}"


@claim(
    "<=",
    0.8,
    kind="result",
    killed_by=TESTS + "test_ssm_in_issms_place_fails_novel_perturbation",
    statement="linear system, held-out protocol (8 pulses of 6 bins): mean over seeds of the MSE ratio "
    "iSSM / SSM of observations predicted by the do-rollout of the learned dynamics",
    source="Sec. 5 (iSSM predicts responses to novel perturbations); issue ceiling",
    # training (torch): moved 7e-4 between machines (a8afbab)
    tol=0.003,
)
def novel_perturbation(ev: Evaluated):
    s = _set(ev, "linear")
    if s is None:
        return _absent("linear")
    return s["mse_ratio"], (
        f"MSE iSSM {fmt(s['mse_issm'], 4)}, SSM {fmt(s['mse_ssm'], 4)}; worst seed {fmt(s['mse_ratio_worst'], 3)}"
    )


VARIANT = {"issm": "iSSM", "ssm": "SSM"}


def _label(v: str) -> str:
    if v.startswith("issm_gamma"):
        return f"iSSM, gamma = {v.removeprefix('issm_gamma')}"
    return VARIANT.get(v, v)


def _score_table(scores) -> str:
    rows = [
        {
            "data": r.data,
            "seed": int(r.seed),
            "model": _label(r.variant),
            "x-corr (unaligned)": fmt(float(r.xcorr), 3),
            "aligned R^2": fmt(float(r.r2), 3),
            "y-corr": fmt(float(r.ycorr), 3),
            "eigenvalue distance": fmt(float(r.eig_dist), 3),
            "held-out MSE": fmt(float(r.heldout_mse), 4),
            "final ELBO": fmt(float(r.final_elbo), 4),
        }
        for r in scores.sort_values(["data", "variant", "seed"]).itertuples()
    ]
    return table(rows)


def _eig_table(eigs) -> str:
    rows = []
    for (data, variant), g in eigs.groupby(["data", "variant"], sort=True):
        vals = [
            "; ".join(
                f"{fmt(r.real, 3)}{'+' if r.imag >= 0 else '-'}{fmt(abs(r.imag), 3)}i" for r in s.itertuples()
            )
            for _, s in g.sort_values(["seed", "k"]).groupby("seed", sort=True)
        ]
        rows.append(
            {
                "data": data,
                "model": "truth (I + drift Jacobian)" if variant == "true" else _label(variant),
                "eigenvalues of A (per seed)": " / ".join(vals),
            }
        )
    return table(rows)


def _figures(ev: Evaluated, sets: list[str]) -> list[str]:
    import numpy as np

    from models.issm.evaluation import flow_grid

    plt = pyplot()
    tr = np.load(ev.dir / "trajectories.npz")
    keys = set(tr.files)
    out = []
    for name in sets:
        if f"{name}/truth/x" not in keys:
            continue
        x, u = tr[f"{name}/truth/x"], tr[f"{name}/truth/u"]
        D = x.shape[1]
        fig, axes = plt.subplots(D, 1, figsize=(10, 2.2 * D), sharex=True, squeeze=False)
        for d in range(D):
            ax = axes[d, 0]
            ax.plot(x[:, d], color="k", lw=1.5, label="truth")
            for v, c in (("issm", "C0"), ("ssm", "C3")):
                if f"{name}/{v}/x_hat" in keys:
                    ax.plot(tr[f"{name}/{v}/x_hat"][:, d], color=c, lw=1, label=_label(v))
            on = np.flatnonzero(u[:, d] != 0)
            ax.scatter(on, u[on, d], s=6, color="grey", label="clamped (B u)")
            ax.set_ylabel(f"x{d + 1}")
        axes[0, 0].legend(fontsize=7, ncol=4)
        axes[-1, 0].set_xlabel("bin")
        out.append(
            ev.figure(
                f"latents_{name}.png",
                fig,
                f"{name}: true and inferred latents, seed 0, trial 0 (no alignment)",
            )
        )
    flows = [name for name in ("linear", "attractor") if f"{name}/issm/A" in keys]
    if flows:
        true_A = ev.json("summary.json")["true_A"]
        fig, axes = plt.subplots(len(flows), 3, figsize=(13, 4 * len(flows)), squeeze=False)
        for row, name in zip(axes, flows, strict=True):
            panels = [("truth", np.asarray(true_A[name]))] + [
                (_label(v), tr[f"{name}/{v}/A"]) for v in ("issm", "ssm") if f"{name}/{v}/A" in keys
            ]
            for ax, (title, A) in zip(row, panels, strict=False):
                X1, X2, V1, V2 = flow_grid(A, affine=name == "attractor" and title == "truth")
                ax.quiver(X1, X2, V1, V2)
                ax.set_title(f"{name}, {title}: " + ("f(x)" if title == "truth" else "(A - I) x"))
                ax.set_aspect("equal")
        out.append(
            ev.figure(
                "flows.png",
                fig,
                "the continuous-time flow of the truth and of the learned A (seed 0); the attractor's true drift "
                "is affine, f(x) = (a1 x1, a2 (1 - x1)), which no linear A represents",
            )
        )
    if "linear/truth/y_test" in keys:
        y = tr["linear/truth/y_test"]
        fig, ax = plt.subplots(figsize=(10, 3))
        ax.plot(y[:, 0], color="k", lw=1, label="held-out y (neuron 1)")
        for v, c in (("issm", "C0"), ("ssm", "C3")):
            if f"linear/{v}/y_pred" in keys:
                ax.plot(tr[f"linear/{v}/y_pred"][:, 0], color=c, lw=1, label=f"{_label(v)} do-rollout")
        ax.set_xlabel("bin")
        ax.legend(fontsize=7)
        out.append(
            ev.figure(
                "heldout_linear.png",
                fig,
                "linear system: a held-out trial under the new protocol and the predictions (seed 0)",
            )
        )
    hist = ev.csv("history.csv")
    if len(hist):
        fig, axes = plt.subplots(1, len(sets), figsize=(6 * len(sets), 3.5), squeeze=False)
        for ax, name in zip(axes[0], sets, strict=True):
            for (seed, variant), g in hist[hist.data == name].groupby(["seed", "variant"], sort=True):
                ax.plot(
                    g.step,
                    g.elbo,
                    lw=0.8,
                    color={"issm": "C0", "ssm": "C3"}.get(variant, "C2"),
                    label=_label(variant) if seed == 0 else None,
                )
            ax.set_yscale("symlog")
            ax.set_title(name)
            ax.set_xlabel("step")
            ax.set_ylabel("single-sample ELBO")
            ax.legend(fontsize=7)
        out.append(ev.figure("elbo.png", fig, "ELBO during training, every seed"))
    return out


def context(ev: Evaluated) -> dict:
    s = ev.json("summary.json")
    scores = ev.csv("scores.csv")
    eigs = ev.csv("eigenvalues.csv")
    sets = list(s["sets"])
    ablation = []
    for name in s["ablation_sets"]:
        a = s["sets"][name]
        for key in [k for k in a if k.startswith("xcorr_issm_gamma")]:
            v = key.removeprefix("xcorr_")
            ablation.append(
                {
                    "data": name,
                    "model": _label(v),
                    "x-corr": fmt(a[key], 3),
                    "y-corr": fmt(a[f"ycorr_{v}"], 3),
                    "eigenvalue distance": fmt(a[f"eig_{v}"], 3),
                    "vs iSSM (gamma = " + f"{s['gamma']:g}) x-corr": fmt(a["xcorr_issm"], 3),
                }
            )
    protocols = []
    for name in ("attractor", "attractor_official"):
        if name not in s["sets"]:
            continue
        a = s["sets"][name]
        mine = scores[(scores.data == name) & (scores.variant == "issm")]
        protocols.append(
            {
                "data": name,
                "protocol": "issue: 15 pulses of 3 bins, random latent"
                if name == "attractor"
                else "official, seeded: 30 pulses of 3-4 bins, alternating latents, jitter sd 0.5",
                "x2 outside [-pi, pi]": f"{100 * a['angle_beyond_pi']:.1f}%",
                "x-corr iSSM": fmt(a["xcorr_issm"], 3),
                "iSSM x-corr of x1, x2": ", ".join(
                    fmt(float(mine[c].mean()), 3) for c in ("xcorr_x1", "xcorr_x2") if c in mine
                ),
                "x-corr SSM": fmt(a["xcorr_ssm"], 3),
                "gap": fmt(a["xcorr_gap"], 3),
            }
        )
    return {
        "s": s,
        "protocol_table": table(protocols) if len(protocols) == 2 else "",
        "sets": s["sets"],
        "score_table": _score_table(scores),
        "eig_table": _eig_table(eigs),
        "figures": _figures(ev, sets),
        "ablation_table": table(ablation) if ablation else "",
        "simulated": s["source"] == "simulated",
    }


def metrics(ev: Evaluated) -> dict:
    return {"summary": ev.json("summary.json")["sets"]}
