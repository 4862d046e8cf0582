"""epd_serving's validate stage on tampered copies of the smoke profile's prepared files: arrivals that go back
in time inside one workload, a request without images, a missing column, a workload short of requests, a
negative or zero cost constant: each a clean ValidationFailed naming it; the untouched files pass. And prepare
with `source: trace` on a fixture lifetime-events trace (arrivals replayed, b_E refitted), then validate."""

from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import prepared_main, validation_failure

SLUG = "epd_serving"

main = functools.partial(prepared_main, slug=SLUG)
failure = functools.partial(validation_failure, slug=SLUG)


def _workloads(work) -> pd.DataFrame:
    return pd.read_csv(main(work) / "workloads.csv")


def _save(work, frame: pd.DataFrame) -> None:
    frame.to_csv(main(work) / "workloads.csv", index=False)


def _costs(work, **changes) -> None:
    path = main(work) / "costs.json"
    costs = json.loads(path.read_text())
    assert set(changes) <= set(costs)
    costs.update(changes)
    path.write_text(json.dumps(costs))


def _meta(work) -> dict:
    return json.loads((main(work) / "meta.json").read_text())


def test_untouched_files_pass(work):
    frame, meta = _workloads(work), _meta(work)
    assert list(frame.columns) == ["seed", "rate", "images", "request", "arrival", "text", "output"]
    assert meta["source"] == "poisson"
    assert len(frame) == meta["seeds"] * len(meta["rates"]) * len(meta["images"]) * meta["requests"]
    # arrivals coupled across rates: the same seed's workload at two rates differs only by the time scale
    low, high, images = min(meta["rates"]), max(meta["rates"]), meta["images"][0]
    at = frame[(frame.seed == 0) & (frame.images == images)]
    slow = at[at.rate == low].sort_values("request").arrival.to_numpy()
    fast = at[at.rate == high].sort_values("request").arrival.to_numpy()
    np.testing.assert_allclose(fast, slow * low / high, rtol=1e-12)
    run_stage(work, SLUG, "validate")
    assert (work / "data" / SLUG / "validated" / "validation.json").exists()


def test_decreasing_arrivals_in_one_workload_fail_naming_it(work):
    frame = _workloads(work)
    rate, images = frame.rate.max(), frame.images.max()
    rows = frame.index[(frame.seed == 0) & (frame.rate == rate) & (frame.images == images)]
    i, j = rows[5], rows[6]
    frame.loc[[i, j], "arrival"] = frame.loc[[j, i], "arrival"].to_numpy()  # request 5 after request 6
    assert frame.loc[i, "arrival"] > frame.loc[j, "arrival"]
    _save(work, frame)
    message = failure(work)
    assert "workload arrivals.non_decreasing" in message, message
    assert f"1 bad rows (seed=0 rate={float(rate)} images={images})" in message, message
    assert "workloads." not in message  # the table itself is fine


def test_a_request_without_images_fails_naming_workloads_images(work):
    frame = _workloads(work)
    frame.loc[7, "images"] = 0
    seed, rate = frame.loc[7, "seed"], frame.loc[7, "rate"]
    _save(work, frame)
    message = failure(work)
    assert "workloads.images" in message and "e.g. 0" in message, message
    assert f"(seed={seed} rate={rate} images=0 request=7)" in message, message


def test_a_deleted_column_fails_naming_it(work):
    _save(work, _workloads(work).drop(columns=["output"]))
    message = failure(work)
    assert "workloads.output (missing column)" in message, message


def test_a_negative_cost_constant_fails_naming_it(work):
    _costs(work, b_P=-0.07)
    message = failure(work)
    assert "costs.amount" in message and "(constant=b_P)" in message and "-0.07" in message, message


def test_a_zero_rate_constant_fails_but_a_zero_intercept_does_not(work):
    _costs(work, a_E=0.0, c_D=0.0, bw_pd=0.0)
    message = failure(work)
    assert "costs.positive" in message and "1 bad rows (constant=bw_pd)" in message, message
    assert "a_E" not in message and "c_D" not in message


# ---------------------------------------------------------------------------------------- source: trace
def _trace_root(prepared, tmp_path, issued, context):
    """A scratch root whose params read data/epd_serving/input/lifetime_events.json (written here)."""
    params = yaml.safe_load((prepared / "params.yaml").read_text())
    params["papers"] = {SLUG: params["papers"][SLUG]}
    params["papers"][SLUG]["prepare"].update(source="trace", trace_file="lifetime_events.json")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    folder = tmp_path / "data" / SLUG / "input"
    folder.mkdir(parents=True)
    doc = []
    for t, c in zip(issued, context, strict=True):
        events = [
            {"timestamp": t, "event_type": "issued"},
            {"timestamp": t + 0.01, "event_type": "preprocessed"},
        ]
        if c is not None:
            events += [
                {"timestamp": t + 0.02, "event_type": "context_begin"},
                {"timestamp": t + 0.02 + c, "event_type": "context_end"},
            ]
        events.append({"timestamp": t + 3.0, "event_type": "finished"})
        doc.append(events)
    path = folder / "lifetime_events.json"
    path.write_text(json.dumps(doc))
    return path, params["papers"][SLUG]["prepare"]


def test_prepare_replays_a_trace_and_refits_b_E_then_validate_passes(prepared, tmp_path):
    issued = [1000.0, 1000.5, 1002.0, 1002.0, 1005.0]
    _, pp = _trace_root(prepared, tmp_path, issued, [1.30, 1.339, None, 1.339, 1.5])
    run_stage(tmp_path, SLUG, "prepare")
    run_stage(tmp_path, SLUG, "validate")
    costs = json.loads((main(tmp_path) / "costs.json").read_text())
    # median context 1.339 s (of the four with a context stage), 2 images x 10 tiles, L = 20 + 1,320
    prefill_ms = 10 + 0.07 * 1340 + 1e-6 * 1340**2
    b_E = (1339 - prefill_ms - 5) / 20
    assert costs["b_E"] == pytest.approx(b_E, rel=1e-9) and costs["b_E"] == pytest.approx(61.42022, abs=1e-5)
    assert {k: v for k, v in costs.items() if k != "b_E"} == {
        k: v for k, v in json.loads((main(prepared) / "costs.json").read_text()).items() if k != "b_E"
    }
    meta = json.loads((main(tmp_path) / "meta.json").read_text())
    assert meta["source"] == "trace" and meta["requests"] == 5 and meta["seeds"] == 1
    assert meta["rates"] == [pytest.approx(4 / 5.0)] and meta["b_E_refit"] == pytest.approx(b_E, rel=1e-9)
    frame = _workloads(tmp_path)
    assert sorted(frame.images.unique()) == sorted(pp["images"]) and len(frame) == 5 * len(pp["images"])
    for _, g in frame.groupby("images"):
        np.testing.assert_allclose(g.arrival, [0.0, 0.5, 2.0, 2.0, 5.0])
        assert list(g.request) == list(range(5)) and set(g.seed) == {0} and set(g.rate) == {0.8}


def test_prepare_refuses_a_trace_with_decreasing_timestamps(prepared, tmp_path):
    path, _ = _trace_root(prepared, tmp_path, [5.0, 7.0, 6.0], [1.3, 1.3, 1.3])
    with pytest.raises(UserError, match=r"lifetime_events\.json: timestamps decrease at request 2") as info:
        run_stage(tmp_path, SLUG, "prepare")
    assert str(path) in str(info.value)
    assert not (main(tmp_path) / "workloads.csv").exists()


def test_prepare_refuses_a_trace_whose_context_leaves_no_encode_time(prepared, tmp_path):
    _trace_root(prepared, tmp_path, [5.0, 6.0], [0.05, 0.05])  # shorter than the prefill alone
    with pytest.raises(UserError, match=r"median context stage 0\.050 s leaves b_E = -\d"):
        run_stage(tmp_path, SLUG, "prepare")
