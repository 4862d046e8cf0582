"""A pytest plugin: the default run's time per paper (tests/papers/<slug>/, fixtures included) and per
framework area, printed at the end of the run so that every paper sees its cost against the budget."""

from __future__ import annotations

from collections import defaultdict

import pytest

_TIMES: dict[str, float] = defaultdict(float)
#: The budget per paper's default tests (seconds on 2 cores): 19 papers must fit in 10 minutes with the core.
PAPER_BUDGET_S = 20.0


def group(nodeid: str) -> str:
    parts = nodeid.split("::")[0].split("/")
    if len(parts) > 3 and parts[:2] == ["tests", "papers"]:
        return parts[2]
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _TIMES[group(report.nodeid)] += report.duration


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not _TIMES:
        return
    tr = terminalreporter
    tr.section("time per paper and area (setup + call + teardown)")
    papers = {k: v for k, v in _TIMES.items() if not k.startswith("tests")}
    for name, seconds in sorted(papers.items(), key=lambda kv: -kv[1]):
        flag = "  over budget" if seconds > PAPER_BUDGET_S else ""
        tr.write_line(f"{name:<24} {seconds:7.1f} s{flag}")
    for name, seconds in sorted((k, v) for k, v in _TIMES.items() if k.startswith("tests")):
        tr.write_line(f"{name:<24} {seconds:7.1f} s")
    tr.write_line(f"{'total':<24} {sum(_TIMES.values()):7.1f} s  (papers: {sum(papers.values()):.1f} s)")
