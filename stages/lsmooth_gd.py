"""Gradient descent under ell-generalized smoothness: the controlled CPU reproduction.

Tyurin. "Toward a Unified Theory of Gradient Descent under Generalized Smoothness". ICML 2025 (a theory paper;
no official code).

||hess f(x)|| <= ell(||grad f(x)||), ell positive and non-decreasing. Step:
x_{k+1} = x_k - gamma_k grad f(x_k), gamma_k = int_0^1 dv / ell(||grad f(x_k)|| (1 + v)), with the descent
f(x_{k+1}) <= f(x_k) - gamma_k ||grad f(x_k)||^2 / 2 and an iteration count that depends on ||grad f(x_0)||
only logarithmically ((L0, L1) case).

Stages: prepare (scikit-learn's digits for the training experiment) -> validate (GX) -> train (Lightning:
an MLP in the exploding-gradient regime, LSmoothGD against GD and clipped GD at the same budget) -> evaluate
(the analytic suite: cosh, quartic, x - log x with every step rule; closed form against quadrature) -> report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from icml25.params import Empty
from icml25.registry import STAGES, Claim, Paper
from icml25.runner import StageContext

CLAIMS = (
    Claim(
        "converges_cosh",
        "iterations of ell-GD to ||grad f|| <= 1e-8 on sum cosh (d = 10) from x0 = 30 * 1 (inf if it does not)",
        "Sec. 4 (the ell step converges; calibration: 144)",
        "<=",
        200.0,
    ),
    Claim(
        "descent_inequality",
        "steps of the analytic ell-GD runs that violate f(x_{k+1}) <= f(x_k) - gamma_k ||grad||^2 / 2",
        "Lemma 4.5 (descent of the ell step)",
        "==",
        0.0,
    ),
    Claim(
        "fixed_step_diverges",
        "GD with the fixed step 1/L0 = 1/ell(0) diverges on cosh from x0 = 30 * 1 (1 = diverged)",
        "Sec. 1 (L-smooth steps fail without global smoothness)",
        "==",
        1.0,
    ),
    Claim(
        "conservative_step_stalls",
        "||grad f|| after 10^4 steps of GD with the constant step 1/ell(||grad f(x0)||) on cosh from 30 * 1",
        "Sec. 1 (constant steps from ell(||grad f(x0)||) are slow)",
        ">",
        1e-8,
    ),
    Claim(
        "log_dependence",
        "R^2 of a linear fit of ell-GD's iterations against c (x0 = c * 1, i.e. log ||grad f(x0)||) on cosh",
        "Thm (no polynomial dependence on ||grad f(x0)||)",
        ">=",
        0.98,
    ),
    Claim(
        "closed_form_matches_quadrature",
        "largest relative difference between the closed forms and adaptive quadrature over random (ell, s)",
        "Sec. 4 (closed forms of the step)",
        "<=",
        1e-9,
    ),
)


@dataclass(frozen=True)
class Prepare:
    test_fraction: float = field(default=0.2, metadata={"gt": 0.0, "lt": 1.0})


@dataclass(frozen=True)
class Train:
    hidden: int = field(default=64, metadata={"ge": 1})
    init_scale: float = field(default=20.0, metadata={"gt": 0.0})
    L0: float = field(default=2.0, metadata={"gt": 0.0})
    L1: float = field(default=10.0, metadata={"gt": 0.0})
    steps: int = field(default=300, metadata={"ge": 1})
    optimizers: tuple[str, ...] = field(
        default=("lsmooth", "sgd", "clipped"), metadata={"choices": ("lsmooth", "sgd", "clipped")}
    )


@dataclass(frozen=True)
class Evaluate:
    dim: int = field(default=10, metadata={"ge": 1})
    cosh_starts: tuple[float, ...] = field(default=(10.0, 20.0, 30.0, 40.0, 80.0), metadata={"gt": 0.0})
    main_start: float = field(default=30.0, metadata={"gt": 0.0})
    quartic_x0: float = field(default=1e3, metadata={"gt": 0.0})
    xlogx_x0: float = field(default=1e-8, metadata={"gt": 0.0})
    max_iter: int = field(default=10_000, metadata={"ge": 1})
    tol: float = field(default=1e-8, metadata={"gt": 0.0})
    closed_form_samples: int = field(default=1000, metadata={"ge": 1})


PAPER = Paper(
    slug="lsmooth_gd",
    citation="Tyurin. *Toward a Unified Theory of Gradient Descent under Generalized Smoothness*. ICML 2025.",
    url="(theory paper, no official code)",
    schema={"prepare": Prepare, "validate": Empty, "train": Train, "evaluate": Evaluate, "report": Empty},
    claims=CLAIMS,
)


@PAPER.stage("prepare")
def prepare(ctx: StageContext) -> None:
    """scikit-learn's bundled digits, pixels scaled to [0, 1], a seeded random train/test split."""
    import numpy as np
    from sklearn.datasets import load_digits

    d = load_digits()
    rng = np.random.default_rng(ctx.seed)
    order = rng.permutation(len(d.target))
    n_test = int(round(ctx.params.prepare.test_fraction * len(order)))
    x = d.data / 16.0
    np.savez(
        ctx.out / "digits.npz",
        x_train=x[order[n_test:]],
        y_train=d.target[order[n_test:]],
        x_test=x[order[:n_test]],
        y_test=d.target[order[:n_test]],
    )
    ctx.log.info("digits: %d train, %d test", len(order) - n_test, n_test)


@PAPER.stage("validate")
def validate(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation

    d = np.load(ctx.paths.prepared / "digits.npz")
    summaries = []
    for split in ("train", "test"):
        x, y = d[f"x_{split}"], d[f"y_{split}"]
        frame = pd.DataFrame(
            {
                "pixel_min": x.min(1),
                "pixel_max": x.max(1),
                "label": y,
                "features": np.full(len(y), x.shape[1]),
            }
        )
        columns = [
            Column("pixel_min", min=0.0, max=1.0),
            Column("pixel_max", min=0.0, max=1.0),
            Column("label", values=tuple(range(10))),
            Column("features", values=(64,)),
        ]
        summaries.append(validate_frame(frame, split, columns, min_rows=10))
    write_validation(ctx.out, summaries)


@PAPER.stage("train")
def train(ctx: StageContext) -> None:
    """Each optimiser for ``steps`` full-batch steps from the same initialisation; the loss and gradient norm
    of every step, and the test accuracy at the end."""
    import numpy as np
    import pandas as pd

    from icml25.training import make_trainer
    from models.lsmooth_gd.lit import FullBatchGD, accuracy, full_batch

    tp = ctx.params.train
    d = np.load(ctx.paths.prepared / "digits.npz")
    rows, final = [], {}
    for opt in tp.optimizers:
        model = FullBatchGD(d["x_train"].shape[1], 10, tp.hidden, tp.init_scale, opt, tp.L0, tp.L1, ctx.seed)
        make_trainer(tp.steps, ctx.seed).fit(model, full_batch(d["x_train"], d["y_train"]))
        rows += [{"optimizer": opt, **h} for h in model.history]
        final[opt] = {
            "final_loss": model.history[-1]["loss"],
            "test_accuracy": accuracy(model.net, d["x_test"], d["y_test"]),
        }
        ctx.log.info(
            "%s: final loss %.4g, test accuracy %.3f",
            opt,
            final[opt]["final_loss"],
            final[opt]["test_accuracy"],
        )
    pd.DataFrame(rows).to_csv(ctx.out / "history.csv", index=False)
    (ctx.out / "final.json").write_text(json.dumps(final, indent=2) + "\n")


@PAPER.stage("evaluate")
def evaluate(ctx: StageContext) -> None:
    """The analytic suite (every function, start and step rule) and the closed forms against quadrature."""
    import math

    import numpy as np
    import pandas as pd

    from models.lsmooth_gd.ell import Ell, step_size
    from models.lsmooth_gd.gd import FUNCTIONS, RULES, run_gd

    ev = ctx.params.evaluate
    runs, traces = [], []
    cases = [("cosh", c, np.full(ev.dim, c)) for c in ev.cosh_starts]
    cases += [
        ("quartic", ev.quartic_x0, np.array([ev.quartic_x0])),
        ("xlogx", ev.xlogx_x0, np.array([ev.xlogx_x0])),
    ]
    for name, start, x0 in cases:
        for rule in RULES:
            if rule != "ell" and not (name != "cosh" or start == ev.main_start):
                continue  # comparators: every function, but only the main cosh start
            r = run_gd(FUNCTIONS[name], x0, rule, max_iter=ev.max_iter, tol=ev.tol)
            runs.append(
                {
                    "function": name,
                    "start": start,
                    "rule": rule,
                    "iterations": r.iterations,
                    "converged": r.converged,
                    "diverged": r.diverged,
                    "final_grad_norm": r.final_grad_norm if math.isfinite(r.final_grad_norm) else "inf",
                    "descent_violations": int(np.sum(~np.array(r.descent_ok, dtype=bool))),
                    "steps": len(r.gamma),
                }
            )
            if name == "cosh" and start == ev.main_start or rule == "ell":
                keep = np.unique(np.geomspace(1, len(r.grad_norm), 200).astype(int) - 1)
                traces += [
                    {"function": name, "start": start, "rule": rule, "k": int(k), "grad_norm": r.grad_norm[k]}
                    for k in keep
                ]
    pd.DataFrame(runs).to_csv(ctx.out / "runs.csv", index=False)
    pd.DataFrame(traces).to_csv(ctx.out / "traces.csv", index=False)

    rng = np.random.default_rng(ctx.seed)
    worst = {"affine": 0.0, "square": 0.0}
    for _ in range(ev.closed_form_samples):
        a, b = 10.0 ** rng.uniform(-3, 3, size=2)
        s = 10.0 ** rng.uniform(-6, 8)
        for kind, ell in (("affine", Ell.affine(a, b)), ("square", Ell.square(a, b))):
            closed, quad = step_size(ell, s), step_size(ell, s, "quad")
            worst[kind] = max(worst[kind], abs(closed - quad) / abs(quad))
    (ctx.out / "closed_form.json").write_text(
        json.dumps({"samples": ev.closed_form_samples, "max_rel_diff": worst}, indent=2) + "\n"
    )
    for f in ("history.csv", "final.json"):
        (ctx.out / f).write_text((ctx.paths.trained / f).read_text())
    ctx.log.info("%d analytic runs; closed form vs quadrature: %s", len(runs), worst)


@PAPER.stage("report", sections=STAGES)
def report(ctx: StageContext) -> None:
    from icml25.reporting import write_report

    write_report(ctx, PAPER, build_report(ctx))


def build_report(ctx: StageContext):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    from scipy.stats import linregress

    from icml25.reporting import Report, fmt, table

    ev, tp = ctx.params.evaluate, ctx.params.train
    out = ctx.paths.evaluated
    runs = pd.read_csv(out / "runs.csv")
    runs["final_grad_norm"] = runs.final_grad_norm.astype(float)
    traces = pd.read_csv(out / "traces.csv")
    closed = json.loads((out / "closed_form.json").read_text())
    history = pd.read_csv(out / "history.csv")
    final = json.loads((out / "final.json").read_text())

    def one(function: str, start: float, rule: str) -> pd.Series:
        return runs[(runs.function == function) & (runs.start == start) & (runs.rule == rule)].iloc[0]

    main = one("cosh", ev.main_start, "ell")
    fixed = one("cosh", ev.main_start, "1/ell(0)")
    cons = one("cosh", ev.main_start, "1/ell(s0)")
    ell_runs = runs[runs.rule == "ell"]
    cosh = ell_runs[ell_runs.function == "cosh"].sort_values("start")
    if cosh.converged.all() and len(cosh) > 2:
        fit = linregress(cosh.start, cosh.iterations)
        line = {"r2": float(fit.rvalue**2), "slope": float(fit.slope)}
    else:
        line = {"r2": 0.0, "slope": float("nan")}
    rep = Report()
    rep.values = {
        "converges_cosh": float(main.iterations) if main.converged else float("inf"),
        "descent_inequality": float(ell_runs.descent_violations.sum()),
        "fixed_step_diverges": float(bool(fixed.diverged)),
        "conservative_step_stalls": float(cons.final_grad_norm) if not cons.converged else 0.0,
        "log_dependence": line["r2"],
        "closed_form_matches_quadrature": max(closed["max_rel_diff"].values()),
    }
    rep.reasons["converges_cosh"] = (
        f"||grad f(x0)|| = {fmt(float(traces[(traces.rule == 'ell') & (traces.function == 'cosh') & (traces.start == ev.main_start)].grad_norm.iloc[0]), 3)}"
    )
    rep.reasons["descent_inequality"] = f"over {int(ell_runs.steps.sum())} steps of {len(ell_runs)} runs"
    rep.reasons["fixed_step_diverges"] = (
        f"f became +inf / NaN at iteration {int(fixed.iterations)}" if fixed.diverged else "did not diverge"
    )
    rep.reasons["conservative_step_stalls"] = f"after {int(cons.iterations)} steps"
    rep.reasons["log_dependence"] = (
        f"iterations {cosh.iterations.tolist()} at c = {cosh.start.tolist()}; {fmt(line['slope'], 3)} per unit of c"
    )
    rep.reasons["closed_form_matches_quadrature"] = (
        f"{closed['samples']} random (a, b, s) per family: "
        + ", ".join(f"{k} {fmt(v, 2)}" for k, v in closed["max_rel_diff"].items())
    )
    rep.metrics = {"runs": runs.to_dict(orient="records"), "closed_form": closed, "training": final}
    rep.claims_text = """
- Under ell-generalized smoothness (||hess f|| <= ell(||grad f||), ell non-decreasing), GD with
  gamma_k = int_0^1 dv / ell(||grad f(x_k)|| (1 + v)) decreases f by at least gamma_k ||grad f||^2 / 2 at every
  step and converges without a global smoothness constant; for (L0, L1)-smoothness the iteration count depends
  on ||grad f(x_0)|| only logarithmically, where constant steps of prior analyses use ell(||grad f(x_0)||).
- The rule has closed forms for constant, (L0, L1) and quadratic ell, and covers rho-growth ell by quadrature.
"""
    rows = []
    for r in runs.itertuples():
        rows.append(
            {
                "function": r.function,
                "x0": fmt(r.start, 3),
                "rule": r.rule,
                "iterations": r.iterations,
                "converged": "yes" if r.converged else ("diverged" if r.diverged else "no"),
                "final ||grad||": fmt(r.final_grad_norm, 3),
                "descent violations": r.descent_violations,
            }
        )
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    t = traces[(traces.function == "cosh") & (traces.start == ev.main_start)]
    for rule, part in t.groupby("rule", sort=False):
        axes[0].loglog(part.k + 1, part.grad_norm.replace([np.inf], np.nan), label=rule)
    axes[0].axhline(ev.tol, color="grey", ls=":", lw=1)
    axes[0].set_xlabel("iteration + 1")
    axes[0].set_ylabel("||grad f||")
    axes[0].set_title(f"sum cosh, d = {ev.dim}, x0 = {ev.main_start:g} * 1", fontsize=9)
    axes[0].legend(fontsize=7)
    for opt, part in history.groupby("optimizer", sort=False):
        axes[1].semilogy(part.step, part.loss.clip(upper=1e6), label=opt)
    axes[1].set_xlabel("full-batch step")
    axes[1].set_ylabel("training loss (clipped at 1e6)")
    axes[1].set_title(
        f"MLP on digits, output init x{tp.init_scale:g}, ell = {tp.L0:g} + {tp.L1:g} s", fontsize=9
    )
    axes[1].legend(fontsize=7)
    fig_md = rep.figure("curves.png", fig, "Gradient norm on cosh by step rule, and the training experiment")
    plt.close(fig)
    train_rows = [
        {"optimizer": k, "final loss": fmt(v["final_loss"], 4), "test accuracy": fmt(v["test_accuracy"], 3)}
        for k, v in final.items()
    ]
    fastest = runs[(runs.function == "cosh") & (runs.start == ev.main_start) & runs.converged].sort_values(
        "iterations"
    )
    rep.measured = (
        "The analytic suite (tolerance ||grad f|| <= "
        + fmt(ev.tol)
        + f", at most {ev.max_iter} steps):\n\n"
        + table(rows)
        + "\n"
        + "On cosh from the main start the converged rules rank: "
        + ", ".join(f"{r.rule} ({r.iterations})" for r in fastest.itertuples())
        + ". The paper's contribution is the rule and its rates, not a win on every function: where a "
        "comparator is faster it says so here.\n\n"
        + fig_md
        + "\n"
        + f"Training experiment (not gated): {tp.steps} full-batch steps from the same initialisation:\n\n"
        + table(train_rows)
    )
    rep.differences = f"""
- A theory paper without code or experiments to match: the analytic functions, their ell and the comparators
  follow the spec's calibration (cosh: 52/98/144/189/372 iterations from c = 10/20/30/40/80, which this run
  reproduces exactly if the table above shows them).
- Comparators: 1/ell(0) (GD for L-smooth functions), 1/ell(||grad f(x0)||) (Li et al. 2024's constant step),
  1/ell(||grad f||) (the (L0, L1)-GD step 1/(L0 + L1 s) of Gorbunov et al. / Vankov et al., for any ell),
  clipped GD min(1/ell(0), 1/(2 L1 s)) with L1 = ell(1) - ell(0), and normalised GD with step 0.1/s.
- The descent inequality is checked to rounding (a relative slack of 1e-12 |f(x_k)|).
- Training experiment: a small tanh MLP with squared loss on digits, output layer initialised x{tp.init_scale:g}
  (large early gradients), ell = {tp.L0:g} + {tp.L1:g} s chosen by hand; GD uses 1/L0 and clipped GD clips the
  gradient to norm L0/L1.
"""
    return rep
