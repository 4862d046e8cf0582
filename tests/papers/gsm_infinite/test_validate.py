"""gsm_infinite's validate stage on tampered copies of the smoke profile's problem files: a field deleted from a
set's problems, text where op is a number, a line that is not JSON, a lost problem: each a clean
ValidationFailed naming the field or file; the untouched files pass."""

from __future__ import annotations

import functools
import json

from icml25.runner import run_stage
from tests.helpers import prepared_main, validation_failure

SLUG = "gsm_infinite"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_the_prepared_files_pass(work):
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def rewrite(work, name: str, change) -> None:
    path = main(work) / name
    problems = [json.loads(line) for line in path.read_text().splitlines()]
    problems = change(problems)
    path.write_text("".join(json.dumps(p) + "\n" for p in problems))


def test_a_deleted_field_fails_naming_it(work):
    def drop_op(problems):
        for p in problems:
            del p["op"]
        return problems

    rewrite(work, "medium_c0.jsonl", drop_op)
    message = failure(work)
    assert "problems.fields (expect_column_values_to_be_in_set" in message and "e.g. 'missing: op'" in message
    assert "problems.op (expected integer, found float, e.g. nan)" in message


def test_text_in_a_numeric_field_fails_naming_it(work):
    def text_op(problems):
        problems[1]["op"] = "six"
        return problems

    rewrite(work, "symbolic_c0.jsonl", text_op)
    assert "problems.op (expected integer, found mixed, e.g. 'six')" in failure(work)


def test_a_broken_line_or_a_lost_problem_fails_naming_the_file(work):
    path = main(work) / "hard_c0.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    rewrite(work, "symbolic_c0.jsonl", lambda problems: problems[1:])
    message = failure(work)
    assert (
        "files.read (expect_column_values_to_be_in_set, 1 bad rows (file=hard_c0.jsonl), e.g. 'line "
        in message
    )
    assert "files.count (expect_column_values_to_be_in_set, 1 bad rows (file=symbolic_c0.jsonl)" in message
    assert "files.count" in message
