"""`icml25 tmvml fit-predict` (in process, through flows.cli) on small CSVs written here from the spec's synthetic
generator (models.tmvml.data.synthetic: 2 views of 5 and 7 columns, 4 labels, 90 training and 30 test rows;
lam 1, since the default 100 shrinks every score of 90 rows to the label frequencies).

With --test and -o the scores file has a score_<label> column per label and the label sets of the scores >= 0.5;
the printed metrics are all_metrics of the written scores; column names (and mixed names and ranges, and a test
file whose columns come in another order) give the same scores as ranges; the Python TMvML on read_table's
arrays gives the CLI's scores (ltr and tnn); ``--views`` splits on ';' when there is one, else on ','; without
-o the first rows' label sets are printed and nothing is written; without --test the training rows are scored;
a test file without label columns prints no metrics. Each bad input (overlapping or empty views, a range past
the last column, an unknown column, labels not 0/1, a NaN, lam or delta <= 0, a missing file, a test file
lacking a view column or some label columns, a missing output folder, the output being the data) is one line
naming the value, exit 2, nothing on stdout, nothing written.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tests.helpers import assert_refused, printed_fields, run_tool

SLUG = "tmvml"
LABELS = ["L1", "L2", "L3", "L4"]
RANGES = ["--views", "1-5,6-12", "--labels", "13-16"]
METRICS = ("ap", "ranking_loss", "coverage", "one_error", "hamming", "micro_f1")


def _run(argv: list[str]) -> tuple[int, str, str]:
    return run_tool(SLUG, *argv)


def _call(capsys, argv: list[str]) -> tuple[int, str, str]:
    return run_tool(SLUG, *argv)


_lines = printed_fields


def _scores(path) -> tuple[np.ndarray, list[str]]:
    frame = pd.read_csv(path, keep_default_na=False)
    assert list(frame.columns) == [f"score_{n}" for n in LABELS] + ["labels"]
    return frame[[f"score_{n}" for n in LABELS]].to_numpy(float), list(frame["labels"])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """train.csv / test.csv (views v1_1..v1_5, v2_1..v2_7, labels L1..L4), broken copies, one CLI run with -o."""
    from models.tmvml.data import synthetic

    d = tmp_path_factory.mktemp("tmvml-tool")
    views, y = synthetic(np.random.default_rng(0), 120, q=4, dims=(5, 7), noise_view=False)
    cols = {f"v{v + 1}_{j + 1}": x[:, j] for v, x in enumerate(views) for j in range(x.shape[1])}
    frame = pd.DataFrame({**cols, **{n: y[:, j] for j, n in enumerate(LABELS)}})
    train, test = frame.iloc[:90].reset_index(drop=True), frame.iloc[90:].reset_index(drop=True)
    files = {
        "train": train,
        "test": test,
        "nolab": test.drop(columns=LABELS),
        "shuffled": test[list(reversed(test.columns))],
        "label2": train.assign(L3=np.where(np.arange(90) == 4, 2, train.L3)),
        "nan": train.assign(v2_3=np.where(np.arange(90) == 6, np.nan, train.v2_3)),
        "text": train.astype({"v1_2": object}).assign(v1_2=lambda f: f.v1_2.where(f.index != 2, "abc")),
        "no_view_col": test.drop(columns="v2_4"),
        "some_labels": test.drop(columns=["L2", "L4"]),
        "header_only": test.iloc[:0],
    }
    paths = {}
    for name, f in files.items():
        paths[name] = d / f"{name}.csv"
        f.to_csv(paths[name], index=False)
    out = d / "out"
    out.mkdir()
    scores = out / "scores.csv"
    argv = ["fit-predict", str(paths["train"]), *RANGES, "--test", str(paths["test"]), "--lam", "1"]
    status, printed, err = _run([*argv, "-o", str(scores)])
    assert status == 0 and not err, err
    return SimpleNamespace(dir=d, paths=paths, scores=scores, printed=printed, test=test, argv=argv)


def test_fit_predict_writes_scores_and_their_label_sets(data):
    f, sets = _scores(data.scores)
    assert f.shape == (30, 4) and np.isfinite(f).all()
    assert sets == ["|".join(n for n, s in zip(LABELS, row, strict=True) if s >= 0.5) for row in f]
    assert 0 < (f >= 0.5).mean() < 1 and "" in sets and any("|" in s for s in sets)
    lines = _lines(data.printed)
    assert (
        lines["fit"] == "90 rows of train.csv, 2 views (5 + 7 columns), 4 labels, penalty ltr, lam 1, delta 1"
    )
    assert lines["admm"].endswith("iterations, converged") and lines["test"] == "30 rows of test.csv"
    assert data.printed.splitlines()[-1] == f"wrote {data.scores}"
    assert [p.name for p in data.scores.parent.iterdir()] == ["scores.csv"]  # no temporary file left


def test_printed_metrics_are_all_metrics_of_the_written_scores(data):
    from models.tmvml.metrics import all_metrics

    f, _ = _scores(data.scores)
    ref = all_metrics(data.test[LABELS].to_numpy(), f)
    lines = _lines(data.printed)
    assert [ln.split(":")[0] for ln in data.printed.splitlines()[3:9]] == list(METRICS)
    for name in METRICS:
        assert float(lines[name]) == pytest.approx(ref[name], abs=1e-6), name
    assert ref["ap"] > 0.8  # the views carry the labels


@pytest.mark.parametrize(
    ("views", "labels", "test"),
    [
        ("v1_1,v1_2,v1_3,v1_4,v1_5;v2_1,v2_2,v2_3,v2_4,v2_5,v2_6,v2_7", "L1,L2,L3,L4", "test"),
        ("1-3,v1_4,5;6-12", "L1,14-16", "test"),
        ("1-5;6-12", "13-16", "shuffled"),  # the test file's views found by name
    ],
)
def test_names_and_mixed_specs_give_the_same_scores(data, tmp_path, capsys, views, labels, test):
    out = tmp_path / "s.csv"
    argv = ["fit-predict", str(data.paths["train"]), "--views", views, "--labels", labels]
    status, printed, err = _call(
        capsys, [*argv, "--test", str(data.paths[test]), "--lam", "1", "-o", str(out)]
    )
    assert status == 0 and not err, err
    assert out.read_text() == data.scores.read_text()
    assert {k: v for k, v in _lines(printed).items() if k in METRICS} == {
        k: v for k, v in _lines(data.printed).items() if k in METRICS
    }


@pytest.mark.parametrize(
    ("penalty", "lam", "delta"), [("ltr", 1.0, 1.0), ("tnn", 3.0, 1.0), ("ltr", 5.0, 0.3)]
)
def test_the_python_tmvml_gives_the_cli_scores(data, tmp_path, capsys, penalty, lam, delta):
    from models.tmvml import TMvML
    from models.tmvml.data import read_table

    out = tmp_path / "s.csv"
    argv = ["fit-predict", str(data.paths["train"]), *RANGES, "--test", str(data.paths["test"])]
    argv += ["--penalty", penalty, "--lam", str(lam), "--delta", str(delta), "-o", str(out)]
    status, printed, err = _call(capsys, argv)
    assert status == 0 and not err, err
    xs, y, names = read_table(data.paths["train"], ["1-5", "6-12"], "13-16")
    xt, _, _ = read_table(data.paths["test"], ["1-5", "6-12"], "13-16")
    model = TMvML(lam=lam, delta=delta, penalty=penalty).fit(xs, y)
    f, sets = _scores(out)
    np.testing.assert_allclose(f, model.decision_function(xt), rtol=0, atol=1e-12)
    assert sets == ["|".join(n for n, on in zip(names, row, strict=True) if on) for row in model.predict(xt)]
    state = "converged" if model.converged_ else "not converged"
    assert _lines(printed)["admm"].startswith(f"{model.iterations_} iterations, {state}")
    assert f"penalty {penalty}, lam {lam:g}, delta {delta:g}" in _lines(printed)["fit"]


def test_views_split_on_semicolons_else_on_commas():
    from models.tmvml.cli import split_views

    assert split_views("1-79,80-103") == ["1-79", "80-103"]
    assert split_views("1-3,5;6-9") == ["1-3,5", "6-9"]
    assert split_views("a, b ,c") == ["a", "b", "c"]
    assert split_views("1-103") == ["1-103"]


def test_without_output_prints_the_first_label_sets_and_writes_nothing(data, capsys):
    before = sorted(p.name for p in data.dir.iterdir())
    status, printed, err = _call(capsys, data.argv)
    assert status == 0 and not err, err
    _, sets = _scores(data.scores)
    lines = _lines(printed)
    assert "wrote" not in printed and sorted(p.name for p in data.dir.iterdir()) == before
    assert printed.splitlines()[-6].startswith("predicted label sets (score >= 0.5; first 5 of 30 rows")
    assert [lines[f"row {i + 1}"] for i in range(5)] == [s or "(none)" for s in sets[:5]]
    assert lines["ap"] == _lines(data.printed)["ap"]


def test_without_test_scores_the_training_rows_and_without_labels_prints_no_metrics(data, capsys):
    status, printed, err = _call(capsys, ["fit-predict", str(data.paths["train"]), *RANGES, "--lam", "1"])
    assert status == 0 and not err, err
    assert _lines(printed)["test"] == "90 rows of train.csv (the training rows)" and "ap" in _lines(printed)
    argv = [
        "fit-predict",
        str(data.paths["train"]),
        *RANGES,
        "--test",
        str(data.paths["nolab"]),
        "--lam",
        "1",
    ]
    status, printed, err = _call(capsys, argv)
    assert status == 0 and not err, err
    lines = _lines(printed)
    assert lines["metrics"] == "none (nolab.csv has no label columns)" and not set(METRICS) & set(lines)
    _, sets = _scores(data.scores)
    assert [lines[f"row {i + 1}"] for i in range(5)] == [s or "(none)" for s in sets[:5]]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{train}", "--views", "1-6,6-12"], "views 1 and 2 overlap at column 'v2_1'"),
        (["{train}", "--views", "1-5;;6-12"], "--views '1-5;;6-12': view 2 is empty"),
        (["{train}", "--views", "1-5,"], "--views '1-5,': view 2 is empty"),
        (["{train}", "--views", " "], "--views ' ': give at least one view"),
        (["{train}", "--views", "1-5,6-20"], "view 2 '6-20': '6-20' runs past the last column (16)"),
        (["{train}", "--views", "1-5,v2_9"], "view 2 'v2_9': 'v2_9' is neither a 1-based range nor a column"),
        (["{train}", "--labels", "12-16"], "labels and view 2 overlap at column 'v2_7'"),
        (["{train}", "--labels", "13-17"], "labels '13-17': '13-17' runs past the last column (16)"),
        (["{train}", "--labels", ""], "--labels '': give the label columns"),
        (["{label2}"], "label2.csv: label column 'L3', row 5: "),  # then "2 is not 0 or 1" (np.int64(2) now)
        (["{nan}"], "nan.csv: view 2, column 'v2_3', row 7: missing or not a number"),
        (["{text}"], "text.csv: view 1, column 'v1_2', row 3: missing or not a number"),
        (["{train}", "--lam", "0"], "--lam 0: must be a finite number > 0"),
        (["{train}", "--lam", "-2"], "--lam -2: must be a finite number > 0"),
        (["{train}", "--lam", "nan"], "--lam nan: must be a finite number > 0"),
        (["{train}", "--delta", "0"], "--delta 0: must be a finite number > 0"),
        (["{train}", "--delta", "-1"], "--delta -1: must be a finite number > 0"),
        (["{train}", "--lam", "x"], "argument --lam: invalid float value: 'x'"),
        (["{train}", "--penalty", "l1"], "argument --penalty: invalid choice: 'l1'"),
        (["{d}/gone.csv"], "{d}/gone.csv: no such file"),
        (["{train}", "--test", "{d}/gone.csv"], "--test {d}/gone.csv: no such file"),
        (["{train}", "--test", "{no_view_col}"], "no_view_col.csv: no column 'v2_4' (view 2;"),
        (["{train}", "--test", "{some_labels}"], "label column(s) L1, L3 present but L2, L4 missing"),
        (["{train}", "--test", "{header_only}"], "header_only.csv: no data rows to score"),
        (["{header_only}"], "header_only.csv: 0 data row(s); the fit needs at least 2"),
        (
            ["{train}", "-o", "{out}/nowhere/s.csv"],
            "--output {out}/nowhere/s.csv: no such directory {out}/nowhere",
        ),
        (["{train}", "-o", "{out}"], "--output {out}: is a directory, not a file"),
        (
            ["{train}", "--test", "{test}", "-o", "{test}"],
            "--output {test}: the same file as the data {test}",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(data, tmp_path, capsys, argv, message):
    fmt = {**data.paths, "d": data.dir, "out": tmp_path}
    argv = [a.format(**fmt) for a in argv]
    for flag, value in zip(RANGES[::2], RANGES[1::2], strict=True):
        if flag not in argv:
            argv += [flag, value]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "s.csv")]
    before = {p.name: p.stat().st_mtime_ns for p in data.dir.iterdir()}
    status, printed, err = _call(capsys, ["fit-predict", *argv])
    assert_refused(status, printed, err, message.format(**fmt))
    assert (
        list(tmp_path.iterdir()) == []
        and {p.name: p.stat().st_mtime_ns for p in data.dir.iterdir()} == before
    )


def test_an_admm_stopped_at_its_cap_is_reported_and_still_scores(data, tmp_path, capsys, monkeypatch):
    import functools

    import models.tmvml.model as model_module

    monkeypatch.setattr(model_module, "TMvML", functools.partial(model_module.TMvML, max_iter=2))
    out = tmp_path / "s.csv"
    status, printed, err = _call(capsys, [*data.argv, "-o", str(out)])
    assert status == 0 and not err, err
    admm = _lines(printed)["admm"]
    assert admm.startswith("2 iterations, not converged (residual ") and admm.endswith("after 2 iterations)")
    assert _scores(out)[0].shape == (30, 4)
