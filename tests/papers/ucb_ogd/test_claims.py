"""ucb_ogd: the claims against a stub. A uniform sampler behind the UCB interface (models.ucb_ogd.sampler.
uniform_stub_sampler: a UCBSampler whose select() is uniform at random) runs through the drivers the train stage
calls, on the same streams, and evaluate's own summary; the claims, computed through the report's claim functions
(tests.helpers.claim_verdict), all fail. The control, the paper's sampler holding every claim, is the committed
quick-profile report (and the slow test below at the same reduced scale)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from icml25.random import rng
from models.ucb_ogd.evaluation import summarize, write_evaluated
from models.ucb_ogd.experiment import digits_seed, regret_seed
from models.ucb_ogd.sampler import UCBSampler, uniform_stub_sampler
from models.ucb_ogd.sources import digits_pools
from tests.helpers import claim_verdict

SLUG = "ucb_ogd"
CLAIMS = ("worst_source_gain", "hard_source_allocation", "regret_rate")
SEEDS, HORIZON, REGRET_T = 4, 2000, (250, 500, 1000, 2000)


def evaluated(folder: Path, factory) -> Path:
    """The evaluated folder of a reduced run (4 seeds, T = 2000) with ``factory`` as the UCB sampler."""
    sources, allocation, regret = [], [], []
    for seed in range(SEEDS):
        pools = digits_pools(rng(0, "pools", seed))
        res = digits_seed(
            pools, HORIZON, rng(0, "streams", seed), methods=("ucb_ogd", "uniform"), ucb_factory=factory
        )
        sources.append(res["sources"].assign(seed=seed))
        allocation.append(res["allocation"].assign(seed=seed))
        for K in (3, 5):
            frame = regret_seed(K, REGRET_T, rng(0, "planted", K, seed), ucb_factory=factory)
            regret.append(frame.assign(seed=seed))
    result = summarize(pd.concat(sources), pd.concat(allocation), pd.concat(regret))
    result["summary"].update({"eta": 0.0, "radius": 10.0, "grad_of_clipped": False})
    write_evaluated(folder, result)
    return folder


def verdicts(root: Path, folder: Path) -> dict[str, int]:
    return {c: claim_verdict(root, SLUG, c, folder)["passed"] for c in CLAIMS}


def test_a_uniform_sampler_behind_the_ucb_interface_fails_every_claim(root, tmp_path):
    """worst_source_gain, hard_source_allocation and regret_rate all fail when UCB's choice is uniform."""
    folder = evaluated(tmp_path / "evaluated", uniform_stub_sampler)
    assert verdicts(root, folder) == {"worst_source_gain": 0, "hard_source_allocation": 0, "regret_rate": 0}


@pytest.mark.slow
def test_the_paper_sampler_holds_every_claim_at_the_same_scale(root, tmp_path):
    """The control of the stub test: the same reduced run with the UCB sampler holds all three (about 10 s)."""
    folder = evaluated(tmp_path / "evaluated", lambda K, rng: UCBSampler(K))
    assert verdicts(root, folder) == dict.fromkeys(CLAIMS, 1)
