"""Speed and memory of bundle_cbf's safety filter, Neural ODE fit and closed loop (run by hand:
python benchmarks/bundle_cbf.py); writes benchmarks/results/bundle_cbf.json, which the report renders.

- Instances: the filter's own inputs in a closed loop. ``run_episodes`` runs 20 passage layouts (600 steps, mcbf,
  true model) with ``models.bundle_cbf.simulate.filter_step`` wrapped to record every call's arguments (measured
  obstacle-relative positions y, velocity, radii, margins, which obstacles are in range, the nominal control);
  the per-layout rows with 2 to 6 obstacles in range (near the wall of circles) are padded to 6 obstacle columns
  and ``N_INST`` = 1,000 of them drawn without replacement (seeded). Both solvers get exactly these instances.
- Ours: ``filter_step`` (``hocbf_rows`` + ``solve_qp``, the exact 2-D active-set enumeration) on batches of 1
  (the 1,000 instances one call each), 100 (10 calls) and 1,000 (one call); also 10,000 states drawn with
  replacement from the whole recorded pool (scaling only). Median of ``REPEAT`` passes over the 1,000 instances.
- Reference: ``scipy.optimize.minimize(method="SLSQP")`` called per state on the same 1,000 instances: per state
  the HOCBF rows of that state (``hocbf_rows`` on a batch of one), then min ||u - u_nom||^2 s.t. g_k . u >= c_k
  for the obstacles in range and the box |u_i| <= u_max as bounds, analytic gradients and Jacobians, start at
  u_nom clipped to the box, scipy's default tolerances. Median of ``REPEAT`` passes; the passes of ours (each
  batch size) and of SLSQP are interleaved, in a rotated order each round, so a changing load on the shared
  machine falls on both alike.
- Agreement: max |u_ours - u_slsqp| (largest component) over the instances where both are feasible (ours not
  flagged infeasible, SLSQP ``success``), whether the two flag the same instances infeasible, and the largest
  excess of our objective over SLSQP's; once more (untimed) with SLSQP at ftol 1e-12, which shows how much of
  the difference is SLSQP's stopping tolerance.
- Peak memory: tracemalloc (``_common.traced_peak_mib``: Python and NumPy allocations during the call, not the
  loaded libraries) for the NumPy parts, in separate untimed runs; torch tensor memory (``tensor_peak_mib``,
  the profiler's allocation events) for the fit, on a 50-step fit (every step works on the same batch size).
- Neural ODE fit: ``fit_dynamics`` on 200 simulated rollouts of 20 steps (``data.rollouts``, the project's
  noise 0.02 and floor 0.001), horizon 5, 600 Adam steps of batch 1,024, lr 0.01, hidden 32, weighted (the
  project's train parameters), one thread (as the stage); timed twice (the first includes Lightning's
  first-call set-up), checked on 2,000 held-out (v, u) by the relative acceleration error.
- Closed loop: ``run_episodes`` on 100 passage layouts, 600 steps, mcbf, the true model in the filter; median of
  2 runs, with the share of its time spent inside ``filter_step``.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import scipy  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

import models.bundle_cbf.simulate as sim  # noqa: E402
from benchmarks._common import (  # noqa: E402
    load_text,
    stage_times,
    stage_times_text,
    tensor_peak_mib,
    traced_peak_mib,
    write,
)
from icml25.random import rng  # noqa: E402
from models.bundle_cbf.filter import filter_step, hocbf_rows  # noqa: E402
from models.bundle_cbf.simulate import Episode  # noqa: E402
from models.bundle_cbf.system import TrueModel, passage  # noqa: E402

SEED = 0
CFG = (
    Episode()
)  # alpha 0.08, 600 steps, k1 = k2 = 3, u_max 2, sensing range 1 (the project's evaluate params)
K = 6  # obstacle columns of an instance (2-6 in range)
RECORD_LAYOUTS = 20
N_INST = 1000
BATCHES = (1, 100, 1000)
BIG = 10000
REPEAT = 5
LOOP_LAYOUTS = 100
LOOP_REPEAT = 2
FIT = dict(dt=0.02, horizon=5, steps=600, lr=0.01, batch=1024, hidden=32, seed=SEED)
ROLLOUTS, ROLLOUT_STEPS, FIT_NOISE, FIT_FLOOR = 200, 20, 0.02, 0.001
PROFILE_STEPS = 50
TIGHT = 1e-12  # SLSQP's ftol in the untimed agreement check at a tight tolerance


def log(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------------------------------------ instances
class Instances:
    """A batch of the filter's inputs, K obstacle columns each."""

    def __init__(self, y, v, radius, margin, on, u_nom):
        self.y, self.v, self.radius, self.margin, self.on, self.u_nom = y, v, radius, margin, on, u_nom

    def __len__(self) -> int:
        return len(self.v)

    def take(self, idx) -> Instances:
        return Instances(*(a[idx] for a in self.arrays()))

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.y, self.v, self.radius, self.margin, self.on, self.u_nom


def pad(a: np.ndarray, fill) -> np.ndarray:
    """``a`` (B, k, ...) padded with ``fill`` to K columns (off columns: on = False)."""
    extra = np.full((a.shape[0], K - a.shape[1], *a.shape[2:]), fill, a.dtype)
    return np.concatenate([a, extra], 1)


def record_instances() -> tuple[Instances, float]:
    """Every per-layout filter input of a closed loop on RECORD_LAYOUTS passage layouts with 2-6 obstacles in
    range, padded to K columns; and that run's success rate."""
    calls = []
    original = sim.filter_step

    def spy(y, v, radius, margin, on, u_nom, *rest):
        calls.append(tuple(np.array(a) for a in (y, v, radius, margin, on, u_nom)))  # copies
        return original(y, v, radius, margin, on, u_nom, *rest)

    sim.filter_step = spy
    try:
        lay = passage(rng(SEED, "bench-record-layouts"), RECORD_LAYOUTS)
        res = sim.run_episodes(lay, "mcbf", rng(SEED, "bench-record-noise"), None, CFG)
    finally:
        sim.filter_step = original
    parts = []
    for y, v, r, m, on, u in calls:
        # rows with more than K in range are dropped; the others' in-range obstacles are their first columns
        keep = on.sum(1) <= K
        y, r, m, on = (a[keep, :K] for a in (y, r, m, on))
        parts.append((pad(y, 1.0), v[keep], pad(r, 1.0), pad(m, 0.0), pad(on, False), u[keep]))
    pool = Instances(*(np.concatenate(c) for c in zip(*parts, strict=True)))
    count = pool.on.sum(1)
    return pool.take(np.flatnonzero((count >= 2) & (count <= K))), float(res["success"].mean())


# ------------------------------------------------------------------------------------------------ solvers
def ours(inst: Instances, model):
    return filter_step(*inst.arrays(), model, CFG.k1, CFG.k2, CFG.u_max)


def ours_pass(inst: Instances, batch: int, model) -> None:
    for s in range(0, len(inst), batch):
        ours(inst.take(slice(s, s + batch)), model)


def slsqp_one(inst: Instances, i: int, model, ftol: float | None = None):
    """SLSQP on state i: its HOCBF rows, then the QP with the box as bounds."""
    s = slice(i, i + 1)
    g, c = hocbf_rows(inst.y[s], inst.v[s], inst.radius[s], inst.margin[s], model, CFG.k1, CFG.k2)
    on = inst.on[i]
    g, c, un = g[0][on], c[0][on], inst.u_nom[i]
    return minimize(
        lambda u: float(((u - un) ** 2).sum()),
        np.clip(un, -CFG.u_max, CFG.u_max),
        jac=lambda u: 2 * (u - un),
        method="SLSQP",
        bounds=[(-CFG.u_max, CFG.u_max)] * 2,
        constraints=[{"type": "ineq", "fun": lambda u: g @ u - c, "jac": lambda u: g}],
        options={} if ftol is None else {"ftol": ftol},
    )


def slsqp_pass(inst: Instances, model, ftol: float | None = None) -> list:
    return [slsqp_one(inst, i, model, ftol) for i in range(len(inst))]


def interleaved(jobs: dict) -> dict:
    """(median, runs) of wall seconds per job over REPEAT rounds, the jobs in a rotated order each round (a load
    that changes over the run then falls on every job alike)."""
    keys = list(jobs)
    times: dict = {k: [] for k in keys}
    for rep in range(REPEAT):
        for k in keys[rep % len(keys) :] + keys[: rep % len(keys)]:
            t0 = time.perf_counter()
            jobs[k]()
            times[k].append(time.perf_counter() - t0)
    return {k: (statistics.median(v), v) for k, v in times.items()}


# ------------------------------------------------------------------------------------------------ measures
def qp_rows() -> tuple[list[dict], dict]:
    model = TrueModel()
    t0 = time.perf_counter()
    pool, record_success = record_instances()
    inst = pool.take(np.sort(rng(SEED, "bench-instances").choice(len(pool), N_INST, replace=False)))
    big = pool.take(rng(SEED, "bench-big").integers(len(pool), size=BIG))
    counts = np.bincount(inst.on.sum(1), minlength=K + 1)[2:]
    log(
        f"instances: {len(pool)} recorded rows with 2-{K} obstacles in range ({time.perf_counter() - t0:.1f} s); "
        f"{N_INST} drawn, in range 2..{K}: {counts.tolist()}"
    )

    f = ours(inst, model)
    ours_pass(inst, 1, model)  # warm-up
    slsqp_pass(inst.take(slice(0, 20)), model)
    results = []
    jobs = {
        **{b: lambda b=b: ours_pass(inst, b, model) for b in BATCHES},
        BIG: lambda: ours(big, model),
        "slsqp": lambda: results.append(slsqp_pass(inst, model)),
    }
    times = interleaved(jobs)
    t_ours = {b: times[b] for b in BATCHES}
    t_big, t_ref = times[BIG], times["slsqp"]
    res = results[0]
    tight = slsqp_pass(inst, model, ftol=TIGHT)
    peak_ours = {b: traced_peak_mib(lambda b=b: ours(inst.take(slice(0, b)), model)) for b in BATCHES}
    peak_big = traced_peak_mib(lambda: ours(big, model))
    peak_ref = traced_peak_mib(lambda: slsqp_pass(inst, model))

    u_ref = np.array([r.x for r in res])
    ok_ref = np.array([bool(r.success) for r in res])
    ok_ours = ~f.infeasible
    both = ok_ref & ok_ours
    diff = float(np.abs(u_ref - f.u)[both].max())
    obj_gap = float((((f.u - inst.u_nom) ** 2).sum(1) - ((u_ref - inst.u_nom) ** 2).sum(1))[both].max())
    same_flags = bool((ok_ref == ok_ours).all())
    u_tight = np.array([r.x for r in tight])
    both_tight = np.array([bool(r.success) for r in tight]) & ok_ours
    diff_tight = float(np.abs(u_tight - f.u)[both_tight].max())
    moved = float((np.abs(f.u - inst.u_nom).max(1) > 1e-9).mean())
    active = float(f.active[:, :K].any(1).mean())
    nit = float(np.mean([r.nit for r in res]))
    agree = (
        f"max |u_ours - u_slsqp| = {diff:.1e} over the {int(both.sum())} of {N_INST} instances both solve "
        f"(largest objective excess of ours {obj_gap:.1e}); infeasible: ours {int(f.infeasible.sum())}, SLSQP "
        f"{int((~ok_ref).sum())} (not success), same instances: {same_flags}; untimed, SLSQP at ftol {TIGHT:g}: "
        f"max |u_ours - u_slsqp| = {diff_tight:.1e} over {int(both_tight.sum())}"
    )
    ref_rate = N_INST / t_ref[0]
    log(
        f"SLSQP: {ref_rate:,.0f} states/s ({1e6 / ref_rate:.0f} us per state), peak {peak_ref:.3f} MiB; {agree}"
    )
    setting = (
        f"{N_INST} closed-loop filter inputs, 2-{K} obstacles in range (passage, mcbf, true model), "
        f"K + 4 = {K + 4} rows"
    )

    def row(method, setting, seconds, runs, n, peak, check) -> dict:
        rate = n / seconds
        return {
            "what": "filtered steps per second",
            "method": method,
            "setting": setting,
            "states per call": n if method.startswith("ours") else 1,
            "seconds per pass": round(seconds, 4),
            "steps per second": round(rate),
            "us per step": round(1e6 / rate, 2),
            "peak MiB": round(peak, 4),
            "speed-up vs SLSQP": round(rate / ref_rate, 1) if not method.startswith("SLSQP") else "",
            "runs (s)": ", ".join(f"{t:.4f}" for t in runs),
            "check": check,
        }

    rows = []
    for b in BATCHES:
        sec, runs = t_ours[b]
        r = row(f"ours, filter_step, batch {b}", setting, sec, runs, N_INST, peak_ours[b], "")
        r["states per call"] = b
        r["check"] = f"{N_INST // b} call{'s' if b < N_INST else ''} per pass; peak of one call of {b}" + (
            f"; {agree}" if b == max(BATCHES) else ""
        )
        rows.append(r)
        log(f"ours batch {b}: {r['steps per second']:,} states/s, {r['speed-up vs SLSQP']}x SLSQP, "
            f"peak {peak_ours[b]:.3f} MiB")  # fmt: skip
    r = row(
        f"ours, filter_step, batch {BIG}",
        f"{BIG} of the {len(pool)} recorded rows, drawn with replacement",
        t_big[0],
        t_big[1],
        BIG,
        peak_big,
        "one call; scaling only (not compared with SLSQP)",
    )
    r["states per call"] = BIG
    r["speed-up vs SLSQP"] = ""
    rows.append(r)
    log(f"ours batch {BIG}: {r['steps per second']:,} states/s, peak {peak_big:.2f} MiB")
    rows.append(
        row(
            "SLSQP (scipy.optimize.minimize, per state)",
            setting,
            t_ref[0],
            t_ref[1],
            N_INST,
            peak_ref,
            f"scipy {scipy.__version__}, default tolerances, {nit:.1f} iterations per state on average; "
            "includes that state's hocbf_rows",
        )
    )
    info = {
        "pool": len(pool),
        "counts": counts.tolist(),
        "infeasible": int(f.infeasible.sum()),
        "moved": moved,
        "active": active,
        "record_success": record_success,
        "diff": diff,
    }
    return rows, info


def fit_row() -> dict:
    import torch

    from models.bundle_cbf.data import heldout, rollouts
    from models.bundle_cbf.node import accel_error, fit_dynamics

    traj = rollouts(rng(SEED, "bench-rollouts"), ROLLOUTS, ROLLOUT_STEPS, FIT_NOISE, FIT_FLOOR)
    times, fitted = [], None
    for i in range(2):
        t0 = time.perf_counter()
        fitted = fit_dynamics(traj, "sigma", True, **FIT)
        times.append(time.perf_counter() - t0)
        log(f"fit {i + 1}: {times[-1]:.1f} s, final loss {fitted.history[-1]:.4g}")
    short = dict(FIT, steps=PROFILE_STEPS)
    peak = tensor_peak_mib(lambda: fit_dynamics(traj, "sigma", True, **short))
    v, u = heldout(rng(SEED, "bench-heldout"), 2000)
    err = accel_error(fitted, TrueModel(), v, u)
    windows = ROLLOUTS * (ROLLOUT_STEPS + 1 - FIT["horizon"])
    return {
        "what": "Neural ODE fit (fit_dynamics, weighted)",
        "method": "ours, Lightning + Adam, one torch thread",
        "setting": f"{ROLLOUTS} rollouts x {ROLLOUT_STEPS} steps ({windows} windows of {FIT['horizon']}), "
        f"{FIT['steps']} Adam steps of batch {FIT['batch']}, hidden {FIT['hidden']}",
        "states per call": "",
        "seconds per pass": round(times[1], 2),
        "steps per second": round(FIT["steps"] / times[1], 1),
        "us per step": round(1e6 * times[1] / FIT["steps"]),
        "peak MiB": round(peak, 3),
        "speed-up vs SLSQP": "",
        "runs (s)": ", ".join(f"{t:.2f}" for t in times),
        "check": f"steps are Adam steps; first run {times[0]:.1f} s (Lightning's first-call set-up included), "
        f"second {times[1]:.1f} s; final loss {fitted.history[-1]:.3g}, relative acceleration error on 2000 "
        f"held-out (v, u) {err:.3f}; peak: torch tensor memory of a {PROFILE_STEPS}-step fit; torch "
        f"{torch.__version__}",
    }


def loop_row() -> dict:
    lay = passage(rng(SEED, "bench-loop-layouts"), LOOP_LAYOUTS)
    inside = [0.0]
    columns, in_range = [], []
    original = sim.filter_step

    def clocked(*a):
        columns.append(a[4].shape[1])
        in_range.append(float(a[4].sum(1).mean()))
        t0 = time.perf_counter()
        out = original(*a)
        inside[0] += time.perf_counter() - t0
        return out

    times, shares, res = [], [], None
    sim.filter_step = clocked
    try:
        for _ in range(LOOP_REPEAT):
            inside[0] = 0.0
            t0 = time.perf_counter()
            res = sim.run_episodes(lay, "mcbf", rng(SEED, "bench-loop-noise"), None, CFG)
            times.append(time.perf_counter() - t0)
            shares.append(inside[0] / times[-1])
    finally:
        sim.filter_step = original
    peak = traced_peak_mib(lambda: sim.run_episodes(lay, "mcbf", rng(SEED, "bench-loop-noise"), None, CFG))
    sec = statistics.median(times)
    steps = int(res["steps"].max())
    filtered = LOOP_LAYOUTS * steps
    log(f"closed loop: {sec:.2f} s, {filtered / sec:,.0f} filtered steps/s, peak {peak:.2f} MiB")
    return {
        "what": "closed loop (run_episodes)",
        "method": "ours, mcbf, true model in the filter",
        "setting": f"{LOOP_LAYOUTS} passage layouts x {CFG.steps} steps, batch of {LOOP_LAYOUTS} per step",
        "states per call": LOOP_LAYOUTS,
        "seconds per pass": round(sec, 3),
        "steps per second": round(filtered / sec),
        "us per step": round(1e6 * sec / filtered, 2),
        "peak MiB": round(peak, 3),
        "speed-up vs SLSQP": "",
        "runs (s)": ", ".join(f"{t:.3f}" for t in times),
        "check": f"{steps} steps run ({filtered} filtered layout-steps, frozen episodes included); "
        f"filter_step {100 * statistics.median(shares):.0f}% of the time (the rest: sensing, nominal control, "
        f"RK4, bookkeeping); each step's QP has as many obstacle columns as its most crowded layout needs "
        f"(median {statistics.median(columns):.0f}, against {K} in the QP instances above; "
        f"{np.mean(in_range):.1f} in range per layout on average); success {res['success'].mean():.2f}, collided {res['collided'].mean():.2f}, "
        f"infeasible filter steps {int(res['infeasible'].sum())}",
    }


def main() -> None:
    start = time.perf_counter()
    load = load_text()
    log(f"{load}; {os.cpu_count()} cores, numpy {np.__version__}, scipy {scipy.__version__}")
    rows, info = qp_rows()
    rows.append(fit_row())
    rows.append(loop_row())
    stages = stage_times("bundle_cbf")
    if stages:
        rows.append(
            {
                "what": "quick profile, `dvc repro` (last run's stage wall times)",
                "method": stage_times_text(stages),
                "check": f"total {sum(stages.values()):.0f} s",
            }
        )
    wall = time.perf_counter() - start
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    end_load = "load average {:.2f} (1 min), {:.2f} (5 min) at the end".format(*os.getloadavg()[:2])
    note = (
        f"CPU ({os.cpu_count()} cores), numpy {np.__version__}, scipy {scipy.__version__}; {load}; {end_load}. "
        "The paper makes no speed claim: these numbers describe this implementation, with no target to meet. "
        f"QP instances: the filter's inputs recorded in a closed loop on {RECORD_LAYOUTS} passage layouts "
        f"(mcbf, true model, success {info['record_success']:.2f}), the {info['pool']} per-layout rows with 2-{K} "
        f"obstacles in range, {N_INST} drawn (2..{K} in range: {info['counts']}); on them the filter moved "
        f"u_nom in {100 * info['moved']:.0f}% of the instances, an obstacle constraint is active in "
        f"{100 * info['active']:.0f}%, and {info['infeasible']} are infeasible (ours then takes the point "
        "nearest u_nom of largest worst slack, SLSQP reports failure; both excluded from the agreement). Ours: filter_step "
        "(hocbf_rows + solve_qp, vectorised enumeration of the 2-D active sets, no iterations) over the 1,000 "
        "instances in batches of 1, 100 and 1,000; SLSQP: scipy.optimize.minimize(method='SLSQP') per state with "
        "analytic gradients, the box as bounds, start at the clipped u_nom, default tolerances, that state's "
        f"hocbf_rows included; medians of {REPEAT} passes, ours and SLSQP interleaved in rotated order. Speed-up = our steps per second / SLSQP's. Peak MiB: tracemalloc peak (Python and NumPy "
        "allocations during the call, not loaded libraries or the interpreter) in separate untimed runs for the "
        "NumPy parts (ours per single call of the batch size; SLSQP over the whole 1,000-state pass; the closed "
        "loop over a whole run); the fit's is torch tensor memory (profiler allocation events) during a "
        f"{PROFILE_STEPS}-step fit (the same batch every step; tracemalloc does not see torch's allocator). "
        "Closed loop: the project's Episode (alpha 0.08, k1 = k2 = 3, u_max 2, sensing range 1); its steps per "
        "second count layout-steps (each filtered once per step) and include sensing, control and the plant. "
        f"Process peak RSS {maxrss:.0f} MiB. Benchmark wall time {wall:.0f} s."
        + (f" Quick profile's stages: {stage_times_text(stages)}." if stages else "")
    )
    write("bundle_cbf", list(rows[0]), rows, note=note)


if __name__ == "__main__":
    main()
