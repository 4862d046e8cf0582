"""ferret's validate stage on tampered copies of the smoke profile's prepared files (data.npz, partition.csv,
meta.json), and prepare's csv and dolly sources.

The untouched digits pass (1,400 training rows over 20 clients, each with >= 10). A client id out of range fails
naming partition.owner_out_of_range (and partition.owned: the counts no longer sum to the rows), a client left with
9 rows clients.rows (naming the client), a NaN feature features.nonfinite, a pixel of 2.0 features.max, a label
equal to the number of classes labels.label_max (each cleanly: ValidationFailed, no validation.json). The dolly
source: a Dolly-15K-style JSONL fixture (300 records, 4 categories whose words differ) becomes hashed features
with the category as label, partitioned by Dirichlet(0.5) over 5 clients of >= 10 rows, and validates; a nearest
centroid on the features recovers the category. A malformed line, a missing field, a missing file, an empty name
are one UserError naming it. The csv source: a user's table is standardised, partitioned and validates.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from icml25.runner import run_stage
from tests.helpers import failure_parts, prepared_main, rewrite_npz, set_item, validation_failure

SLUG = "ferret"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def _meta(work) -> dict:
    return json.loads((main(work) / "meta.json").read_text())


def _arrays(work) -> dict[str, np.ndarray]:
    with np.load(main(work) / "data.npz") as z:
        return {k: z[k] for k in z.files}


def test_untouched_files_pass(work):
    assert {p.name for p in main(work).iterdir()} == {"data.npz", "partition.csv", "meta.json"}
    meta, a = _meta(work), _arrays(work)
    assert meta["source"] == "digits" and meta["clients"] == 20 and meta["min_rows"] == 10
    assert meta["train_rows"] + meta["test_rows"] == 1797 and meta["test_rows"] == round(0.221 * 1797)
    assert a["x_train"].shape == (meta["train_rows"], 64) and a["x_test"].shape == (meta["test_rows"], 64)
    assert a["x_train"].min() == 0.0 and a["x_train"].max() == 1.0  # pixels / 16, not standardised
    counts = np.bincount(a["client"], minlength=20)
    assert len(counts) == 20 and counts.min() >= 10 and counts.sum() == meta["train_rows"]
    part = pd.read_csv(main(work) / "partition.csv")
    assert list(part.columns) == ["client", "label", "rows"] and len(part) == 20 * 10
    np.testing.assert_array_equal(part.groupby("client").rows.sum().to_numpy(), counts)
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_a_client_out_of_range_fails_naming_owner_out_of_range(work):
    client = _arrays(work)["client"]
    big = int(np.argmax(np.bincount(client)))  # take a row from the largest client: no one falls under 10
    row = int(np.flatnonzero(client == big)[0])
    rewrite_npz(main(work) / "data.npz", client=set_item(row, 20))
    parts = failure_parts(failure(work))
    assert set(parts) == {"partition.owner_out_of_range", "partition.owned"}, parts
    assert "e.g. 1)" in parts["partition.owner_out_of_range"], parts


def test_a_client_under_min_rows_fails_naming_clients_rows(work):
    client = _arrays(work)["client"]
    counts = np.bincount(client, minlength=20)
    small = int(np.argmin(counts))
    moved = np.flatnonzero(client == small)[
        : counts[small] - 9
    ]  # leave it 9 rows; the rest to another client
    rewrite_npz(main(work) / "data.npz", client=set_item(moved, (small + 1) % 20))
    parts = failure_parts(failure(work))
    assert set(parts) == {"clients.rows"}, parts
    assert f"client={small}" in parts["clients.rows"] and "e.g. 9)" in parts["clients.rows"], parts


@pytest.mark.slow  # one more validate run (~1 s)
def test_a_nan_feature_fails_naming_features_nonfinite(work):
    rewrite_npz(main(work) / "data.npz", x_test=set_item((3, 10), np.nan))
    parts = failure_parts(failure(work))
    assert set(parts) == {"features.nonfinite"}, parts
    assert "split=test" in parts["features.nonfinite"], parts


@pytest.mark.slow  # one more validate run (~1 s)
def test_a_pixel_of_two_fails_naming_features_max(work):
    rewrite_npz(main(work) / "data.npz", x_train=set_item((0, 20), 2.0))
    parts = failure_parts(failure(work))
    assert set(parts) == {"features.max"}, parts
    assert "split=train" in parts["features.max"] and "2.0" in parts["features.max"], parts


@pytest.mark.slow  # one more validate run (~1 s)
def test_a_label_of_classes_fails_naming_labels_label_max(work):
    rewrite_npz(main(work) / "data.npz", y_test=set_item(0, 10))
    parts = failure_parts(failure(work))
    assert set(parts) == {"labels.label_max"}, parts
    assert "e.g. 10)" in parts["labels.label_max"], parts


# ------------------------------------------------------------------------------------------ sources
CATEGORIES = {
    "open_qa": "who what when where capital river mountain",
    "classification": "classify label sort group category kind",
    "summarization": "summarize summary shorten brief paragraph gist",
    "creative_writing": "poem story write imagine verse tale",
}
COMMON = "the a please of and to in for".split()


def _dolly_records(n: int = 300, seed: int = 0) -> list[dict]:
    """Dolly-15K-style records: each instruction draws most of its words from its category's own vocabulary."""
    g = np.random.default_rng(seed)
    names = list(CATEGORIES)
    records = []
    for i in range(n):
        cat = names[i % 4]
        own = CATEGORIES[cat].split()
        words = list(g.choice(own, 4)) + list(g.choice(COMMON, 3))
        g.shuffle(words)
        records.append(
            {
                "instruction": " ".join(words).capitalize() + "?",
                "context": "" if i % 3 else f"Some context {i}.",
                "response": f"Response {i}.",
                "category": cat,
            }
        )
    return records


def _source_root(work: Path, source: str, name: str, **prepare) -> Path:
    """``work`` with params reading data/ferret/input/``name`` through prepare ``source``."""
    params = yaml.safe_load((work / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"].update(source=source, **{source: name}, **prepare)
    (work / "params.yaml").write_text(yaml.safe_dump(params))
    folder = work / "data" / SLUG / "input"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def _write_jsonl(path, records, lines: dict[int, str] | None = None) -> None:
    text = [json.dumps(r) for r in records]
    for n, line in (lines or {}).items():
        text[n - 1] = line
    path.write_text("\n".join(text) + "\n", encoding="utf-8")


def test_prepare_reads_a_dolly_fixture_and_validate_passes(work):
    records = _dolly_records()
    path = _source_root(work, "dolly", "dolly.jsonl", clients=5, dolly_features=64)
    _write_jsonl(path, records)
    run_stage(work, SLUG, "prepare")
    meta, a = _meta(work), _arrays(work)
    assert (
        meta["source"] == "dolly" and meta["classes"] == 4 and meta["features"] == 64 and meta["clients"] == 5
    )
    assert meta["data"] == "dolly.jsonl (300 records, 4 categories)" and meta["standardised"] is True
    assert meta["train_rows"] + meta["test_rows"] == 300
    # labels are the categories in sorted order; every record is a row of train or test
    names = sorted(CATEGORIES)
    want = np.array([sum(r["category"] == c for r in records) for c in names])
    got = np.bincount(a["y_train"], minlength=4) + np.bincount(a["y_test"], minlength=4)
    np.testing.assert_array_equal(got, want)
    counts = np.bincount(a["client"], minlength=5)
    assert len(counts) == 5 and counts.min() >= 10 and counts.sum() == len(a["y_train"])
    part = pd.read_csv(main(work) / "partition.csv")
    assert len(part) == 5 * 4 and part.rows.sum() == len(a["y_train"])
    # the Dirichlet(0.5) split over categories is not i.i.d.: some client's category mix is far from uniform
    mix = part.pivot(index="client", columns="label", values="rows").to_numpy()
    assert (mix.max(1) / mix.sum(1)).max() > 0.4
    # the features carry the instruction's words: class centroids of the training rows classify the test rows
    x, y, xt, yt = a["x_train"], a["y_train"], a["x_test"], a["y_test"]
    centroids = np.stack([x[y == c].mean(0) for c in range(4)])
    pred = np.argmin(((xt[:, None, :] - centroids[None]) ** 2).sum(-1), 1)
    assert (pred == yt).mean() > 0.9
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


@pytest.mark.parametrize(
    ("lines", "drop", "message"),
    [
        ({3: "{not json"}, None, "dolly.jsonl:3: not a JSON object"),
        ({2: "[1, 2]"}, None, "dolly.jsonl:2: not a JSON object"),
        ({}, (5, "category"), "dolly.jsonl:5: no string field 'category'"),
        ({}, (1, "instruction"), "dolly.jsonl:1: no string field 'instruction'"),
    ],
    ids=["malformed-line", "not-an-object", "missing-category", "missing-instruction"],
)
def test_prepare_refuses_a_bad_dolly_line_naming_it(work, lines, drop, message):
    from icml25.errors import UserError

    records = _dolly_records(40)
    if drop is not None:
        del records[drop[0] - 1][drop[1]]
    path = _source_root(work, "dolly", "dolly.jsonl", clients=2)
    _write_jsonl(path, records, lines)
    with pytest.raises(UserError) as info:
        run_stage(work, SLUG, "prepare")
    text = str(info.value)
    assert text.endswith(message) and "\n" not in text, text


def test_prepare_refuses_a_dolly_line_that_is_not_utf8(work):
    from icml25.errors import UserError

    path = _source_root(work, "dolly", "dolly.jsonl", clients=2)
    _write_jsonl(path, _dolly_records(40))
    latin = {"instruction": "Caf\u00e9 au lait?", "context": "", "response": "Yes.", "category": "open_qa"}
    path.write_bytes(path.read_bytes() + json.dumps(latin, ensure_ascii=False).encode("latin-1") + b"\n")
    with pytest.raises(UserError, match="dolly.jsonl:41"):
        run_stage(work, SLUG, "prepare")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("gone.jsonl", "gone.jsonl: no such file"),
        ("", "papers.ferret.prepare.dolly: empty"),
        ("../outside.jsonl", "must be a path inside data/ferret/input/"),
    ],
    ids=["missing", "empty", "outside"],
)
def test_prepare_refuses_a_missing_or_empty_dolly_name(work, name, message):
    from icml25.errors import UserError

    _source_root(work, "dolly", name)
    with pytest.raises(UserError, match=message):
        run_stage(work, SLUG, "prepare")


@pytest.mark.slow  # a prepare and a validate run (~1 s)
def test_prepare_reads_a_user_csv_and_validate_passes(work):
    g = np.random.default_rng(1)
    y = g.integers(0, 3, 250)
    table = pd.DataFrame(g.standard_normal((250, 3)) * [1.0, 10.0, 100.0] + 5.0, columns=["u", "v", "w"])
    table["kind"] = np.array(["x", "y", "z"])[y]
    path = _source_root(work, "csv", "table.csv", target="kind", clients=4)
    table.to_csv(path, index=False)
    run_stage(work, SLUG, "prepare")
    meta, a = _meta(work), _arrays(work)
    assert meta["source"] == "csv" and meta["classes"] == 3 and meta["features"] == 3 and meta["standardised"]
    assert meta["data"] == "table.csv (250 x 3, target kind, 3 classes)"
    # standardised by the training rows: mean 0, sd 1 per column there
    np.testing.assert_allclose(a["x_train"].mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(a["x_train"].std(0), 1, atol=1e-4)
    assert np.bincount(a["client"], minlength=4).min() >= 10
    run_stage(work, SLUG, "validate")


@pytest.mark.slow  # prepare refuses before any work (~0.3 s)
def test_prepare_refuses_a_csv_without_the_target(work):
    from icml25.errors import UserError

    path = _source_root(work, "csv", "table.csv", target="label")
    pd.DataFrame({"a": range(30), "b": [0, 1, 2] * 10}).to_csv(path, index=False)
    with pytest.raises(UserError, match="table.csv: no column 'label'"):
        run_stage(work, SLUG, "prepare")
