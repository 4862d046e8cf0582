"""GX: one row per problem (subset, op range, answer type, prompt and solution present, unique id, context
length recorded for noisy sets, the file named after its subset and context)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import re

    import pandas as pd

    from icml25.io import read_jsonl
    from icml25.validation import Column, validate_frame, write_validation

    rows, ids = [], set()
    for path in sorted(ctx.paths.prepared.glob("*.jsonl")):
        for p in read_jsonl(path):
            symbolic = p["subset"] == "symbolic"
            answer_ok = (
                isinstance(p["answer"], list) and all(re.fullmatch(r"V\d{6}", a) for a in p["answer"])
                if symbolic
                else isinstance(p["answer"], int) and not isinstance(p["answer"], bool)
            )
            rows.append(
                {
                    "subset": p["subset"],
                    "mode": p.get("mode") or "none",
                    "op": p["op"],
                    "answer_ok": int(bool(answer_ok) and (not symbolic or len(p["answer"]) > 0)),
                    "texts_ok": int(bool(p["prompt"]) and bool(p["solution"])),
                    "unique_id": int(p["id"] not in ids),
                    "context_ok": int(p["context"] == 0 or (p.get("context_tokens") or 0) > 0),
                    "file_ok": int(path.name == f"{p['subset']}_c{p['context']}.jsonl"),
                }
            )
            ids.add(p["id"])
    frame = pd.DataFrame(rows)
    columns = [
        Column("subset", values=("symbolic", "medium", "hard")),
        Column("mode", values=("none", "forward", "reverse")),
        Column("op", min=1, max=1000),
        Column("answer_ok", values=(1,)),
        Column("texts_ok", values=(1,)),
        Column("unique_id", values=(1,)),
        Column("context_ok", values=(1,)),
        Column("file_ok", values=(1,)),
    ]
    write_validation(ctx.out, [validate_frame(frame, "problems", columns, min_rows=1)])
