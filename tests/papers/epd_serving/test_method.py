"""epd_serving: the simulation's own properties, each against a hand computation.

The event engine against the M/D/1 queue's mean wait; conservation and determinism of every system; intra-request
parallelism (IRP) on one request (encode end and TTFT to the last term); the aggregated system's stalled decode
against PD and EPD, step by step from ``decode_step``; peak memory by role on one request; the broken
``prefill_after_first_shard`` variant; goodput interpolation; coupled Poisson workloads; the lifetime-events
trace reader and the b_E refit; the cost-model presets and their checks. At the end, two defects found while
writing these tests, now fixed: a server that started two jobs when a completion resubmitted to it, and a run
that returned requests the KV pool could never hold as unfinished instead of refusing them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from models.epd_serving import cost as cost_mod
from models.epd_serving import engine, experiment
from models.epd_serving.cost import CostModel, calibrate_b_E, cost_model
from models.epd_serving.systems import simulate
from models.epd_serving.workload import Workload, read_trace

C = CostModel()
GB = 1e9
KV = 28 * 2 * 4 * 128 * 2  # bytes of KV per token: layers x (K, V) x kv heads x head dim x 2 B = 57,344
ONE_IMAGE_TOKENS = 10 * 66  # tiles per image x MM tokens per tile


def _one(images: int, arrival: float = 1.0, text: int = 20, output: int = 10) -> Workload:
    return Workload(np.array([arrival]), np.array([images]), np.array([text]), np.array([output]))


def _only(res):
    (r,) = res.requests
    return r


# ------------------------------------------------------------------------------------------- the engine
def test_fifo_server_mean_wait_matches_md1():
    lam, s, n = 0.5, 1.0, 50_000
    rho = lam * s
    arrivals = np.cumsum(np.random.default_rng(0).standard_exponential(n)) / lam
    loop = engine.Loop()
    server = engine.FifoServer(loop, 0, engine.Memory(0.0))
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)

    def done(job, t0):
        start[job] = t0
        end[job] = loop.now

    for i, a in enumerate(arrivals):
        loop.at(float(a), server.submit, i, s, done)
    loop.run()
    assert loop.events == 2 * n  # one arrival and one completion per job
    np.testing.assert_allclose(end - start, s, atol=1e-9)  # deterministic service
    assert np.all(start >= arrivals) and np.all(start[1:] >= end[:-1] - 1e-9)  # FIFO, one at a time
    wait = (start - arrivals).mean()
    pk = rho * s / (2 * (1 - rho))  # Pollaczek-Khinchine for M/D/1: 0.5 s
    assert abs(wait - pk) / pk < 0.05, wait
    assert server.busy_time == pytest.approx(n * s)


def test_loop_runs_ties_in_scheduling_order_and_refuses_the_past():
    loop = engine.Loop()
    seen = []
    for name in "abc":
        loop.at(2.0, seen.append, name)
    loop.at(1.0, seen.append, "first")
    loop.run()
    assert seen == ["first", "a", "b", "c"] and loop.now == 2.0
    with pytest.raises(ValueError, match="in the past"):
        loop.at(1.5, seen.append, "late")


def test_shortest_prefers_the_least_loaded_then_the_lowest_index():
    loop = engine.Loop()
    servers = [engine.FifoServer(loop, i, engine.Memory(0.0)) for i in range(3)]
    assert engine.shortest(servers) is servers[0]
    servers[0].submit("x", 1.0, lambda *_: None)
    assert engine.shortest(servers) is servers[1]
    servers[1].submit("y", 1.0, lambda *_: None)
    servers[1].submit("z", 1.0, lambda *_: None)
    assert engine.shortest(servers) is servers[2]


# -------------------------------------------------------------------------------------------- conservation
@pytest.mark.parametrize("name", list(experiment.SYSTEMS))
def test_every_system_conserves_requests_and_is_deterministic(name):
    w = Workload.poisson(2.0, 60, 4, np.random.default_rng(3))
    t, peaks, events = experiment.run_system(name, w, C)
    assert np.all(np.isfinite(t["finish"])) and np.all(np.isfinite(t["first_token"]))
    assert np.array_equal(t["generated"], t["output"]) and np.array_equal(t["output"], w.output)
    assert np.array_equal(t["arrival"], w.arrivals)
    assert np.all(t["first_token"] <= t["finish"])
    ttft = t["first_token"] - t["arrival"]
    assert np.all(ttft >= t["bound"] - 1e-12)
    assert np.any(ttft > t["bound"] + 1e-3)  # there is queueing at 2 req/s with 4 images
    L = 20 + 4 * ONE_IMAGE_TOKENS
    assert np.all(t["L"] == L)
    if name == "epd":  # the no-queue bound by hand: one image's encode + its transfer + prefill
        bound = (
            (5 + 61 * 10) / 1000 + ONE_IMAGE_TOKENS * 3584 * 2 / 150e9 + (10 + 0.07 * L + 1e-6 * L * L) / 1000
        )
        np.testing.assert_allclose(t["bound"], bound, rtol=1e-12)
    if name.startswith("epd"):
        assert np.all(t["prefill_start"] >= t["last_shard_at_p"] - 1e-12)
        assert np.all(t["last_shard_at_p"] >= t["encode_end"])
    else:
        assert np.all(np.isnan(t["last_shard_at_p"]))
    again, peaks2, events2 = experiment.run_system(name, w, C)
    assert events2 == events and peaks2 == peaks
    assert t.keys() == again.keys()
    for k in t:
        np.testing.assert_array_equal(t[k], again[k])


def test_allocations_are_every_split_of_eight():
    a = experiment.allocations(8)
    assert len(a) == 21 and a == sorted(a) and len(set(a)) == 21  # C(7, 2) splits
    assert all(sum(x) == 8 and min(x) >= 1 for x in a)
    assert a[0] == (1, 1, 6) and a[-1] == (6, 1, 1)


# --------------------------------------------------------------------------------------------------- IRP
def test_irp_encodes_images_in_parallel_when_encoders_are_free():
    e1 = 0.615  # a_E + b_E * 10 tiles = 5 + 610 ms
    assert C.encode(C.tiles_per_image) == pytest.approx(e1, abs=1e-15)
    L = 20 + 3 * ONE_IMAGE_TOKENS  # 2,000 tokens
    prefill = (10 + 0.07 * 2000 + 1e-6 * 2000**2) / 1000  # 0.154 s
    move_one = ONE_IMAGE_TOKENS * 3584 * 2 / 150e9  # one image's MM tokens over the E -> P link
    r = _only(simulate("epd", _one(3), C, (4, 1, 1), irp=True))
    assert r.L == L
    assert r.encode_end - 1.0 == pytest.approx(e1, abs=1e-12)
    assert r.last_shard_at_p - 1.0 == pytest.approx(e1 + move_one, abs=1e-12)
    assert r.first_token - 1.0 == pytest.approx(e1 + move_one + prefill, abs=1e-12)
    assert r.first_token - 1.0 == pytest.approx(r.bound, abs=1e-12)  # the bound is tight here
    # without IRP one encoder takes all 30 tiles and moves all 1,980 tokens
    r = _only(simulate("epd", _one(3), C, (4, 1, 1), irp=False))
    e3 = (5 + 61 * 30) / 1000
    assert r.encode_end - 1.0 == pytest.approx(e3, abs=1e-12)
    assert r.first_token - 1.0 == pytest.approx(e3 + 3 * move_one + prefill, abs=1e-12)


def test_irp_with_more_images_than_encoders_queues_the_shards():
    r = _only(simulate("epd", _one(4), C, (2, 1, 1), irp=True))
    assert r.encode_end - 1.0 == pytest.approx(2 * 0.615, abs=1e-12)
    L = 20 + 4 * ONE_IMAGE_TOKENS
    prefill = (10 + 0.07 * L + 1e-6 * L * L) / 1000
    assert r.first_token - 1.0 == pytest.approx(
        2 * 0.615 + ONE_IMAGE_TOKENS * 7168 / 150e9 + prefill, abs=1e-12
    )
    res = simulate("epd", _one(4), C, (2, 1, 1), irp=True)
    assert res.busy["E"] == pytest.approx(4 * 0.615)  # four one-image shards, whatever the split


# ---------------------------------------------------------------------------------------- stalled decode
def _two(b_arrival: float) -> Workload:
    """A (1 image, 10 output tokens) at 0 and B (1 image, 20 output tokens) at ``b_arrival``."""
    return Workload(np.array([0.0, b_arrival]), np.array([1, 1]), np.array([20, 20]), np.array([10, 20]))


def _step(contexts) -> float:
    return (8 + 1e-5 * sum(contexts) + 0.1 * len(contexts)) / 1000  # a_D + b_D sum ctx + c_D batch (ms)


def _decode_span(start: float, L: int, steps: int, join_at: float, L_b: int) -> float:
    """Hand-run decode of A from ``start``: A alone until the first step boundary at or after ``join_at``,
    where B (context L_b + 1) joins the batch; returns the time A's ``steps`` steps take."""
    t, b_ctx = start, None
    for k in range(1, steps + 1):
        if b_ctx is None and t >= join_at:
            b_ctx = L_b + 1
        t += _step([L + k] + ([b_ctx] if b_ctx is not None else []))
        if b_ctx is not None:
            b_ctx += 1
    return t - start


def test_aggregated_decode_stalls_for_a_new_requests_encode_and_prefill():
    L = 20 + ONE_IMAGE_TOKENS  # 680
    te_tp = 0.615 + (10 + 0.07 * L + 1e-6 * L * L) / 1000  # encode + prefill of one 1-image request
    d = [_step([L + k]) for k in (1, 2, 3)]
    t_b = te_tp + d[0] + d[1] + d[2] / 2  # B arrives in the middle of A's third decode step
    a, b = simulate("aggregated", _two(t_b), C, (1,)).requests
    assert a.first_token == pytest.approx(te_tp, abs=1e-12)
    # A's steps 1-3 alone, then B's encode + prefill with A stalled, then steps 4-9 with B in the batch
    want = sum(d) + te_tp + sum(_step([L + k, L + k - 3]) for k in range(4, 10))
    assert a.finish - a.first_token == pytest.approx(want, abs=1e-12)
    assert b.first_token == pytest.approx(te_tp + sum(d) + te_tp, abs=1e-12)
    tpot = (a.finish - a.first_token) / 9
    assert tpot > te_tp / 9 > 0.07  # one stall is worth ~75 ms of A's TPOT, far above its ~8 ms steps


@pytest.mark.parametrize(("system", "gpus"), [("pd", (2, 1)), ("epd", (2, 2, 1))])
def test_disaggregated_decode_is_not_stalled(system, gpus):
    L = 20 + ONE_IMAGE_TOKENS
    te, tp = 0.615, (10 + 0.07 * L + 1e-6 * L * L) / 1000
    to_p = ONE_IMAGE_TOKENS * 3584 * 2 / 150e9 if system == "epd" else 0.0
    to_d = L * KV / 150e9
    t_b = 0.012  # B's prefill (on a second P GPU) overlaps A's decode: B joins A's batch, A never waits
    a, b = simulate(system, _two(t_b), C, gpus).requests
    assert a.first_token == pytest.approx(te + to_p + tp, abs=1e-12)
    assert b.first_token == pytest.approx(t_b + te + to_p + tp, abs=1e-12)
    want = to_d + _decode_span(a.first_token + to_d, L, 9, b.first_token + to_d, L)
    assert a.finish - a.first_token == pytest.approx(want, abs=1e-12)
    alone = to_d + sum(_step([L + k]) for k in range(1, 10))
    assert alone < a.finish - a.first_token < alone + 0.005  # B costs A only its share of the batched steps


# ------------------------------------------------------------------------------------------------ memory
def test_peak_memory_by_role_on_one_request():
    act_one = 0.05 * 10  # GB of activations for one image's 10 tiles
    mm_one = ONE_IMAGE_TOKENS * 3584 * 2 / GB
    L, out = 20 + 2 * ONE_IMAGE_TOKENS, 10
    # EPD + IRP on one encoder: shard 1's MM cache still sits on E when shard 2 starts encoding
    p = simulate("epd", _one(2), C, (1, 1, 1), irp=True).peaks
    assert p["E"] == [pytest.approx(0.9 + act_one + mm_one, abs=1e-12)]
    assert p["P"] == [pytest.approx(15.2 + max(2 * mm_one, L * KV / GB), abs=1e-12)]
    assert p["D"] == [pytest.approx(15.2 + (L + out) * KV / GB, abs=1e-12)]
    # two encoders: each holds one image's activations, then its MM cache
    p = simulate("epd", _one(2), C, (2, 1, 1), irp=True).peaks
    assert p["E"] == [pytest.approx(0.9 + act_one, abs=1e-12)] * 2
    # without IRP one job holds both images' activations
    p = simulate("epd", _one(2), C, (1, 1, 1), irp=False).peaks
    assert p["E"] == [pytest.approx(0.9 + 2 * act_one, abs=1e-12)]
    # an encoder that also loads the LLM
    p = simulate("epd", _one(2), C, (1, 1, 1), irp=True, encoder_holds_llm=True).peaks
    assert p["E"] == [pytest.approx(0.9 + 15.2 + act_one + mm_one, abs=1e-12)]
    # PD fuses encode into P; aggregated holds both models
    p = simulate("pd", _one(2), C, (1, 1)).peaks
    assert p["P"] == [pytest.approx(0.9 + 15.2 + 2 * act_one, abs=1e-12)]
    assert p["D"] == [pytest.approx(15.2 + (L + out) * KV / GB, abs=1e-12)]
    p = simulate("aggregated", _one(2), C, (2,)).peaks
    assert p["aggregated"] == [pytest.approx(0.9 + 15.2 + 2 * act_one, abs=1e-12), pytest.approx(16.1)]


def test_kv_sizes_by_hand():
    assert C.kv_bytes_per_token == KV == 57_344
    assert C.mm_tokens(2) == 1320 and C.kv_blocks(1350) == 85 and C.kv_blocks(1344) == 84
    assert C.kv_pool_blocks(15.2) == int((0.5 * 80 - 15.2) * GB // (KV * 16))
    assert C.kv_pool_blocks(45.0) == 0


# ------------------------------------------------------------------------------------- the broken variant
def test_prefill_after_first_shard_starts_before_the_last_shard_arrives():
    bad = _only(simulate("epd", _one(2), C, (1, 1, 1), irp=True, prefill_after_first_shard=True))
    move = ONE_IMAGE_TOKENS * 7168 / 150e9
    assert bad.prefill_start == pytest.approx(0.615 + move + 1.0, abs=1e-12)
    assert bad.last_shard_at_p == pytest.approx(2 * 0.615 + move + 1.0, abs=1e-12)
    assert bad.prefill_start < bad.last_shard_at_p
    good = _only(simulate("epd", _one(2), C, (1, 1, 1), irp=True))
    assert good.prefill_start == good.last_shard_at_p == pytest.approx(2 * 0.615 + move + 1.0, abs=1e-12)
    t = simulate("epd", Workload.poisson(1.0, 40, 4, np.random.default_rng(1)), C, (6, 1, 1)).table()
    assert np.all(t["prefill_start"] >= t["last_shard_at_p"])


# ------------------------------------------------------------------------------------------------ goodput
def test_goodput_interpolates_between_the_rates_around_the_level():
    # attainment crosses 0.9 between 1 req/s (0.95) and 2 req/s (0.85): halfway, 1.5 req/s
    assert experiment.goodput([2.0, 0.5, 1.0], [0.85, 1.0, 0.95]) == (pytest.approx(1.5), "interpolated")
    # 0.96 at 1, 0.8 at 3: 1 + (0.96 - 0.9) / 0.16 * 2 = 1.75
    assert experiment.goodput([1.0, 3.0], [0.96, 0.8]) == (pytest.approx(1.75), "interpolated")
    # the first crossing counts, even if attainment recovers later
    assert experiment.goodput([1.0, 2.0, 3.0], [1.0, 0.8, 1.0]) == (pytest.approx(1.5), "interpolated")
    assert experiment.goodput([0.25, 1.0], [0.89, 0.5]) == (0.0, "below")
    assert experiment.goodput([0.25, 1.0, 4.0], [1.0, 0.95, 0.9]) == (4.0, "at least")


def test_attainment_needs_both_slos_strictly():
    ttft = np.array([1.0, 1.4, 0.5, 0.5])
    tpot = np.array([0.01, 0.01, 0.04, 0.039])
    assert experiment.attainment(ttft, tpot, 1.4, 0.04) == 0.5


# ----------------------------------------------------------------------------------------------- workload
def test_poisson_arrivals_are_coupled_across_rates():
    one = Workload.poisson(1.0, 200, 2, np.random.default_rng(7))
    two = Workload.poisson(2.0, 200, 2, np.random.default_rng(7))
    gaps = np.random.default_rng(7).standard_exponential(200)
    np.testing.assert_array_equal(one.arrivals, np.cumsum(gaps))
    np.testing.assert_array_equal(two.arrivals, one.arrivals / 2)
    assert np.all(one.images == 2) and np.all(one.text == 20) and np.all(one.output == 10)
    other = Workload.poisson(1.0, 200, 2, np.random.default_rng(8))
    assert not np.array_equal(other.arrivals, one.arrivals)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Workload.poisson(0.0, 5, 2, np.random.default_rng(0)), "rate must be > 0, got 0.0"),
        (lambda: Workload.poisson(-1.0, 5, 2, np.random.default_rng(0)), "rate must be > 0, got -1.0"),
        (lambda: Workload.poisson(float("nan"), 5, 2, np.random.default_rng(0)), "rate must be > 0"),
        (lambda: Workload.poisson(1.0, 5, 0, np.random.default_rng(0)), "images must be >= 1, got 0"),
        (
            lambda: Workload(np.array([0.0, 2.0, 1.0]), np.ones(3, int), np.ones(3, int), np.ones(3, int)),
            r"arrival 2 \(1.0\) is before arrival 1",
        ),
        (lambda: Workload.replay(np.array([3.0, 2.0]), 2), r"arrival 1 \(2.0\) is before arrival 0"),
        (lambda: Workload.replay(np.array([0.0, 1.0]), 0), ">= 1 image"),
        (
            lambda: Workload(np.zeros(2), np.ones(2, int), np.ones(3, int), np.ones(2, int)),
            "text has 3 entries, arrivals 2",
        ),
    ],
)
def test_bad_workloads_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _events(issued: float, begin: float | None = None, end: float | None = None) -> list[dict]:
    ev = [
        {"timestamp": issued, "event_type": "issued"},
        {"timestamp": issued + 0.01, "event_type": "preprocessed"},
    ]
    if begin is not None:
        ev += [
            {"timestamp": begin, "event_type": "context_begin"},
            {"timestamp": end, "event_type": "context_end"},
        ]
    ev.append({"timestamp": (end or issued) + 0.5, "event_type": "finished"})
    return ev


def test_read_trace_gives_relative_arrivals_and_context_durations(tmp_path):
    doc = [
        _events(100.0, 100.1, 101.4),
        _events(100.5, 101.5, 102.75),
        _events(102.0),
        _events(102.0, 102.8, 104.0),
    ]
    path = tmp_path / "lifetime_events.json"
    path.write_text(json.dumps(doc))
    tr = read_trace(path)
    np.testing.assert_allclose(tr.arrivals, [0.0, 0.5, 2.0, 2.0])
    np.testing.assert_allclose(tr.context, [1.3, 1.25, 1.2])  # the request without a context stage is skipped


def test_read_trace_refuses_bad_files(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps([_events(5.0), _events(7.0), _events(6.0)]))
    with pytest.raises(ValueError, match=r"t\.json: timestamps decrease at request 2 \(6\.0 after 7\.0\)"):
        read_trace(path)
    for doc, match in [
        ({"issued": 1.0}, "expected a non-empty JSON list"),
        ([], "expected a non-empty JSON list"),
        ([_events(1.0), {"a": 1}], "request 1 is not a list of events"),
        ([[{"timestamp": 1.0}]], "request 0 has an event without timestamp"),
        ([[{"timestamp": 1.0, "event_type": "finished"}]], "request 0 has no 'issued' event"),
        ([[{"timestamp": "soon", "event_type": "issued"}]], "timestamp 'soon' is not a number"),
    ]:
        path.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match=match):
            read_trace(path)
    path.write_text("[not json")
    with pytest.raises(ValueError, match="not a readable JSON trace"):
        read_trace(path)


def test_calibrate_b_E_on_the_official_context_stage():
    text = 1354 - C.mm_tokens(2)  # 34 text tokens + 1,320 MM tokens
    b_E = calibrate_b_E(1.339, 2, text, C)
    prefill_ms = 10 + 0.07 * 1354 + 1e-6 * 1354**2  # 106.613316
    assert b_E == pytest.approx((1339 - prefill_ms - 5) / 20, rel=1e-12)
    assert b_E == pytest.approx(61.369, abs=1e-3) and round(b_E) == C.b_E
    refit = cost_model(b_E=b_E)
    assert refit.encode(20) + refit.prefill(1354) == pytest.approx(1.339, abs=1e-12)


# ------------------------------------------------------------------------------------------ the cost model
def test_cost_model_presets_and_overrides():
    assert cost_model() == CostModel() and cost_model("calibrated").b_E == 61.0
    ill = cost_model("illustrative")
    assert ill.b_E == 25.0 and ill.a_E == 5.0
    assert {k: v for k, v in ill.to_dict().items() if v != C.to_dict()[k]} == {"b_E": 25.0}  # only b_E
    m = cost_model("illustrative", a_E=0, b_P=0.1, decode_batch=64)
    assert (m.a_E, m.b_E, m.b_P, m.decode_batch) == (0, 25.0, 0.1, 64)
    assert cost_mod.KEYS == tuple(C.to_dict())
    assert C.encode(20) == pytest.approx(1.225) and C.prefill([100, 200]) == pytest.approx(0.03105)
    assert C.decode_step([1000, 2000]) == pytest.approx((8 + 0.03 + 0.2) / 1000)
    assert C.transfer_pd(1000) == pytest.approx(1000 * KV / 150e9)


@pytest.mark.parametrize(
    ("name", "overrides", "match"),
    [
        ("turbo", {}, "unknown cost model 'turbo'"),
        ("calibrated", {"b_Q": 1.0}, "unknown cost key 'b_Q'"),
        ("calibrated", {"b_E": -1.0}, r"cost key 'b_E': -1.0 must be > 0"),
        ("calibrated", {"a_D": -0.5}, r"cost key 'a_D': -0.5 must be > 0"),
        ("calibrated", {"bw_ep": 0}, r"cost key 'bw_ep': 0 must be > 0"),
        ("calibrated", {"hidden": True}, r"cost key 'hidden': True is not a number"),
        ("calibrated", {"W_L": float("inf")}, r"cost key 'W_L': inf is not a number"),
        ("calibrated", {"W_E": "0.9"}, r"cost key 'W_E': '0.9' is not a number"),
    ],
)
def test_cost_model_refuses_bad_values(name, overrides, match):
    with pytest.raises(ValueError, match=match):
        cost_model(name, **overrides)


def test_simulate_refuses_bad_systems_and_prompts():
    w = _one(2)
    with pytest.raises(ValueError, match="unknown system 'vllm'"):
        simulate("vllm", w, C)
    with pytest.raises(ValueError, match="role P has 0 GPUs"):
        simulate("epd", w, C, (6, 0, 2))
    with pytest.raises(ValueError, match=r"--gpus for pd is P,D \(2 number\(s\)\), got 6,1,1"):
        simulate("pd", w, C, (6, 1, 1))
    with pytest.raises(ValueError, match="request 0: prompt of 49173 tokens exceeds the prefill cap"):
        simulate("epd", _one(2, text=49173 - 1320), C)


# -------------------------------------------------------------------------------------- latent defects
def test_fifo_server_runs_one_job_at_a_time_even_if_done_resubmits():
    loop = engine.Loop()
    server = engine.FifoServer(loop, 0, engine.Memory(0.0))
    log = []

    def done(job, start):
        log.append((job, start, loop.now))
        if job == "A":
            server.submit("C", 1.0, done)

    loop.at(0.0, server.submit, "A", 1.0, done)
    loop.at(0.5, server.submit, "B", 1.0, done)
    loop.run()
    assert log == [("A", 0.0, 1.0), ("B", 1.0, 2.0), ("C", 2.0, 3.0)]


@pytest.mark.parametrize(("system", "gpus"), [("epd", (6, 1, 1)), ("pd", (7, 1)), ("aggregated", (8,))])
def test_a_request_the_kv_pool_cannot_hold_is_refused_not_left_unfinished(system, gpus):
    w = Workload.poisson(1.0, 5, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"request 0 needs \d+ KV blocks .* holds 0 "):
        simulate(system, w, cost_model(gpu_memory=20.0), gpus)
