"""GX suites on what prepare wrote: the arrays (kinds and ranks); tokens in [0, V) and prompts in [0, P) in the
corpus and the pairs; labels in {0, 1}; the same number of corpus rows and pairs for every seed; for the synthetic
language, rewards in [0, reward_max], labels that agree with R* on clearly separated pairs (|dR*| >= 0.5: the BT
labelling) and grammar rows that are distributions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext

SPEC = {
    "corpus_seed": ("integer", 1),
    "corpus_prompt": ("integer", 1),
    "corpus_y": ("integer", 2),
    "seed": ("integer", 1),
    "prompt": ("integer", 1),
    "y1": ("integer", 2),
    "y2": ("integer", 2),
    "r1": ("number", 1),
    "r2": ("number", 1),
    "label": ("integer", 1),
}


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from icml25.validation import (
        Column,
        failed_table,
        npz_arrays,
        ok_columns,
        validate_frame,
        write_validation,
    )

    meta = ctx.read_json(ctx.paths.prepared / "meta.json")
    V, P, T, seeds = int(meta["tokens"]), int(meta["prompts"]), int(meta["length"]), int(meta["seeds"])
    arrays, status = npz_arrays(ctx.paths.prepared / "data.npz", SPEC)
    summaries = [validate_frame(pd.DataFrame([status]), "data.npz", ok_columns(status), rows=1)]
    if len(arrays) < len(SPEC):
        summaries.append(failed_table("tokens", "data.npz lacks a usable array"))
        write_validation(ctx.out, summaries)
        return
    rows = []
    for name in ("corpus_y", "y1", "y2"):
        y = arrays[name]
        rows.append({"array": name, "length": y.shape[1], "min": int(y.min()), "max": int(y.max())})
    for name in ("corpus_prompt", "prompt"):
        p = arrays[name]
        rows.append({"array": name, "length": T, "min": int(p.min()), "max": int(p.max())})
    summaries.append(
        validate_frame(
            pd.DataFrame(rows),
            "tokens",
            [
                Column("array", kind="string"),
                Column("length", kind="integer", values=(T,)),
                Column("min", kind="integer", min=0),
                Column("max", kind="integer", max=V - 1),
            ],
            key="array",
        )
    )
    per_seed = pd.DataFrame(
        {
            "seed": np.arange(seeds),
            "corpus": np.bincount(arrays["corpus_seed"].clip(0, seeds), minlength=seeds + 1)[:seeds],
            "pairs": np.bincount(arrays["seed"].clip(0, seeds), minlength=seeds + 1)[:seeds],
        }
    )
    prompt_max = pd.DataFrame(
        [{"prompt_max": int(max(arrays["prompt"].max(), arrays["corpus_prompt"].max()))}]
    )
    summaries.append(
        validate_frame(
            per_seed,
            "seeds",
            [
                Column("seed", kind="integer", min=0),
                Column("corpus", kind="integer", values=(int(meta["corpus_rows"]) // seeds,)),
                Column("pairs", kind="integer", values=(int(meta["pair_rows"]) // seeds,)),
            ],
            key="seed",
        )
    )
    summaries.append(
        validate_frame(prompt_max, "prompts", [Column("prompt_max", kind="integer", max=P - 1)], rows=1)
    )
    label = arrays["label"]
    checks = {"label_min": int(label.min()), "label_max": int(label.max())}
    cols = [Column("label_min", kind="integer", min=0), Column("label_max", kind="integer", max=1)]
    if meta["source"] == "synthetic":
        r1, r2 = arrays["r1"], arrays["r2"]
        r = np.concatenate([r1, r2])
        clear = np.abs(r1 - r2) >= 0.5
        agree = float(((r1 > r2)[clear] == label[clear].astype(bool)).mean()) if clear.any() else np.nan
        lang = np.load(ctx.paths.prepared / "language.npz")
        sums = np.concatenate([lang["first"].sum(-1).ravel(), lang["trans"].sum(-1).ravel()])
        checks |= {
            "reward_nonfinite": int((~np.isfinite(r)).sum()),
            "reward_min": float(np.nanmin(r)),
            "reward_max": float(np.nanmax(r)),
            "clear_pairs": int(clear.sum()),
            "labels_agree": agree,
            "row_sum_error": float(np.abs(sums - 1).max()),
            "negative_probabilities": int((lang["trans"] < 0).sum() + (lang["first"] < 0).sum()),
        }
        cols += [
            Column("reward_nonfinite", kind="integer", values=(0,)),
            Column("reward_min", min=0.0),
            Column("reward_max", max=float(meta["reward_max"]) + 1e-9),
            Column("clear_pairs", kind="integer", min=1),
            Column("labels_agree", min=0.9),
            Column("row_sum_error", max=1e-9),
            Column("negative_probabilities", kind="integer", values=(0,)),
        ]
    summaries.append(validate_frame(pd.DataFrame([checks]), "labels", cols, rows=1))
    write_validation(ctx.out, summaries)
