"""Evaluate: on the mixture (exact denoiser, chains from the exact marginal at t_0) for every K, and on the digits
network (chains from N(0, t_0 I)) at its K, the sequential sampler and the ASD arms (L in ``windows`` and L = K;
``fresh`` and ``draft_only`` at L = K), each from its own stream; energy-distance permutation tests of every L = K
arm against the sequential sampler. Writes ``table.csv`` (calls, evaluations, rounds, speed-up, acceptance per
arm), ``tests.csv`` (energy distance and p), ``acceptance.csv`` (per step, ASD at L = K), ``samples.npz`` (for the
figures) and ``summary.json`` (the claims' numbers, models/autospeculative/experiment.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.tables import read_csv
    from models.autospeculative.denoisers import Mixture
    from models.autospeculative.experiment import Model, claims, row, run_arm, test_row
    from models.autospeculative.network import NetDenoiser, load

    ep = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    mix_rows = read_csv(ctx.paths.prepared / "mixture.csv")
    mix = Mixture(
        mix_rows[["mean_x", "mean_y"]].to_numpy(), float(mix_rows.sigma.iloc[0]), mix_rows.weight.to_numpy()
    )
    grids = {
        int(K): g.sort_values("k").t.to_numpy()
        for K, g in read_csv(ctx.paths.prepared / "grids.csv").groupby("K")
    }
    net = load(ctx.paths.trained / "x0net.safetensors")
    dim = int(meta["dim"])
    models = {
        "gmm": (Model("gmm", mix, mix.start), meta["Ks"]),
        "digits": (
            Model("digits", NetDenoiser(net), lambda n, t0, rng: np.sqrt(t0) * rng.standard_normal((n, dim))),
            [meta["digits_K"]],
        ),
    }
    seed = ctx.seed_for("arms")
    rows, tests, accept, samples = [], [], [], {}
    start = time.perf_counter()
    for name, (model, Ks) in models.items():
        for K in Ks:
            t = grids[K]
            arms = [("sequential", K)] + [("asd", L) for L in sorted({*ep.windows, K}) if L <= K]
            arms += [("fresh", K)] if ep.fresh else []
            arms += [("draft_only", K)]
            out = {}
            for variant, L in arms:
                res = run_arm(model, t, variant, L, ep.n, seed)
                rows.append(row(name, K, L, variant, res))
                if L == K:
                    out[variant] = res
                ctx.log.info(
                    "%s K = %d: %s L = %d, %.1f calls per chain (%.0f s)",
                    name,
                    K,
                    variant,
                    L,
                    rows[-1]["calls"],
                    time.perf_counter() - start,
                )
            ref = out["sequential"].samples
            for variant in ("asd", "fresh", "draft_only"):
                if variant in out:
                    tests.append(test_row(name, K, variant, out[variant].samples, ref, ep.permutations, seed))
            res = out["asd"]
            accept.append(
                pd.DataFrame(
                    {
                        "model": name,
                        "K": K,
                        "k": np.arange(K),
                        "t": t[:-1],
                        "judged": res.judged,
                        "accepted": res.accepted,
                    }
                )
            )
            if name == "digits" or K == max(meta["Ks"]):
                for variant in ("sequential", "asd", "draft_only"):
                    samples[f"{name}_{variant}"] = out[variant].samples[: 64 if name == "digits" else None]
    table, tests = pd.DataFrame(rows), pd.DataFrame(tests)
    table.to_csv(ctx.out / "table.csv", index=False)
    tests.to_csv(ctx.out / "tests.csv", index=False)
    pd.concat(accept, ignore_index=True).to_csv(ctx.out / "acceptance.csv", index=False)
    np.savez(ctx.out / "samples.npz", **samples)
    summary = claims(table, tests, max(meta["Ks"]))
    summary |= {
        "n": ep.n,
        "permutations": ep.permutations,
        "Ks": meta["Ks"],
        "digits_K": meta["digits_K"],
        "mode_distance": {
            k: float(mix.modes_distance(v).mean()) for k, v in samples.items() if k.startswith("gmm")
        },
    }
    ctx.write_json("summary.json", summary)
