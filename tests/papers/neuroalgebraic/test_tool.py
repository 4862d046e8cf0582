"""`icml25 neuroalgebraic dim` (in process through the installed entry; once through the console for the exit
status, slow): the counts, the float64 and GF(p) ranks, the defect, the fiber and whether the neuromanifold fills
its ambient space, on the exceptional (5, 7, 1) z^3 network and a fixed-output one. Every bad input (fewer than
two widths, a width < 1, degree < 1, a value that is not an integer, an ambient dimension above the cap) is one
line naming the value, exit 2, no traceback. And the Python entry ``from models.neuroalgebraic import
neuromanifold``."""

from __future__ import annotations

import dataclasses

import pytest

from flows.cli import main as cli_main
from tests.helpers import icml25

SLUG = "neuroalgebraic"


def _dim(capsys, *args: str) -> tuple[int, dict[str, str], str]:
    """(status, {field: value} of the printed lines, the first line)."""
    status = cli_main([SLUG, "dim", *args])
    res = capsys.readouterr()
    assert not res.err, res.err
    lines = res.out.strip().splitlines()
    fields = {}
    for line in lines[1:]:
        assert line.startswith("  "), line
        name, value = line.split(maxsplit=1)
        fields[name] = value
    return status, fields, lines[0]


def test_dim_of_the_exceptional_cubic_network(capsys):
    status, f, head = _dim(capsys, "--widths", "5,7,1", "--degree", "3", "--exact")
    assert status == 0 and head == "architecture 5,7,1 k=3"
    assert f == {
        "parameters": "42",
        "symmetries": "7",
        "expected": "35",
        "computed": "34 (float64 Jacobian rank)",
        "exact": "34 (rank over GF(2^31 - 1))",
        "ambient": "35",
        "defect": "1",
        "fiber": "8",
        "fills": "no",
    }


def test_dim_with_a_fixed_output_and_without_exact(capsys):
    status, f, head = _dim(capsys, "--widths", "3,2,1", "--degree", "2", "--fixed-output", "--seed", "3")
    assert status == 0 and head == "architecture 3,2,1 k=2 fixed"
    assert "exact" not in f
    # (w1 . x)^2 + (w2 . x)^2: PSD quadrics of rank <= 2 in 3 variables, 2 * 3 - 1 = 5; O(2) is the fiber
    assert (f["parameters"], f["symmetries"], f["expected"], f["ambient"]) == ("6", "0", "6", "6")
    assert (f["computed"], f["defect"], f["fiber"], f["fills"]) == (
        "5 (float64 Jacobian rank)",
        "1",
        "1",
        "no",
    )


def test_dim_of_a_network_that_fills(capsys):
    status, f, _ = _dim(capsys, "--widths", "3,4,1", "--degree", "2", "--exact")
    assert status == 0
    assert f["exact"].split()[0] == f["computed"].split()[0] == f["ambient"] == "6"
    assert (f["defect"], f["fiber"], f["fills"]) == ("0", "10", "yes")


# -------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--widths", "5", "--degree", "2"], "widths [5]: need at least an input and an output width"),
        (["--widths", "3,0,1", "--degree", "2"], "width 0: widths must be integers >= 1"),
        (["--widths", "3,-1,1", "--degree", "2"], "width -1: widths must be integers >= 1"),
        (["--widths", "3,2,1", "--degree", "0"], "degree 0: must be an integer >= 1"),
        (["--widths", "5,a", "--degree", "2"], "--widths '5,a': expected integers separated by commas"),
        (["--widths", "3,2.5,1", "--degree", "2"], "--widths '3,2.5,1': expected integers"),
        (["--widths", "3,2,1", "--degree", "2.5"], "--degree '2.5': expected one integer"),
        (
            ["--widths", "50,3,1", "--degree", "4"],
            "50,3,1 k=4: ambient dimension 292825 is above the cap 5000",
        ),
    ],
    ids=["one-width", "width-0", "width-neg", "degree-0", "width-a", "width-2.5", "degree-2.5", "cap"],
)
def test_bad_input_is_one_line_exit_2(capsys, args, message):
    assert cli_main([SLUG, "dim", *args]) == 2
    res = capsys.readouterr()
    assert not res.out and "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1 and res.err.startswith("icml25: error: "), res.err
    assert message in res.err, res.err


def test_two_degrees_are_one_line_exit_2(capsys):
    assert cli_main([SLUG, "dim", "--widths", "3,2,1", "--degree", "2,3"]) == 2
    res = capsys.readouterr()
    assert res.err.startswith("icml25: error: ") and "2,3" in res.err


@pytest.mark.slow  # two fresh interpreters, one importing torch (~3 s)
def test_console_exit_status(root):
    res = icml25(root, SLUG, "dim", "--widths", "3,0,1", "--degree", "3")
    assert res.returncode == 2 and not res.stdout
    assert res.stderr.strip() == "icml25: error: width 0: widths must be integers >= 1"
    ok = icml25(root, SLUG, "dim", "--widths", "4,2,5", "--degree", "1", "--exact")
    assert ok.returncode == 0 and not ok.stderr
    assert "  exact         14 (rank over GF(2^31 - 1))" in ok.stdout.splitlines()


# ------------------------------------------------------------------------------------------ the Python entry
def test_python_entry_returns_a_dimension():
    from models.neuroalgebraic import Architecture, Dimension, neuromanifold

    a = neuromanifold([3, 2, 1], 3)
    assert isinstance(a, Architecture) and a.widths == (3, 2, 1)
    d = a.dimension(exact=False)
    assert isinstance(d, Dimension) and dataclasses.is_dataclass(d)
    assert [f.name for f in dataclasses.fields(d)] == [
        "architecture",
        "params",
        "symmetries",
        "expected",
        "computed",
        "exact",
        "ambient",
        "defect",
        "fiber",
        "fills",
    ]
    assert dataclasses.astuple(d) == ("3,2,1 k=3", 8, 2, 6, 6, None, 10, 0, 2, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.computed = 7  # type: ignore[misc]
