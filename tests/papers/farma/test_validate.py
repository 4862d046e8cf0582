"""farma: the validate suites on the smoke profile's prepared files, each tampering failing by name, and the
``jsonl`` source (a user's prompt/chosen/rejected lines, written by the test) through prepare, validate, train
and evaluate: the reward claims' numbers are NaN (no known reward) while the call counts still hold; a malformed
line is refused naming it."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import yaml

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import prepared_main, rewrite_npz, set_item, validation_failure

SLUG = "farma"
main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def test_untouched_files_pass(work):
    assert {p.name for p in main(work).iterdir()} == {"data.npz", "language.npz", "meta.json"}
    meta = json.loads((main(work) / "meta.json").read_text())
    with np.load(main(work) / "data.npz") as z:
        assert z["y1"].shape == (meta["pair_rows"], 6) and z["corpus_y"].shape == (meta["corpus_rows"], 6)
        assert set(np.unique(z["label"])) <= {0, 1}
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


@pytest.mark.parametrize(
    "changes, names",
    [
        ({"y1": set_item((0, 0), 16)}, ("tokens", "max")),
        ({"corpus_y": set_item((3, 2), -1)}, ("tokens", "min")),
        ({"label": set_item(0, 2)}, ("labels", "label_max")),
        ({"r1": set_item(0, np.nan)}, ("labels", "reward_nonfinite")),
        ({"prompt": set_item(0, 8)}, ("prompts", "prompt_max")),
        ({"label": lambda a: 1 - a}, ("labels", "labels_agree")),  # every label flipped: not BT in R*
        ({"seed": set_item(0, 5)}, ("seeds", "pairs")),
    ],
)
def test_each_tampering_fails_naming_its_check(work, changes, names):
    rewrite_npz(main(work) / "data.npz", **changes)
    message = failure(work)
    assert all(n in message for n in names), message


def _jsonl_root(work, lines: list[str]):
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"].update(source="jsonl", jsonl="pairs.jsonl", tokens=12, prompts=3)
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    folder = work / "data" / SLUG / "input"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pairs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _pairs(n: int = 60) -> list[str]:
    good = "a clear and helpful answer".split()
    bad = "no idea sorry".split()
    return [
        json.dumps(
            {"prompt": f"question {i % 3}", "chosen": " ".join(good[: 2 + i % 4]), "rejected": " ".join(bad)}
        )
        for i in range(n)
    ]


def test_a_user_jsonl_runs_through_the_pipeline_without_a_reward(work):
    _jsonl_root(work, _pairs())
    run_stage(work, SLUG, "prepare")
    meta = json.loads((main(work) / "meta.json").read_text())
    assert meta["source"] == "jsonl" and len(meta["vocab"]) == 12 and meta["prompt_texts"][0] == "question 0"
    assert not (main(work) / "language.npz").exists()
    for stage in ("validate", "train", "evaluate"):
        run_stage(work, SLUG, stage)
    s = json.loads((work / "data" / SLUG / "evaluated" / "main" / "summary.json").read_text())
    assert s["call_violations"] == 0 and s["exact"] == {}
    assert all(
        str(s[k] if k == "trap_learned" else s["greedy"][k]) == "nan" for k in ("gain_min", "trap_learned")
    )


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", ":3: not JSON"),
        (json.dumps({"prompt": "q", "chosen": "a"}), ':3: expected an object with string "prompt"'),
    ],
)
def test_prepare_refuses_a_bad_jsonl_line_naming_it(work, line, message):
    lines = _pairs(5)
    lines[2] = line
    _jsonl_root(work, lines)
    with pytest.raises(UserError, match=message):
        run_stage(work, SLUG, "prepare")
    assert (
        not (main(work) / "meta.json").exists()
        or json.loads((main(work) / "meta.json").read_text())["source"] != "jsonl"
    )
