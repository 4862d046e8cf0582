"""Prepare: the synthetic language (``language.npz``: the grammar, the reward's values and tokens, the trap) and,
per seed, ``corpus`` samples of pi* for the base LM and ``pairs`` BT-labelled preference pairs
(``data.npz``: corpus_seed/corpus_prompt/corpus_y and seed/prompt/y1/y2/r1/r2/label), and ``more_pairs`` pairs
for seed 0's data ablation (``more_pairs.npz``); ``meta.json`` describes them. With ``source: jsonl`` the pairs are a user's prompt/chosen/rejected lines on a word vocabulary (every seed
the same pairs, the LM corpus their responses; no known reward, no language). Nothing is downloaded."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np

    from icml25.errors import UserError
    from models.farma.data import corpus, pairs, read_pairs
    from models.farma.language import make_language

    pp = ctx.params.prepare
    meta = {"source": pp.source, "tokens": pp.tokens, "length": pp.length, "prompts": pp.prompts,
            "seeds": pp.seeds, "beta": pp.beta}  # fmt: skip
    cs, cp, cy, frames = [], [], [], []
    if pp.source == "synthetic":
        try:
            lang = make_language(
                ctx.rng("language"),
                tokens=pp.tokens,
                length=pp.length,
                prompts=pp.prompts,
                alpha=pp.alpha,
                value_scale=pp.value_scale,
                bonus=pp.bonus,
                trap_x=pp.trap_x,
                trap_top=pp.trap_top,
            )
        except ValueError as exc:
            raise UserError(f"papers.farma.prepare: {exc}") from None
        np.savez(ctx.out / "language.npz", **lang.arrays())
        for k in range(pp.seeds):
            c = corpus(lang, pp.corpus, ctx.rng("corpus", k))
            cs.append(np.full(pp.corpus, k)), cp.append(c["prompt"]), cy.append(c["y"])
            frames.append(
                pairs(lang, pp.pairs, pp.beta, ctx.rng("pairs", k)) | {"seed": np.full(pp.pairs, k)}
            )
        if pp.more_pairs:  # seed 0's data ablation: the same seed's LM, more pairs for one more FaRMA
            more = pairs(lang, pp.more_pairs, pp.beta, ctx.rng("more_pairs"))
            np.savez(ctx.out / "more_pairs.npz", **more)
        meta |= {"more_pairs": pp.more_pairs if pp.source == "synthetic" else 0}
        meta |= {"trap": lang.trap, "A": lang.A, "B": lang.B, "X": lang.X, "bonus_tokens": [lang.a, lang.c],
                 "reward_max": float(lang.values.max() * pp.length + lang.bonus)}  # fmt: skip
    else:
        if not pp.jsonl:
            raise UserError("papers.farma.prepare.jsonl: empty; name a file under data/farma/input/")
        data, described = read_pairs(ctx.input_path("jsonl", pp.jsonl), pp.tokens, pp.length, pp.prompts)
        n = len(data["label"])
        for k in range(pp.seeds):
            cs.append(np.full(2 * n, k))
            cp.append(np.concatenate([data["prompt"], data["prompt"]]))
            cy.append(np.concatenate([data["y1"], data["y2"]]))
            frames.append(data | {"seed": np.full(n, k)})
        meta |= {"vocab": described["vocab"], "prompt_texts": described["prompts"]}
    both = {key: np.concatenate([f[key] for f in frames]) for key in frames[0]}
    np.savez(
        ctx.out / "data.npz",
        corpus_seed=np.concatenate(cs),
        corpus_prompt=np.concatenate(cp),
        corpus_y=np.concatenate(cy),
        **both,
    )
    meta |= {"corpus_rows": int(sum(len(s) for s in cs)), "pair_rows": int(len(both["label"]))}
    ctx.write_json("meta.json", meta)
    ctx.log.info(
        "%s: %d seed(s) of %d base-LM samples and %d pairs (T = %d, V = %d, %d prompts)",
        pp.source,
        pp.seeds,
        len(cs[0]),
        len(frames[0]["label"]),
        pp.length,
        pp.tokens,
        pp.prompts,
    )
