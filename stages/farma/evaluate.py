"""Evaluate: per seed, ``prompts`` prompts drawn uniformly, decoded (T tokens, greedy and sampled) by pi_ref and
every guided decoder (the trained reward models, and the exact beta V_max and beta V_ref of the language as
oracles), over the LM's top-k (``candidates: lm``) and, for FaRMA and V_max, also over the top-k of the guided
logits (the official code's rule); R* of each decode, its LM and RM calls and the time. On the trap prompt: each
decoder's greedy decode, FaRMA's scores along the trap path, and the exact scorers' choices (Theorems 1-3).
Writes ``decodes.csv`` (one row per decode), ``decoders.csv`` (per seed, decoder, mode and candidate rule),
``trap.csv``, ``trap_path.csv`` and ``summary.json`` (the claims' numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

LEARNED = ("farma", "args", "pargs", "cd", "farma_grad", "farma_bt", "farma_more")
EXACT = ("exact_max", "exact_ref")


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from models.common.threads import one_thread
    from models.farma.experiment import (
        claim_numbers,
        exact_trap,
        load_net,
        run_decoder,
        scorer,
        summarise,
        trap_path,
    )
    from models.farma.language import Language

    ep = ctx.params.evaluate
    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    seeds, T, P = int(meta["seeds"]), int(meta["length"]), int(meta["prompts"])
    synthetic = meta["source"] == "synthetic"
    lang = Language.from_arrays(np.load(ctx.paths.prepared / "language.npz")) if synthetic else None
    beta = float(meta["beta"])
    models = ctx.paths.trained / "models"
    other = "guided" if ep.candidates == "lm" else "lm"
    rows, trap_rows, paths = [], [], []
    with one_thread():
        for k in range(seeds):
            lm = load_net(models / f"lm_s{k}.safetensors")
            # the models trained for this seed (no CD on a user's pairs, farma_more on seed 0 only)
            mine = [m for m in LEARNED if (models / f"{m}_s{k}.safetensors").exists()]
            nets = {m: load_net(models / f"{m}_s{k}.safetensors") for m in mine}
            prompts = ctx.rng("prompts", k).integers(0, P, ep.prompts)
            plan = [("pi_ref", ep.candidates)] + [(m, ep.candidates) for m in mine]
            if synthetic:
                plan += [(m, ep.candidates) for m in EXACT] + [("farma", other), ("exact_max", other)]
            for name, cand in plan:
                for mode in ("greedy", "sampled"):
                    sc = None if name == "pi_ref" else scorer(name, nets.get(name), lang, beta)
                    seed = ctx.seed_for("decode", k, mode)  # the same draws for every decoder
                    d = run_decoder(lm, sc, lang, prompts, w=ep.w, top_k=ep.top_k, greedy=mode == "greedy",
                                    seed=seed, candidates=cand, length=T)  # fmt: skip
                    rows.append((k, name, mode, cand, prompts, *d))
                    if synthetic and cand == ep.candidates and mode == "greedy":
                        sc = None if name == "pi_ref" else scorer(name, nets.get(name), lang, beta)
                        t = run_decoder(lm, sc, lang, np.array([lang.trap]), w=ep.w, top_k=ep.top_k, greedy=True,
                                        seed=0, candidates=cand)  # fmt: skip
                        trap_rows.append({"seed": k, "decoder": name, "tokens": " ".join(map(str, t[0].tokens[0])),
                                          "first": int(t[0].tokens[0, 0]), "second": int(t[0].tokens[0, 1]),
                                          "reward": float(t[1][0])})  # fmt: skip
            if synthetic:
                for m in ("farma", "farma_grad", "farma_bt", "farma_more"):
                    if m not in nets:
                        continue
                    paths.append({"seed": k, "model": m, **trap_path(lang, lm, nets[m])})
            ctx.log.info("seed %d: %d decoders x 2 modes on %d prompts", k, len(plan), ep.prompts)
    decodes = pd.concat(
        [
            pd.DataFrame(
                {
                    "seed": k,
                    "decoder": n,
                    "mode": mode,
                    "candidates": c,
                    "prompt": p,
                    "reward": r,
                    "tokens": T,
                    "lm_calls": d.lm_calls,
                    "rm_calls": d.rm_calls,
                }
            )
            for k, n, mode, c, p, d, r in rows
        ],
        ignore_index=True,
    )
    timing = pd.DataFrame(
        [
            {
                "seed": k,
                "decoder": n,
                "mode": mode,
                "candidates": c,
                "seconds": d.seconds,
                "rm_seconds": d.rm_seconds,
            }
            for k, n, mode, c, _, d, _ in rows
        ]
    )
    decodes.to_csv(ctx.out / "decodes.csv", index=False)
    ctx.carry(ctx.paths.trained, "fits.csv")
    table = summarise(decodes, timing)
    table.to_csv(ctx.out / "decoders.csv", index=False)
    trap = pd.DataFrame(trap_rows)
    trap.to_csv(ctx.out / "trap.csv", index=False)
    pd.DataFrame(paths).to_csv(ctx.out / "trap_path.csv", index=False)
    exact = exact_trap(lang, beta) if synthetic else {}
    summary = claim_numbers(decodes, trap, ep.top_k, ep.candidates) | {
        "exact": exact,
        "source": meta["source"],
        "seeds": seeds,
        "prompts": ep.prompts,
        "top_k": ep.top_k,
        "w": ep.w,
        "candidates": ep.candidates,
        "length": T,
        "pairs": int(meta["pair_rows"]) // seeds,
        "more_pairs": int(meta.get("more_pairs", 0)),
    }
    ctx.write_json("summary.json", summary)
    for r in (
        table[(table["mode"] == "greedy") & (table.candidates == ep.candidates)]
        .groupby("decoder")
        .reward.mean()
        .items()
    ):
        ctx.log.info("greedy %s: mean R* %.3f", *r)
