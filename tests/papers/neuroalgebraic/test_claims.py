"""neuroalgebraic: every claim against the stub that kills it. The quick profile's sweeps (117 shallow and 216 linear
architectures, rows built by the evaluate stage's own ``case_row``) and 200 descent trials, summary.json built as
the evaluate stage builds it (models/neuroalgebraic/experiment.py), the claims computed by the report's own claim
functions (tests.helpers.claim_verdict).

Stubs: the naive count min(r n, C(n + k - 1, k)) as the shallow "rank" (dims_shallow); the parameter count as the
linear "rank" (dims_linear); the spec's fixed 1e-7 threshold as the float rank (float_matches_exact); the signed
control W1 W0 in the sum-of-squares model's place (singular_attraction, singular_common)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import claim_verdict

SLUG = "neuroalgebraic"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    from models.neuroalgebraic.experiment import case_row, linear_cases, shallow_cases

    archs = shallow_cases((2, 3, 4, 5, 6), (2, 3, 4)) + linear_cases((1, 2, 3, 4, 5, 6))
    return pd.DataFrame([case_row(a, i) for i, a in enumerate(archs)])


@pytest.fixture(scope="module")
def descent() -> pd.DataFrame:
    from models.neuroalgebraic.descent import (
        predicted_singular,
        psd_descent,
        psd_optimum_loss,
        signed_descent,
        singular,
        targets,
    )

    rng = np.random.default_rng(0)
    T = targets(200, 6, rng)
    W, loss = psd_descent(T, 1e-3 * rng.standard_normal((200, 6, 4)), 4000, 0.01)
    A, B, _ = signed_descent(
        T, 1e-3 * rng.standard_normal((200, 6, 4)), 1e-3 * rng.standard_normal((200, 4, 6)), 4000, 0.01
    )
    return pd.DataFrame(
        {
            "predicted": predicted_singular(T, 4),
            "singular": singular(W, 4),
            "excess_loss": loss - psd_optimum_loss(T, 4),
            "control_singular": singular(A @ B, 4),
        }
    )


def evaluated(dest: Path, table: pd.DataFrame, descent: pd.DataFrame) -> Path:
    from models.neuroalgebraic.experiment import claims

    dest.mkdir(parents=True, exist_ok=True)
    (dest / "summary.json").write_text(json.dumps(claims(table, descent) | {"rank": 4, "size": 6}))
    return dest


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


CLAIMS = ("dims_shallow", "dims_linear", "float_matches_exact", "singular_attraction", "singular_common")


def test_the_method_holds_every_claim(root, table, descent, tmp_path):
    folder = evaluated(tmp_path, table, descent)
    for claim_id in CLAIMS:
        assert verdict(root, claim_id, folder)["passed"] == 1, claim_id


def test_the_naive_count_fails_dims_shallow(root, table, descent, tmp_path):
    stub = table.copy()
    sh = stub.family == "shallow"
    n = stub.widths.str.split(",").str[0].astype(int)
    r = stub.widths.str.split(",").str[1].astype(int)
    naive = [min(a * b, math.comb(a + k - 1, k)) for a, b, k in zip(n, r, stub.degree, strict=True)]
    stub.loc[sh, "exact"] = np.array(naive)[sh.to_numpy()]
    v = verdict(root, "dims_shallow", evaluated(tmp_path, stub, descent))
    assert v["passed"] == 0 and v["value"] >= 14, v  # every defective case


def test_the_parameter_count_fails_dims_linear(root, table, descent, tmp_path):
    stub = table.copy()
    li = stub.family == "linear"
    stub.loc[li, "exact"] = stub.loc[li, "params"]
    v = verdict(root, "dims_linear", evaluated(tmp_path, stub, descent))
    assert v["passed"] == 0 and v["value"] > 100, v


def test_the_fixed_threshold_fails_float_matches_exact(root, table, descent, tmp_path):
    stub = table.assign(float=table.float_spec)
    v = verdict(root, "float_matches_exact", evaluated(tmp_path, stub, descent))
    assert v["passed"] == 0 and v["value"] >= 1, v


def test_the_signed_control_fails_singular_attraction(root, table, descent, tmp_path):
    stub = descent.assign(singular=descent.control_singular)
    v = verdict(root, "singular_attraction", evaluated(tmp_path, table, stub))
    assert v["passed"] == 0 and v["value"] < 0.5, v


def test_the_signed_control_fails_singular_common(root, table, descent, tmp_path):
    stub = descent.assign(singular=descent.control_singular)
    v = verdict(root, "singular_common", evaluated(tmp_path, table, stub))
    assert v["passed"] == 0 and v["value"] < 0.05, v
