"""Independence tests for language models: the controlled CPU reproduction.

Zhu, Ahmed, Kuditipudi, Liang. "Independence Tests for Language Models". ICML 2025.
https://arxiv.org/abs/2502.12292 · official code: https://github.com/ahmeda14960/model-tracing

H_0: theta_1 and theta_2 are independent (independent random initialisations; training data may be shared).

- PERMTEST (Alg. 1): p = (1 + #{t : phi(pi_t(theta_1), theta_2) more similar than phi(theta_1, theta_2)})/(T+1),
  pi_t ~ Unif(Pi), ties randomised; exact under H_0 (Thm 1). Here phi = phi_l2 and T = 99.
- phi_M (Eq. 2) = SPEARMAN(MATCH(M(theta_1), M(theta_2)), id), MATCH = LAP on cosine similarities (Alg. 2),
  SPEARMAN one-sided via the t law with h - 2 d.o.f. (Alg. 3), FISHER over blocks (Alg. 4):
  p = 1 - F_{chi^2_{2L}}(-2 sum_l log p_l). phi_U: M = up-projection weights; phi_H: M = hidden activations.
- phi_MATCH (Eq. 3) = SPEARMAN(MATCH(H_gate(theta_1), H_gate(theta_2)), MATCH(H_up(theta_1), H_up(theta_2))):
  robust to output-preserving permutations and scalings of hidden units.

Stages (DESIGN.md): prepare (scikit-learn's digits, stratified split) -> validate (GX suite) -> train (Lightning:
base, its fine-tune, 2 x n_pairs independent models, a permuted + rescaled copy of the fine-tune; checkpoints
in the Llama weight layout) -> evaluate (every test on every pair: the p-value table, and a phi_MATCH heatmap)
-> report (claims, tables, histogram against uniform, heatmap).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from icml25.params import Empty
from icml25.registry import STAGES, Claim, Paper
from icml25.runner import StageContext

CLAIMS = (
    Claim(
        "finetune_detected_u",
        "phi_U detects the fine-tune: log10 p(base, ft) < -10",
        "Table 1 (phi_U = eps)",
        "<",
        -10.0,
    ),
    Claim(
        "finetune_detected_match",
        "phi_MATCH detects the fine-tune: log10 p(base, ft) < -10",
        "Sec. 4.2 (phi_MATCH <= eps on dependent pairs)",
        "<",
        -10.0,
    ),
    Claim(
        "permuted_detected_match",
        "phi_MATCH detects the fine-tune after an output-preserving permutation + rescaling: log10 p < -10",
        "Sec. 4.2, App. G (robust to T1-T6)",
        "<",
        -10.0,
    ),
    Claim(
        "permtest_exact_floor",
        "PERMTEST-l2 on (base, ft) reaches its floor p = 1/(T+1): value = (T+1) p, the original's rank",
        "Table 1 (phi_l2 = 0.01 with T = 99)",
        "==",
        1.0,
    ),
    Claim(
        "independent_uniform_u",
        "phi_U p-values of independent pairs look uniform: KS p > 0.001",
        "Thm 2; Sec. 4.1",
        ">",
        0.001,
    ),
    Claim(
        "independent_uniform_match",
        "phi_MATCH p-values of independent pairs look uniform: KS p > 0.001",
        "Sec. 4.2 (~uniform on 141 independent pairs)",
        ">",
        0.001,
    ),
    Claim(
        "independent_min_u",
        "no independent pair is flagged by phi_U: log10 min p > -4",
        "Table 1 (independent rows)",
        ">",
        -4.0,
    ),
    Claim(
        "independent_min_match",
        "no independent pair is flagged by phi_MATCH: log10 min p > -4",
        "Sec. 4.2",
        ">",
        -4.0,
    ),
)


@dataclass(frozen=True)
class Prepare:
    test_fraction: float = field(default=0.25, metadata={"gt": 0.0, "lt": 1.0})


@dataclass(frozen=True)
class Train:
    d_model: int = field(default=32, metadata={"ge": 2})
    d_hidden: int = field(default=64, metadata={"ge": 3})
    n_blocks: int = field(default=2, metadata={"ge": 1})
    batch_size: int = field(default=64, metadata={"ge": 1})
    base_steps: int = field(default=400, metadata={"ge": 1})
    lr: float = field(default=0.01, metadata={"gt": 0.0})
    ft_steps: int = field(default=300, metadata={"ge": 1})
    ft_lr: float = field(default=0.05, metadata={"gt": 0.0})
    ft_classes: tuple[int, ...] = field(default=(0, 1, 2, 3, 4), metadata={"ge": 0, "le": 9})
    n_pairs: int = field(default=20, metadata={"ge": 1})
    scale_permuted: bool = True


@dataclass(frozen=True)
class Evaluate:
    permutations: int = field(default=99, metadata={"ge": 1})
    n_inputs: int = field(default=200, metadata={"ge": 3})
    match_metric: Literal["cosine", "sqeuclidean"] = "cosine"
    spearman_sides: Literal["one", "two"] = "one"
    heatmap_models: int = field(default=10, metadata={"ge": 2})


PAPER = Paper(
    slug="model_independence",
    citation="Zhu, Ahmed, Kuditipudi, Liang. *Independence Tests for Language Models*. ICML 2025.",
    url="https://github.com/ahmeda14960/model-tracing",
    schema={"prepare": Prepare, "validate": Empty, "train": Train, "evaluate": Evaluate, "report": Empty},
    claims=CLAIMS,
)

SPLITS = ("train", "test")


@PAPER.stage("prepare")
def prepare(ctx: StageContext) -> None:
    """scikit-learn's bundled 8x8 digits (1,797 images, pixels 0-16), a stratified train/test split."""
    import pandas as pd
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from models.model_independence.lit import PIXELS

    digits = load_digits()
    frame = pd.DataFrame(digits.data.astype("int64"), columns=PIXELS)
    frame["label"] = digits.target.astype("int64")
    train, test = train_test_split(
        frame, test_size=ctx.params.prepare.test_fraction, random_state=ctx.seed, stratify=frame["label"]
    )
    for name, part in zip(SPLITS, (train, test), strict=True):
        part.to_csv(ctx.out / f"{name}.csv", index=False)
    ctx.log.info("digits: %d train, %d test", len(train), len(test))


@PAPER.stage("validate")
def validate(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.validation import Column, validate_frame, write_validation
    from models.model_independence.lit import PIXEL_MAX, PIXELS

    columns = [Column(p, min=0, max=PIXEL_MAX) for p in PIXELS] + [Column("label", values=tuple(range(10)))]
    summaries = []
    for split in SPLITS:
        path = ctx.paths.prepared / f"{split}.csv"
        frame = pd.read_csv(path)
        summaries.append(validate_frame(frame, split, columns, min_rows=10))
    write_validation(ctx.out, summaries)


def _config(p: Train):
    from models.model_independence.glu import GLUConfig

    return GLUConfig(d_model=p.d_model, d_hidden=p.d_hidden, n_blocks=p.n_blocks)


def _fit(ctx: StageContext, model, steps: int, classes: tuple[int, ...] | None, seed: int) -> None:
    from icml25.training import make_trainer
    from models.model_independence.lit import DigitsData

    data = DigitsData(ctx.paths.prepared, ctx.params.train.batch_size, seed=seed, classes=classes)
    make_trainer(max_steps=steps, seed=seed).fit(model, datamodule=data)


@PAPER.stage("train")
def train(ctx: StageContext) -> None:
    """base (Adam), ft = base fine-tuned with SGD on a subset of classes, 2 n_pairs independent models trained
    like base from their own seeds, and ft_perm = ft under a random output-preserving permutation (+ scaling)."""
    from models.model_independence.checkpoints import save_checkpoint
    from models.model_independence.lit import GLULightning, accuracy, load_split
    from models.model_independence.permutations import output_preserving_transform

    p = ctx.params.train
    cfg = _config(p)
    base = GLULightning(cfg, [ctx.seed * 1000], optimizer="adam", lr=p.lr)
    _fit(ctx, base, p.base_steps, None, ctx.seed)
    ft = GLULightning(cfg, [ctx.seed * 1000], optimizer="sgd", lr=p.ft_lr)
    ft.net.load_member_weights([base.net.member(0)])
    _fit(ctx, ft, p.ft_steps, p.ft_classes, ctx.seed + 1)
    indep_seeds = [ctx.seed * 1000 + 1 + k for k in range(2 * p.n_pairs)]
    indep = GLULightning(cfg, indep_seeds, optimizer="adam", lr=p.lr)
    _fit(ctx, indep, p.base_steps, None, ctx.seed)

    models = {"base": base.net.member(0), "ft": ft.net.member(0)}
    models["ft_perm"] = output_preserving_transform(
        models["ft"], cfg.n_blocks, seed=ctx.seed + 2, scale=p.scale_permuted
    )
    for k in range(2 * p.n_pairs):
        models[f"indep_{k:02d}"] = indep.net.member(k)
    x, y = load_split(ctx.paths.prepared, "test")
    acc = {"base": accuracy(base.net, x, y)[0], "ft": accuracy(ft.net, x, y)[0]}
    acc.update({f"indep_{k:02d}": a for k, a in enumerate(accuracy(indep.net, x, y))})
    for name, weights in models.items():
        save_checkpoint(ctx.out / "checkpoints" / name, cfg.to_json(), weights)
    (ctx.out / "accuracy.json").write_text(json.dumps(acc, indent=2) + "\n")
    ctx.log.info(
        "test accuracy: base %.3f, ft %.3f, independent mean %.3f",
        acc["base"],
        acc["ft"],
        sum(v for k, v in acc.items() if k.startswith("indep")) / (2 * p.n_pairs),
    )


def _pairs(n_pairs: int) -> list[tuple[str, str, str]]:
    pairs = [("base", "ft", "dependent"), ("base", "ft_perm", "adversarial")]
    pairs += [(f"indep_{2 * i:02d}", f"indep_{2 * i + 1:02d}", "independent") for i in range(n_pairs)]
    return pairs


@PAPER.stage("evaluate")
def evaluate(ctx: StageContext) -> None:
    """Every statistic on every pair; phi_MATCH on all pairs of the first models for the heatmap. The models'
    shapes and the number of pairs come from the trained checkpoints themselves."""
    import itertools

    import pandas as pd
    import torch

    from models.model_independence import stats
    from models.model_independence.checkpoints import load_checkpoint
    from models.model_independence.glu import forward
    from models.model_independence.lit import load_split

    e = ctx.params.evaluate
    options = {"metric": e.match_metric, "sides": e.spearman_sides}
    folder = ctx.paths.trained / "checkpoints"
    ckpts = {p.name: load_checkpoint(p) for p in sorted(folder.iterdir())}
    weights = {n: c.weights for n, c in ckpts.items()}
    n_blocks = ckpts["base"].n_blocks
    names = list(ckpts)
    x_test, _ = load_split(ctx.paths.prepared, "test")
    x = x_test[: e.n_inputs]
    with torch.no_grad():
        acts = {n: forward(w, x, n_blocks, collect=True)[1] for n, w in weights.items()}

    rows = []
    for a, b, kind in _pairs(sum(n.startswith("indep_") for n in names) // 2):
        results = {
            "u": stats.phi_u(weights[a], weights[b], n_blocks, **options),
            "h": stats.phi_h(acts[a], acts[b], **options),
            "match": stats.phi_match(acts[a], acts[b], **options),
            "l2": stats.permtest_l2(
                weights[a], weights[b], "icml25-glu", n_blocks, T=e.permutations, seed=ctx.seed
            ),
        }
        for stat, r in results.items():
            row = {"a": a, "b": b, "kind": kind, "stat": stat, "log10p": r.log10p}
            row.update({f"block{i}": v for i, v in enumerate(r.per_block)})
            rows.append(row)
    table = pd.DataFrame(rows)
    table.to_csv(ctx.out / "pvalues.csv", index=False)

    heat_names = ["base", "ft", "ft_perm"] + [n for n in names if n.startswith("indep")][: e.heatmap_models]
    heat = [
        {"a": a, "b": b, "log10p": stats.phi_match(acts[a], acts[b], **options).log10p}
        for a, b in itertools.combinations(heat_names, 2)
    ]
    pd.DataFrame(heat).to_csv(ctx.out / "heatmap.csv", index=False)
    (ctx.out / "accuracy.json").write_text((ctx.paths.trained / "accuracy.json").read_text())
    ctx.log.info("%d pairs x 4 statistics, %d heatmap pairs", len(rows) // 4, len(heat))


@PAPER.stage("report", sections=STAGES)
def report(ctx: StageContext) -> None:
    from icml25.reporting import write_report

    write_report(ctx, PAPER, build_report(ctx))


STAT_NAMES = {"u": "phi_U", "h": "phi_H", "match": "phi_MATCH", "l2": "PERMTEST-l2"}


def build_report(ctx: StageContext):
    """Claims, tables and figures from data/model_independence/evaluated (nothing typed in)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    from scipy import stats as sps

    from icml25.reporting import Report, fmt, table

    ev, tr = ctx.params.evaluate, ctx.params.train
    pv = pd.read_csv(ctx.paths.evaluated / "pvalues.csv")
    heat = pd.read_csv(ctx.paths.evaluated / "heatmap.csv")
    acc = json.loads((ctx.paths.evaluated / "accuracy.json").read_text())

    def one(a: str, b: str, stat: str) -> float:
        row = pv[(pv.a == a) & (pv.b == b) & (pv.stat == stat)]
        return float(row.log10p.iloc[0])

    indep = pv[pv.kind == "independent"]
    ks = {
        s: float(sps.kstest(10.0 ** indep[indep.stat == s].log10p.to_numpy(), "uniform").pvalue)
        for s in STAT_NAMES
    }
    mins = {s: float(indep[indep.stat == s].log10p.min()) for s in STAT_NAMES}
    T = ev.permutations
    rank = float(round(10.0 ** one("base", "ft", "l2") * (T + 1)))
    rep = Report()
    rep.values = {
        "finetune_detected_u": one("base", "ft", "u"),
        "finetune_detected_match": one("base", "ft", "match"),
        "permuted_detected_match": one("base", "ft_perm", "match"),
        "permtest_exact_floor": rank,
        "independent_uniform_u": ks["u"],
        "independent_uniform_match": ks["match"],
        "independent_min_u": mins["u"],
        "independent_min_match": mins["match"],
    }
    fooled_u = one("base", "ft_perm", "u")
    rep.reasons["permtest_exact_floor"] = f"p = {fmt(rank / (T + 1))} with T = {T}"
    rep.metrics = {
        "log10p": {
            f"{kind}/{s}": float(pv[(pv.kind == kind) & (pv.stat == s)].log10p.min())
            for kind in ("dependent", "adversarial")
            for s in STAT_NAMES
        },
        "independent_ks_p": ks,
        "independent_min_log10p": mins,
        "test_accuracy": {
            "base": acc["base"],
            "ft": acc["ft"],
            "independent_mean": float(np.mean([v for k, v in acc.items() if k.startswith("indep")])),
        },
    }
    rep.claims_text = """
- Under H_0 (independent initialisations) PERMTEST gives exact p-values (Thm 1) and the matching statistics
  phi_U, phi_H give valid p-values (Thm 2); FISHER combines blocks (Thm 3).
- Power: every fine-tune of Llama-2-7B is detected, phi_U = phi_H = eps (2.2e-308 underflow) while
  PERMTEST-l2 sits at its floor 0.01 (Table 1).
- The constrained statistics are fooled by an output-preserving permutation of hidden units; the unconstrained
  phi_MATCH (gate vs up activation matchings) is not, and stays <= eps on dependent pairs while being ~uniform
  on 141 independent pairs (Sec. 4.2).
"""
    rows = []
    for a, b, kind in [
        ("base", "ft", "dependent"),
        ("base", "ft_perm", "adversarial (ft permuted + rescaled)"),
    ]:
        rows.append(
            {"pair": f"({a}, {b})", "kind": kind, **{STAT_NAMES[s]: one(a, b, s) for s in STAT_NAMES}}
        )
    rows.append(
        {
            "pair": f"{len(indep) // len(STAT_NAMES)} independent pairs: min",
            "kind": "independent",
            **{STAT_NAMES[s]: mins[s] for s in STAT_NAMES},
        }
    )
    rows.append(
        {
            "pair": "independent pairs: KS p vs uniform (plain p)",
            "kind": "independent",
            **{STAT_NAMES[s]: ks[s] for s in STAT_NAMES},
        }
    )

    fig, axes = plt.subplots(1, 4, figsize=(13, 3), sharey=True)
    for ax, s in zip(axes, STAT_NAMES, strict=True):
        p = np.sort(10.0 ** indep[indep.stat == s].log10p.to_numpy())
        ax.hist(p, bins=10, range=(0, 1), density=True, color="#4c72b0", alpha=0.8, label="independent pairs")
        ax.axhline(1.0, color="k", ls="--", lw=1, label="Uniform(0, 1)")
        ax.set_title(f"{STAT_NAMES[s]} (KS p = {fmt(ks[s], 2)})", fontsize=9)
        ax.set_xlabel("p-value")
    axes[0].set_ylabel("density")
    axes[0].legend(fontsize=7)
    hist_md = rep.figure(
        "pvalue_histogram.png", fig, "p-values of the independent pairs against Uniform(0, 1)"
    )
    plt.close(fig)

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
    heat_md = rep.figure("match_heatmap.png", fig, "phi_MATCH log10 p-values between models (diagonal: 0)")
    plt.close(fig)

    rep.measured = (
        f"Models: residual GLU classifiers on scikit-learn's digits (d = {tr.d_model}, h = {tr.d_hidden}, "
        f"{tr.n_blocks} blocks). Test accuracy: base {fmt(acc['base'])}, fine-tune {fmt(acc['ft'])}, "
        f"independent mean {fmt(rep.metrics['test_accuracy']['independent_mean'])}. "
        f"PERMTEST uses T = {T}; phi_H and phi_MATCH use {ev.n_inputs} held-out digits as inputs.\n\n"
        "log10 p-values (Fisher over blocks for the matching statistics):\n\n"
        + table(rows)
        + "\n"
        + f"The paper predicts the constrained phi_U is fooled by the output-preserving permutation: we measure "
        f"log10 p(base, ft_perm) = {fmt(fooled_u)} under phi_U "
        f"({'fooled, as predicted' if fooled_u > -4 else 'not fooled, unlike the prediction'}; not gated).\n\n"
        + hist_md
        + "\n"
        + heat_md
    )
    rep.differences = f"""
- Scale: tiny residual GLU classifiers on 8x8 digits instead of 7B-70B Llama models; the fine-tune is SGD on
  digits {list(tr.ft_classes)} (a distribution shift), the independent models share the data and its order but not
  the initialisation (exactly H_0 of the paper). {2 * tr.n_pairs} independent models form {tr.n_pairs} disjoint pairs.
- phi_H and phi_MATCH take activations on held-out digits (the paper: random tokens for phi_H, WikiText-103 for
  phi_MATCH); phi_H matches the up-projection outputs U r, as the official code does.
- Paper vs official code, switches in params.yaml (`papers.model_independence.evaluate`): MATCH runs on
  `{ev.match_metric}` {"(the paper; the code uses squared Euclidean distances in phi_MATCH)" if ev.match_metric == "cosine" else "(the official code; the paper uses cosine)"};
  the Spearman p-value is `{ev.spearman_sides}`-sided {"(Alg. 3; the code calls the two-sided scipy.stats.spearmanr)" if ev.spearman_sides == "one" else "(the official code; Alg. 3 is one-sided)"}.
- phi_l2 is the sum over tensors of the l2 distance (the paper); the code averages per parameter (monotone, same test).
- phi_MATCH matches up-projection activations on |cos| (gate activations on signed cosine): the adversarial copy
  also flips the sign of some hidden units (c_i < 0 on U's row and 1/c_i on D's column is output-preserving),
  which signed cosine would mistake for a different unit. With positive scalings both choices give the same
  matching. Eq. 3 compares the matched indices themselves, so relabelling the second model's units changes the
  statistic's value on independent pairs (not its law); on dependent pairs it is invariant.
- p-values are reported as log10; the t approximation of Spearman's law is floored at its exact minimum 1/h!
  (so a perfect matching gives log10 p = -log10(h!) instead of the paper's underflow eps = 2.2e-308).
"""
    return rep
