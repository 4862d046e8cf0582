"""`icml25 ucb_ogd next` and `icml25 ucb_ogd simulate` (in process through the installed entry, once through the
console for the exit status): the UCB index of a hand example, the tie rule, the warm start, a tiny simulation
that writes JSON, and every bad input as one line, exit 2, nothing written."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from flows.cli import main as cli_main
from tests.helpers import icml25

SLUG = "ucb_ogd"


def _history(tmp_path, rows, name="history.csv", header="source,loss"):
    path = tmp_path / name
    path.write_text(header + "\n" + "".join(f"{s},{v}\n" for s, v in rows))
    return path


def _next(capsys, path, *args):
    code = cli_main([SLUG, "next", str(path), *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    lines = out.out.strip().splitlines()
    table = {}
    for line in lines[2:-1]:
        name, n, mean, *index = line.split()
        table[name] = (int(n), mean, " ".join(index))
    return table, lines[-1]


def test_next_prints_the_ucb_index_of_the_hand_example(tmp_path, capsys):
    rows = [("a", 0.5), ("b", 0.2), ("a", 0.9), ("c", 0.1), ("b", 0.3)]
    table, last = _next(capsys, _history(tmp_path, rows))
    t = len(rows) + 1  # the round about to be chosen (UCBSampler.index: updates + 1)
    expected = {}
    for s in "abc":
        losses = [v for name, v in rows if name == s]
        n = len(losses)
        expected[s] = (n, sum(losses) / n, sum(losses) / n + math.sqrt(2 * math.log(t) / n))
    assert list(table) == ["a", "b", "c"]  # order of first appearance
    for s, (n, mean, index) in expected.items():
        assert table[s][0] == n
        assert float(table[s][1]) == pytest.approx(mean, abs=1e-6)
        assert float(table[s][2]) == pytest.approx(index, abs=1e-6)
    # a: 0.7 + sqrt(ln 6) = 2.038566 beats c: 0.1 + sqrt(2 ln 6) = 1.993018 and b: 0.25 + sqrt(ln 6)
    assert last == "next: a (highest UCB index 2.038566)"


def test_next_breaks_ties_to_the_first_source(tmp_path, capsys):
    path = _history(tmp_path, [("a", 0.4), ("b", 0.4), ("b", 0.3), ("a", 0.3)])
    table, last = _next(capsys, path)
    assert table["a"] == table["b"]
    assert last.startswith("next: a (") and "tied with b" in last
    _, last = _next(capsys, path, "--sources", "b,a")  # --sources sets the order, hence the tie
    assert last.startswith("next: b (") and "tied with a" in last


def test_next_warm_start_picks_an_unsampled_source_from_sources(tmp_path, capsys):
    # t = 5 > K = 3, yet d was never sampled: its index is +inf and it is picked first (c, then d, in order)
    path = _history(tmp_path, [("a", 0.9), ("b", 0.1), ("a", 0.8), ("b", 0.2)])
    table, last = _next(capsys, path, "--sources", "a,b,c,d")
    assert table["c"] == (0, "-", "inf (unsampled)") and table["d"][0] == 0
    assert last.startswith("next: c (never sampled")
    # an empty history with every source named: the first source
    empty = _history(tmp_path, [], name="empty.csv")
    _, last = _next(capsys, empty, "--sources", "x,y")
    assert last.startswith("next: x (never sampled")


@pytest.fixture()
def folder(tmp_path):
    """Three sources of 2-d points around three class centres; the third is the noisiest."""
    rng = np.random.default_rng(0)
    src = tmp_path / "src"
    src.mkdir()
    for k, (classes, noise) in enumerate([((0, 1), 0.3), ((1, 2), 0.6), ((0, 2), 1.2)]):
        y = rng.choice(classes, size=20)
        X = np.stack([np.cos(2 * np.pi * y / 3), np.sin(2 * np.pi * y / 3)], 1)
        X = X + noise * rng.standard_normal(X.shape)
        pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "y": y}).to_csv(src / f"s{k}.csv", index=False)
    return src


def test_simulate_prints_both_methods_and_writes_json(folder, tmp_path, capsys):
    out = tmp_path / "result.json"
    argv = [SLUG, "simulate", str(folder), "--target", "y", "--budget", "30", "--seeds", "2", "-o", str(out)]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out
    assert "3 sources (s0, s1, s2), 3 classes, budget T = 30, 2 seeds" in printed
    assert any(line.startswith("ucb_ogd ") for line in printed.splitlines())
    assert any(line.startswith("uniform ") for line in printed.splitlines())
    doc = json.loads(out.read_text())
    assert doc["sources"] == ["s0", "s1", "s2"] and doc["budget"] == 30 and doc["seeds"] == 2
    for m in ("ucb_ogd", "uniform"):
        r = doc["methods"][m]
        assert len(r["worst_accuracy"]) == 2 and 0 <= r["worst_accuracy_mean"] <= 1
        assert sum(r["labels"].values()) == pytest.approx(30)
        assert sum(r["share"].values()) == pytest.approx(1)
        # the mean over seeds of the worst source is at most the worst source's mean over seeds
        assert r["worst_accuracy_mean"] <= min(r["accuracy"].values()) + 1e-12
    assert min(doc["methods"]["ucb_ogd"]["labels"].values()) >= 1  # the warm start labels each source
    gain = doc["methods"]["ucb_ogd"]["worst_accuracy_mean"] - doc["methods"]["uniform"]["worst_accuracy_mean"]
    assert doc["worst_accuracy_gain"] == pytest.approx(gain)


@pytest.mark.parametrize(
    ("text", "args", "message"),
    [
        ("source,loss\na,0.5\nb,1.5\n", [], "history.csv row 2: loss 1.5 outside [0, 1]"),
        ("source,loss\na,0.5\nb,-0.1\n", [], "history.csv row 2: loss -0.1 outside [0, 1]"),
        ("source,loss\na,0.5\nb,abc\n", [], "history.csv row 2: loss 'abc' is not a number"),
        ("source,loss\na,0.5\nb,\n", [], "history.csv row 2: loss '' is not a number"),
        ("source,loss\na,0.5\nc,0.2\n", ["--sources", "a,b"], "row 2: unknown source 'c' (--sources: a, b)"),
        ("source,loss\na,0.5\na,0.2\n", [], "history.csv: 1 source (a); at least 2 are needed"),
        ("source,loss\n", [], "history.csv: no source (no row); at least 2 are needed"),
        ("source,loss\na,0.5\n", ["--sources", "a"], "history.csv: 1 source (a); at least 2"),
        ("source,value\na,0.5\n", [], "history.csv: no column 'loss' (columns: source, value)"),
        ("src,loss\na,0.5\n", [], "history.csv: no column 'source' (columns: src, loss)"),
        ("", [], "history.csv: not a readable CSV file"),
        ("source,loss\na,0.5\n", ["--sources", "a,,b"], "--sources 'a,,b': an empty source name"),
        ("source,loss\na,0.5\n", ["--sources", "a,b,a"], "--sources 'a,b,a': source 'a' named twice"),
    ],
)
def test_next_bad_input_is_one_line_exit_2(tmp_path, capsys, text, args, message):
    path = tmp_path / "history.csv"
    path.write_text(text)
    assert cli_main([SLUG, "next", str(path), *args]) == 2
    out = capsys.readouterr()
    assert message in out.err and "Traceback" not in out.err, out.err
    assert len(out.err.strip().splitlines()) == 1 and not out.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.csv"]


def test_next_missing_history_is_one_line(tmp_path, capsys):
    assert cli_main([SLUG, "next", str(tmp_path / "none.csv")]) == 2
    err = capsys.readouterr().err
    assert "none.csv: no such file" in err and len(err.strip().splitlines()) == 1


def _one_source(src):
    for p in sorted(src.glob("*.csv"))[1:]:
        p.unlink()


def _empty(src):
    for p in src.glob("*.csv"):
        p.unlink()


@pytest.mark.parametrize(
    ("edit", "args", "message"),
    [
        (None, ["--target", "label", "--budget", "30"], "s0.csv: no column 'label' (columns: x0, x1, y)"),
        (None, ["--target", "y", "--budget", "2"], "--budget 2 is less than the number of sources K = 3"),
        (None, ["--target", "y", "--budget", "30", "--seeds", "0"], "--seeds must be >= 1, got 0"),
        (_one_source, ["--target", "y", "--budget", "30"], "1 source file (s0.csv); at least 2 are needed"),
        (_empty, ["--target", "y", "--budget", "30"], "no *.csv file (one file per source)"),
        ("missing", ["--target", "y", "--budget", "30"], "nowhere: no such folder"),
        (None, ["--target", "x0", "--budget", "30"], "column 'x0' must hold integer class labels"),
    ],
)
def test_simulate_bad_input_is_one_line_exit_2_and_nothing_written(
    folder, tmp_path, capsys, edit, args, message
):
    target = folder
    if edit == "missing":
        target = tmp_path / "nowhere"
    elif edit:
        edit(folder)
    out = tmp_path / "result.json"
    assert cli_main([SLUG, "simulate", str(target), *args, "-o", str(out)]) == 2
    res = capsys.readouterr()
    assert message in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob(".*tmp"))


def test_simulate_unwritable_output_is_refused_before_any_work(folder, tmp_path, capsys):
    out = tmp_path / "no_dir" / "result.json"
    argv = [SLUG, "simulate", str(folder), "--target", "y", "--budget", "30", "-o", str(out)]
    assert cli_main(argv) == 2
    res = capsys.readouterr()
    assert f"--output {out}: no such directory" in res.err and not res.out


def test_console_exit_status_2_without_traceback(tmp_path, root):
    path = _history(tmp_path, [("a", 0.5), ("b", 2)])
    res = icml25(root, SLUG, "next", str(path))
    assert res.returncode == 2 and not res.stdout
    assert res.stderr.strip() == f"icml25: error: {path} row 2: loss 2 outside [0, 1]"
