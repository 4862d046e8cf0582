"""sr_pareto's result claims against stubs and broken variants of the method: each claim is computed by the
paper's own claim function (tests.helpers.claim_verdict) from an evaluated folder written by the real stages
(prepare, train, evaluate run in a scratch folder, a part of the method replaced) or by the evaluate stage's own
writer (models.sr_pareto.evaluation.write_evaluated) from stubbed fronts, and must fail.

- ``exact_recovery``: fronts from a random search (20 expressions of each length drawn from the enumeration,
  fitted as usual) and from gplearn's final population (no fitted constants) miss a planted expression;
- ``karva_misses_shapes``: a "Karva" space that reaches every tree shape (the enumeration replaced by all trees,
  as a decoder that does not stop at the head's breadth-first slots would) recovers the planted chain, so the gap
  the claim gates vanishes;
- ``optimizers_close``: one optimiser that returns its start (CG here) falls behind the other seven;
- ``fast_path_faithful`` (an invariant, checked the same way): a screen that leaves every nonlinear expression at
  the paper's start, with no refinement, falls below the protocol.

The scratch pipelines take the smoke profile's params (a small grammar, Mul and Add: 543 trees of two features up to
length 7, of which the Karva L = 3 space holds 183) on one data set each, so that each runs in about a second; the
positive control of each claim is the smoke pipeline itself, without a stub.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from icml25.io import write_json
from icml25.runner import run_stage
from tests.helpers import claim_verdict, paper_params

SLUG = "sr_pareto"
pytestmark = pytest.mark.filterwarnings("ignore")


def pipeline(base, where, datasets, **sections):
    """prepare, train and evaluate of sr_pareto in the scratch folder ``where``: the params of the project at
    ``base`` (the smoke workspace) with these ``datasets`` and ``sections`` overrides; returns the evaluated
    folder."""
    params = paper_params(base, SLUG, datasets=datasets)
    params["papers"][SLUG]["evaluate"].update(gplearn_population=10, gplearn_generations=1)  # no claim here
    for name, values in sections.items():
        params["papers"][SLUG][name].update(values)
    where.mkdir(parents=True, exist_ok=True)
    (where / "params.yaml").write_text(yaml.safe_dump(params))
    for stage in ("prepare", "train", "evaluate"):
        run_stage(where, SLUG, stage)
    return where / "data" / SLUG / "evaluated" / "main"


@pytest.fixture(scope="module")
def control(smoke):
    """The smoke pipeline as it is (shared with test_pipeline.py): the positive control of every stub below."""
    work = smoke.run(SLUG)
    return work, work / "data" / SLUG / "evaluated" / "main"


def verdict(where, claim_id, folder):
    return claim_verdict(where, SLUG, claim_id, folder)


def test_control_holds(control):
    where, folder = control
    for cid in ("exact_recovery", "karva_misses_shapes", "optimizers_close", "fast_path_faithful"):
        assert verdict(where, cid, folder)["passed"] == 1, cid


def test_complete_enumeration_fails_karva_misses_shapes(control, root, tmp_path, monkeypatch):
    from models.sr_pareto import front
    from models.sr_pareto.grammar import enumerate_full

    real = verdict(control[0], "karva_misses_shapes", control[1])
    assert real["passed"] == 1 and real["value"] > 0.01
    # the "Karva" space replaced by every tree up to the head's longest length (2L + 1 nodes)
    monkeypatch.setattr(front, "enumerate_karva", lambda d, head, ops: enumerate_full(d, 2 * head + 1, ops))
    folder = pipeline(control[0], tmp_path, ["planted_len7_chain"])
    rec = verdict(tmp_path, "karva_misses_shapes", folder)
    assert rec["passed"] == 0 and abs(rec["value"]) < 1e-8, rec
    assert "planted_len7_chain@7 1 vs 1" in rec["note"]


def test_optimizer_returning_its_start_fails_optimizers_close(control, root, tmp_path, monkeypatch):
    from scipy.optimize import OptimizeResult

    from models.sr_pareto import fit

    real_minimize = fit.minimize

    def minimize(cost, x0, method):
        if method == "CG":  # a broken optimiser: it never moves
            return OptimizeResult(x=np.asarray(x0), nit=0, success=True)
        return real_minimize(cost, x0, method=method)

    monkeypatch.setattr(fit, "minimize", minimize)
    folder = pipeline(control[0], tmp_path, ["friedman1"])
    rec = verdict(tmp_path, "optimizers_close", folder)
    assert rec["passed"] == 0 and rec["value"] > 0.05, rec
    assert "lowest for CG" in rec["note"]


def test_broken_screen_without_refinement_fails_fast_path_faithful(control, root, tmp_path, monkeypatch):
    from models.sr_pareto import batch

    monkeypatch.setattr(
        batch, "levenberg_marquardt", lambda g, rows, c0, y, iters=60: (c0, np.zeros(len(c0)))
    )
    folder = pipeline(control[0], tmp_path, ["planted_len7_chain"], train={"refine_top": 0})
    rec = verdict(tmp_path, "fast_path_faithful", folder)
    assert rec["passed"] == 0, rec


def test_random_search_and_gplearn_fronts_fail_exact_recovery(control, root, tmp_path, monkeypatch):
    from models.sr_pareto import evaluation, search
    from models.sr_pareto.data import planted, planted_info
    from models.sr_pareto.front import best_by_length, standardize
    from models.sr_pareto.grammar import OPS
    from models.sr_pareto.peer import gplearn_population

    sets = ["planted_len5", "planted_len7_chain"]
    # random search: the train stage fits 20 expressions of each length drawn from the whole grammar (seeded)
    real_expressions = search.expressions

    def sampled(d, max_length, enumeration="full", ops=None):
        every = real_expressions(d, max_length, enumeration, ops) if ops else real_expressions(d, max_length)
        rng = np.random.default_rng(0)
        out = []
        for n in range(1, max_length + 1, 2):
            at = [e for e in every if search.length(e) == n]
            out += [at[i] for i in sorted(rng.choice(len(at), size=min(20, len(at)), replace=False))]
        return out

    monkeypatch.setattr(search, "expressions", sampled)
    folder = pipeline(
        control[0],
        tmp_path / "random",
        sets,
        prepare={"operators": list(OPS)},
        train={"karva_datasets": [], "optimizer_datasets": []},
    )
    rec = verdict(tmp_path / "random", "exact_recovery", folder)
    assert rec["passed"] == 0 and rec["value"] < 0.999, rec

    # gplearn: the best program of each length of its final population is the front
    comp = []
    for name in sets:
        frame = planted(name, 200, 0)
        Xt, yz, _ = standardize(frame[["x0", "x1"]].to_numpy(), frame.target.to_numpy())
        pop = pd.DataFrame(gplearn_population(Xt.T, yz, seed=0, population_size=50, generations=2))
        front = best_by_length(pop.rename(columns={"program": "expression"}))
        info = planted_info(name)
        fronts = {"full": front, "bfgs": None, "karva": None, "karva_fast": None}
        comp += evaluation.comparison_rows(name, 2, fronts, "karva3", info["length"], info["karva3"])
    folder = tmp_path / "gplearn"
    folder.mkdir()
    evaluation.write_evaluated(folder, comp, [], [], [])
    write_json(folder / "meta.json", {"max_length": 7})
    rec = verdict(root, "exact_recovery", folder)
    assert rec["passed"] == 0 and rec["value"] < 0.999, rec
