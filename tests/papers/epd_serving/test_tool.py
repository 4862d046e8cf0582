"""`icml25 epd_serving simulate|plan` (in process through the installed entry, once through the console for the
exit status) and the Python entry (``CostModel``, ``Workload``, ``simulate``, ``best_allocation``): what the
CLI prints is what the Python entry computes; every bad input is one line naming the value, exit 2, no
traceback."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from flows.cli import main as cli_main
from models.epd_serving import CostModel, Workload, best_allocation, cost_model, simulate, summary
from tests.helpers import icml25

SLUG = "epd_serving"
SIM = [SLUG, "simulate"]


def _trace(path, issued, context=1.3):
    doc = [
        [
            {"timestamp": t, "event_type": "issued"},
            {"timestamp": t + 0.01, "event_type": "preprocessed"},
            {"timestamp": t + 0.02, "event_type": "context_begin"},
            {"timestamp": t + 0.02 + context, "event_type": "context_end"},
            {"timestamp": t + 2.0, "event_type": "finished"},
        ]
        for t in issued
    ]
    path.write_text(json.dumps(doc))
    return path


def _run(capsys, *args):
    assert cli_main([*SIM, *args]) == 0
    res = capsys.readouterr()
    assert not res.err
    return res.out.splitlines()


def _parse(lines):
    """(TTFT mean, P90, TPOT mean in s, attainment, {role: GB}) from simulate's output."""
    m = re.fullmatch(r"TTFT mean (\S+) s, P90 (\S+) s; TPOT mean (\S+) ms", lines[1])
    att = re.fullmatch(r"SLO attainment \(TTFT < 1\.4 s and TPOT < 0\.04 s\): (\S+)", lines[2])
    assert m and att and lines[3].startswith("peak memory: "), lines
    peaks = {}
    for part in lines[3].removeprefix("peak memory: ").split(", "):
        role, gb, unit = part.split(" ")
        assert unit == "GB"
        peaks[role] = float(gb)
    return float(m[1]), float(m[2]), float(m[3]) / 1000, float(att[1]), peaks


def _check(lines, res):
    """The printed numbers are those of ``res`` (the Python entry's run), recomputed here from its per-request
    table and per-GPU peaks (to the printed precision)."""
    ttft, p90, tpot, att, peaks = _parse(lines)
    t = res.table()
    t_ttft = t["first_token"] - t["arrival"]
    t_tpot = (t["finish"] - t["first_token"]) / (t["output"] - 1)
    assert ttft == pytest.approx(t_ttft.mean(), abs=5e-5)
    assert p90 == pytest.approx(np.quantile(t_ttft, 0.9), abs=5e-5)
    assert tpot == pytest.approx(t_tpot.mean(), abs=5e-7)
    assert att == pytest.approx(np.mean((t_ttft < 1.4) & (t_tpot < 0.04)), abs=5e-5)
    assert peaks == {role: pytest.approx(max(gb), abs=0.005) for role, gb in res.peaks.items()}
    s = summary(res)
    assert (s["ttft_mean"], s["tpot_mean"]) == (pytest.approx(t_ttft.mean()), pytest.approx(t_tpot.mean()))
    return ttft, tpot, att, peaks


def _poisson(rate=0.5, n=50, images=2, seed=0):
    return Workload.poisson(rate, n, images, np.random.default_rng(seed))


# ------------------------------------------------------------------------------------------ happy paths
def test_simulate_epd_prints_latencies_attainment_and_memory_by_role(capsys):
    lines = _run(
        capsys, "--system", "epd", "--gpus", "6,1,1", "--rate", "0.5", "--images", "2", "--requests", "50"
    )
    assert len(lines) == 4
    assert lines[0] == "epd 6,1,1 with IRP; 2 image(s) per request; Poisson 0.5 req/s, 50 requests, seed 0"
    ttft, tpot, att, peaks = _check(lines, simulate("epd", _poisson(), CostModel(), (6, 1, 1), True))
    assert set(peaks) == {"E", "P", "D"}
    # no-queue TTFT of a 2-image request with IRP: 0.615 s encode + 0.03 ms move + 0.1056 s prefill
    assert 0.72 < ttft < 0.8 and 0.008 < tpot < 0.0085 and att == 1.0
    assert peaks["E"] == pytest.approx(0.9 + 0.5 + 0.0047, abs=0.005)


def test_simulate_pd_and_aggregated(capsys):
    lines = _run(capsys, "--system", "pd", "--gpus", "7,1", "--rate", "0.5", "--requests", "50")
    assert lines[0].startswith("pd 7,1; 2 image(s) per request; Poisson 0.5 req/s")
    _, _, _, peaks = _check(lines, simulate("pd", _poisson(), CostModel(), (7, 1)))
    assert set(peaks) == {"P", "D"} and peaks["P"] == pytest.approx(0.9 + 15.2 + 1.0, abs=0.005)
    lines = _run(capsys, "--system", "aggregated", "--gpus", "8", "--rate", "0.5", "--requests", "50")
    assert lines[0].startswith("aggregated 8; 2 image(s)")
    ttft, _, _, peaks = _check(lines, simulate("aggregated", _poisson(), CostModel(), (8,)))
    assert set(peaks) == {"aggregated"} and ttft >= 1.225 + 0.1056  # encode 20 tiles + prefill, no IRP


def test_simulate_no_irp_is_slower_than_irp(capsys):
    args = ["--system", "epd", "--gpus", "6,1,1", "--images", "4", "--requests", "40"]
    no = _run(capsys, *args, "--no-irp")
    assert no[0].startswith("epd 6,1,1 without IRP; 4 image(s)")
    ttft_no, *_ = _check(no, simulate("epd", _poisson(n=40, images=4), CostModel(), (6, 1, 1), False))
    ttft_irp, *_ = _check(
        _run(capsys, *args), simulate("epd", _poisson(n=40, images=4), CostModel(), (6, 1, 1))
    )
    assert ttft_no - ttft_irp > 3 * 0.615 * 0.9  # four images in series against in parallel


def test_simulate_replays_a_trace(capsys, tmp_path):
    path = _trace(tmp_path / "events.json", [50.0, 50.5, 53.0, 53.0, 60.0])
    lines = _run(capsys, "--system", "epd", "--gpus", "6,1,1", "--trace", str(path), "--rate", "9")
    assert lines[0] == f"epd 6,1,1 with IRP; 2 image(s) per request; trace {path} (5 requests)"
    w = Workload.replay(np.array([0.0, 0.5, 3.0, 3.0, 10.0]), 2)
    res = simulate("epd", w, CostModel(), (6, 1, 1))
    np.testing.assert_array_equal(res.table()["arrival"], [0.0, 0.5, 3.0, 3.0, 10.0])
    _check(lines, res)


def test_simulate_cost_presets_and_a_costs_file(capsys, tmp_path):
    args = ["--system", "epd", "--gpus", "6,1,1", "--requests", "40"]
    cal, *_ = _parse(_run(capsys, *args))
    ill, *_ = _parse(_run(capsys, *args, "--cost", "illustrative"))
    assert cal - ill == pytest.approx(0.36, abs=0.05)  # (61 - 25) ms x 10 tiles of one image's shard
    _check(
        _run(capsys, *args, "--cost", "illustrative"),
        simulate("epd", _poisson(n=40), cost_model("illustrative"), (6, 1, 1)),
    )
    path = tmp_path / "costs.yaml"
    path.write_text("b_E: 30\n")
    mine, *_ = _check(
        _run(capsys, *args, "--cost", str(path)),
        simulate("epd", _poisson(n=40), CostModel(b_E=30.0), (6, 1, 1)),
    )
    assert ill < mine < cal
    path.write_text("preset: illustrative\nW_E: 2.5\n")
    *_, peaks = _check(
        _run(capsys, *args, "--cost", str(path)),
        simulate("epd", _poisson(n=40), cost_model("illustrative", W_E=2.5), (6, 1, 1)),
    )
    assert peaks["E"] == pytest.approx(2.5 + 0.5 + 0.0047, abs=0.005)


def test_a_costs_file_reads_exponents_without_a_dot_as_numbers(capsys, tmp_path):
    """PyYAML's YAML 1.1 read ``1e-6`` as the string '1e-6', and the file was refused ("is not a number")."""
    from models.epd_serving.cli import read_cost

    path = tmp_path / "costs.yaml"
    path.write_text("c_P: 1e-6\nb_D: 2E-5\nb_E: 3.1e1\nW_E: +1e0\nhidden: 4096\n")
    want = cost_model("calibrated", c_P=1e-6, b_D=2e-5, b_E=31.0, W_E=1.0, hidden=4096)
    assert read_cost(str(path)) == want
    args = ["--system", "epd", "--gpus", "6,1,1", "--requests", "20"]
    _check(_run(capsys, *args, "--cost", str(path)), simulate("epd", _poisson(n=20), want, (6, 1, 1)))


def test_plan_prints_every_split_and_the_best(capsys):
    assert (
        cli_main([SLUG, "plan", "--gpus", "8", "--images", "2", "--rates", "0.25,1", "--requests", "30"]) == 0
    )
    res = capsys.readouterr()
    lines = res.out.splitlines()
    assert not res.err and lines[0].startswith("EPD + IRP on 8 GPUs, 2 image(s) per request, rates 0.25,1")
    rows = best_allocation(images=2, rates=(0.25, 1.0), gpus=8, requests=30, seed=0)
    body = lines[2:-1]
    assert len(body) == len(rows) == 21
    for line, r in zip(body, rows, strict=True):
        split, value = re.fullmatch(r"\s*(\(\d, \d, \d\))\s+(?:>= |<  |   )(\S+)", line).groups()
        assert split == f"({r['E']}, {r['P']}, {r['D']})"
        assert float(value) == pytest.approx(0.25 if r["how"] == "below" else r["goodput"], abs=5e-4)
    assert {tuple(map(int, re.findall(r"\d", b.split(")")[0]))) for b in body} == {
        (e, p, 8 - e - p) for e in range(1, 7) for p in range(1, 8 - e)
    }
    best = rows[-1]
    assert lines[-1] == f"best: ({best['E']}, {best['P']}, {best['D']})"
    # ranked worst to best: goodput never falls down the list
    assert [r["goodput"] for r in rows] == sorted(r["goodput"] for r in rows)


def test_python_entry_best_allocation_refuses_bad_input():
    with pytest.raises(ValueError, match="gpus must be >= 3"):
        best_allocation(2, gpus=2)
    with pytest.raises(ValueError, match="images must be >= 1, got 0"):
        best_allocation(0)
    with pytest.raises(ValueError, match=r"rates must be > 0, got \[0.0, 1.0\]"):
        best_allocation(2, rates=(0.0, 1.0))


# -------------------------------------------------------------------------------------------- bad input
def _unknown_key(d):
    (d / "costs.yaml").write_text("b_E: 30\nb_Q: 1\n")
    return ["--cost", str(d / "costs.yaml")]


def _negative(d):
    (d / "costs.yaml").write_text("b_E: -3\n")
    return ["--cost", str(d / "costs.yaml")]


def _unreadable(d):
    (d / "costs.yaml").write_text("b_E: [30,\n")
    return ["--cost", str(d / "costs.yaml")]


def _binary(d):
    (d / "costs.yaml").write_bytes(b"\xff\xfe\x00b_E")
    return ["--cost", str(d / "costs.yaml")]


def _not_a_mapping(d):
    (d / "costs.yaml").write_text("- b_E\n- 30\n")
    return ["--cost", str(d / "costs.yaml")]


def _not_a_number(d):
    (d / "costs.yaml").write_text("c_P: 1e-6x\n")
    return ["--cost", str(d / "costs.yaml")]


def _decreasing(d):
    return ["--trace", str(_trace(d / "events.json", [10.0, 12.0, 11.5]))]


def _missing_trace(d):
    return ["--trace", str(d / "none.json")]


EPD = ["--system", "epd", "--gpus", "6,1,1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*EPD, "--rate", "0"], "--rate must be > 0, got 0"),
        ([*EPD, "--rate", "-0.5"], "--rate must be > 0, got -0.5"),
        (
            ["--system", "epd", "--gpus", "6,0,2"],
            "--gpus 6,0,2: role P has 0 GPUs; every role needs at least 1",
        ),
        (["--system", "epd", "--gpus", "6,1,2"], "--gpus 6,1,2: E+P+D = 9 but --total is 8"),
        (["--system", "pd", "--gpus", "7,2"], "--gpus 7,2: P+D = 9 but --total is 8"),
        ([*EPD, "--images", "0"], "--images must be >= 1, got 0"),
        ([*EPD, "--requests", "0"], "--requests must be >= 1, got 0"),
        ([*EPD, "--tpot-slo", "0"], "--tpot-slo must be > 0, got 0"),
        (_decreasing, "events.json: timestamps decrease at request 2 (11.5 after 12.0)"),
        (_missing_trace, "none.json: not a readable JSON trace"),
        (_unknown_key, "costs.yaml: unknown cost key 'b_Q'"),
        (_negative, "costs.yaml: cost key 'b_E': -3 must be > 0"),
        (_not_a_number, "costs.yaml: cost key 'c_P': '1e-6x' is not a number"),
        ([*EPD, "--seed", "-1"], "--seed -1: must be an integer >= 0"),
        (_unreadable, "costs.yaml: not readable YAML"),
        (_binary, "costs.yaml: not readable YAML"),
        (_not_a_mapping, "costs.yaml: expected a mapping of constants"),
        ([*EPD, "--cost", "turbo"], "--cost turbo: neither a preset (calibrated, illustrative) nor a file"),
        (["--system", "pd", "--gpus", "7,1", "--no-irp"], "--no-irp applies to --system epd only (got pd)"),
        (["--system", "epd", "--gpus", "7,1"], "--gpus 7,1: epd takes E,P,D (3 number(s))"),
        (["--system", "aggregated", "--gpus", "4,4"], "--gpus 4,4: aggregated takes N (1 number(s))"),
        (["--system", "epd", "--gpus", "6,1,x"], "--gpus '6,1,x': expected integers separated by commas"),
    ],
)
def test_simulate_bad_input_is_one_line_exit_2(tmp_path, capsys, args, message):
    if callable(args):
        args = [*EPD, *args(tmp_path)]
    assert cli_main([*SIM, *args, "--requests", "5"] if "--requests" not in args else [*SIM, *args]) == 2
    res = capsys.readouterr()
    assert message in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and res.err.startswith("icml25: error: ") and not res.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rates", "0,1"], "--rates: a rate must be > 0, got 0"),
        (["--rates", "0.25,fast"], "--rates '0.25,fast': expected numbers separated by commas"),
        (["--gpus", "2"], "--gpus must be >= 3 (one per role), got 2"),
        (["--images", "0"], "--images must be >= 1, got 0"),
        (["--seed", "-1"], "--seed -1: must be an integer >= 0"),
    ],
)
def test_plan_bad_input_is_one_line_exit_2(capsys, args, message):
    assert cli_main([SLUG, "plan", *args, "--requests", "5"]) == 2
    res = capsys.readouterr()
    assert message in res.err and "Traceback" not in res.err, res.err
    assert len(res.err.strip().splitlines()) == 1 and not res.out


def test_console_exit_status_2_without_traceback(root):
    res = icml25(root, SLUG, "simulate", "--system", "epd", "--gpus", "6,0,2")
    assert res.returncode == 2 and not res.stdout
    assert res.stderr.strip() == "icml25: error: --gpus 6,0,2: role P has 0 GPUs; every role needs at least 1"
