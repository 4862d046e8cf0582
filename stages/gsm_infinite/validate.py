"""GX: the problem files (exactly the sets meta.json records, every line a JSON object, as many problems as
prepare wrote) and one row per problem: exactly the fields the generator writes (:data:`FIELDS`), by name, with
their types (subset, mode, id text; op, seed, noise statements, context integers), subset, mode and op in range,
answer of the subset's type, prompt and solution present, unique id, context length recorded for noisy sets,
the file named after its subset and context."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from icml25.stage import StageContext

#: The fields of every problem models/gsm_infinite/generate.py writes; realistic problems add :data:`REALISTIC`.
FIELDS = (
    "id",
    "subset",
    "mode",
    "op",
    "seed",
    "noise_statements",
    "prompt",
    "answer",
    "solution",
    "graph",
    "context",
    "context_tokens",
)
REALISTIC = ("template",)
SUBSETS = ("symbolic", "medium", "hard")


def _read(path: Path) -> tuple[list[dict], str]:
    """The records of a JSONL file and "ok", or the records before the first bad line and what is wrong."""
    import json

    if not path.is_file():
        return [], "no such file"
    records = []
    for no, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            return records, f"line {no}: not JSON ({exc.msg})"
        if not isinstance(rec, dict):
            return records, f"line {no}: not a JSON object"
        records.append(rec)
    return records, "ok"


def _fields(p: dict) -> str:
    """The missing and unexpected fields of a problem (empty when it has exactly the generator's fields)."""
    expected = set(FIELDS) | (set(REALISTIC) if p.get("subset") in SUBSETS[1:] else set())
    missing, unexpected = sorted(expected - set(p)), sorted(set(p) - expected)
    return "; ".join(
        f"{word}: {', '.join(names)}"
        for word, names in (("missing", missing), ("unexpected", unexpected))
        if names
    )


def _answer_ok(p: dict) -> bool:
    import re

    a = p.get("answer")
    if p.get("subset") == "symbolic":
        return (
            isinstance(a, list)
            and len(a) > 0
            and all(isinstance(v, str) and re.fullmatch(r"V\d{6}", v) for v in a)
        )
    return isinstance(a, int) and not isinstance(a, bool)


def run(ctx: StageContext) -> None:
    import pandas as pd

    from icml25.validation import Column, ok_columns, read_meta, validate_frame, write_validation

    found = {p.name for p in ctx.paths.prepared.glob("*.jsonl")}
    # the sets and their sizes that prepare records (a missing meta.json fails: prepare always writes one)
    sets: dict[str, int | None] = read_meta(ctx.paths.prepared / "meta.json")["sets"]
    files, rows, ids, expected_rows = [], [], set(), 0
    for name in sorted(set(sets) | found):
        problems, status = _read(ctx.paths.prepared / name)
        n = sets.get(name)
        count = (
            "ok"
            if (n is None and name in sets) or len(problems) == n
            else f"{len(problems)} problems, expected {n or 0}"
        )
        files.append({"file": name, "read": status, "count": count})
        if status != "ok":
            continue
        expected_rows += len(problems) if n is None else n
        for p in problems:
            key = p.get("id")
            context = p.get("context")
            rows.append(
                {
                    "file": name,
                    "id": key,
                    "fields": _fields(p),
                    "subset": p.get("subset"),
                    "mode": p.get("mode") or "none",
                    "op": p.get("op"),
                    "seed": p.get("seed"),
                    "noise_statements": p.get("noise_statements"),
                    "context": context,
                    "answer_ok": int(_answer_ok(p)),
                    "texts_ok": int(
                        all(isinstance(p.get(k), str) and p.get(k) for k in ("prompt", "solution"))
                    ),
                    "graph_ok": int(isinstance(p.get("graph"), dict)),
                    "unique_id": int(isinstance(key, str) and key not in ids),
                    "context_ok": int(context == 0 or (p.get("context_tokens") or 0) > 0),
                    "file_ok": int(name == f"{p.get('subset')}_c{context}.jsonl"),
                }
            )
            if isinstance(key, str):
                ids.add(key)
    summaries = [
        validate_frame(
            pd.DataFrame(files),
            "files",
            [Column("file", kind="string", values=tuple(sets)), *ok_columns(["read", "count"])],
            rows=len(sets),
            key="file",
        )
    ]
    columns = [
        Column("file", kind="string", values=tuple(sets)),
        Column("id", kind="string"),
        Column("fields", kind="string", values=("",)),
        Column("subset", kind="string", values=SUBSETS),
        Column("mode", kind="string", values=("none", "forward", "reverse")),
        Column("op", kind="integer", min=1, max=1000),
        Column("seed", kind="integer", min=0),
        Column("noise_statements", kind="integer", min=0),
        Column("context", kind="integer", min=0),
        Column("answer_ok", kind="integer", values=(1,)),
        Column("texts_ok", kind="integer", values=(1,)),
        Column("graph_ok", kind="integer", values=(1,)),
        Column("unique_id", kind="integer", values=(1,)),
        Column("context_ok", kind="integer", values=(1,)),
        Column("file_ok", kind="integer", values=(1,)),
    ]
    frame = pd.DataFrame(rows, columns=[c.name for c in columns])
    summaries.append(validate_frame(frame, "problems", columns, rows=expected_rows))
    write_validation(ctx.out, summaries)
