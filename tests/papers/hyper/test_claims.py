"""hyper: every claim against the broken variants that kill it. One batch on the grid (2,000 episodes, 2 seeds)
holds the method's agents and the stubs as agents of their own (``<agent>:<flaw>``, models/hyper/agents.py);
a stub's rows replace its agent's, summary.json is built as the evaluate stage builds it
(models/hyper/evaluation.py), and the claims are computed by the report's own claim functions
(tests.helpers.claim_verdict)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import claim_verdict

SLUG = "hyper"
ALL = (0.01, 0.1, 1.0, 10.0, 100.0)
LARGE = (1.0, 10.0, 100.0)
CLAIMS = ("curiosity_overexplores", "hyper_robust", "hyper_near_optimal", "hyper_matches_decouple")


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    from models.hyper.agents import Run, sweep
    from models.hyper.mdp import grid

    plan = {
        "curiosity": LARGE,
        "curiosity:bonus_free": LARGE,
        "decouple": ALL,
        "hyper": ALL,
        "hyper:eval_pi": LARGE,
        "hyper:bonus_in_mu": LARGE,
        "hyper:never_explore": ALL,
    }
    runs = [Run(a, b, s) for a, betas in plan.items() for b in betas for s in range(2)]
    return pd.DataFrame(sweep(grid(), runs, 2000, every=2000))


def evaluated(rows: pd.DataFrame, dest: Path, **stubs: str) -> Path:
    """summary.json with each ``agent=stub`` replacing the agent's rows by the stub's (or by the step-left-and-stay
    policy's, for ``"stay"``)."""
    from models.hyper.agents import Run, fixed_policy_rows
    from models.hyper.evaluation import claims, table
    from models.hyper.mdp import grid

    df = rows[~rows.agent.str.contains(":")].copy()
    for agent, stub in stubs.items():
        mine = df[df.agent == agent]
        if stub == "stay":
            runs = [Run(agent, r.beta, r.seed) for r in mine.itertuples()]
            new = pd.DataFrame(fixed_policy_rows(grid(), 1, runs, int(mine.episode.max())))
        else:
            new = rows[rows.agent == f"{agent}:{stub}"].assign(agent=agent)
        df = pd.concat([df[df.agent != agent], new], ignore_index=True)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "summary.json").write_text(json.dumps({"claims": claims(table(df))}))
    return dest


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


def test_the_method_holds_every_claim(root, rows, tmp_path):
    folder = evaluated(rows, tmp_path)
    recs = {c: verdict(root, c, folder) for c in CLAIMS}
    assert {c: r["passed"] for c, r in recs.items()} == dict.fromkeys(CLAIMS, 1), recs


def test_curiosity_evaluated_bonus_free_fails_curiosity_overexplores(root, rows, tmp_path):
    rec = verdict(root, "curiosity_overexplores", evaluated(rows, tmp_path, curiosity="bonus_free"))
    assert rec["passed"] == 0


@pytest.mark.parametrize("stub", ["eval_pi", "bonus_in_mu", "stay"])
def test_hyper_evaluated_through_q_pi_fails_hyper_robust(root, rows, tmp_path, stub):
    """Also the bonus in Q_mu's target, and the step-left-and-stay policy (the issue's three stubs)."""
    rec = verdict(root, "hyper_robust", evaluated(rows, tmp_path, hyper=stub))
    assert rec["passed"] == 0


def test_step_left_and_stay_fails_hyper_near_optimal(root, rows, tmp_path):
    rec = verdict(root, "hyper_near_optimal", evaluated(rows, tmp_path, hyper="stay"))
    assert rec["passed"] == 0 and rec["value"] == pytest.approx(0.351, abs=0.001)


def test_hyper_that_never_explores_fails_hyper_matches_decouple(root, rows, tmp_path):
    rec = verdict(root, "hyper_matches_decouple", evaluated(rows, tmp_path, hyper="never_explore"))
    assert rec["passed"] == 0
