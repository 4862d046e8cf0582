"""bundle_cbf: the method's own properties, each able to fail for a broken implementation.

- The filter leaves a nominal control alone when it already satisfies every HOCBF half-plane and the box (far
  from the obstacle, or moving away), with no obstacle constraint active.
- On 1,000 random batched states (1-4 obstacles outside their radius, random delta and u_nom) the filtered u
  satisfies g . u >= c (cbf.hocbf_rows with the same model and margins) within 1e-7 for every obstacle and
  the box, or the step is flagged infeasible, and then the constraints really are incompatible (the largest
  worst slack is negative); where u_nom's clip to the box is safe, u is that clip.
- hocbf_rows is the second-order condition: g . u - c = psi1dot + k2 psi1 by central differences along the flow
  (the true model and another drift and gain).
- The exact 2-D active-set QP equals SLSQP on random feasible instances within 1e-6; on infeasible ones
  max_worst_slack's worst slack is the LP optimum (scipy linprog), no point of a fine grid over the box beats it,
  and the flagged control reaches it; when the maximisers form a segment, the control is its point nearest u_nom.
- The mCBF's guarantee: ||noise|| <= delta and b(y) = ||y|| - r - delta >= 0 (b read off hocbf_rows) imply the
  true h = ||p - o|| - r >= 0, on random draws and on the boundary; with margin 0 (the nominal CBF) some draws
  have b >= 0 and h < 0.
- system.disc_noise stays in its disc and fills it uniformly (||v||^2 / r^2 is U(0, 1); a quarter within r / 2).
- The Neural ODE's loss: constant sigma gives weights of one and the unweighted loss; varying sigma does not.
- RK4 has order 4 (the global error at a fixed horizon drops ~16x per halving of dt, against a fine-step
  reference) and system.rk4_step is node.rk4 for the true model.
- fit_dynamics on noiseless rollouts recovers the plant's accelerations (within 5 %) and gain 1 / m (within 1 %);
  its input errors are UserErrors naming the column or value.
- Layout tables round-trip a passage batch; closed loop: no filter collides on passage layouts, the mCBF with the
  true model never does; an unknown condition is a ValueError before any work.
- claim_numbers gives exactly what counting gives.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy import stats as sps

from models.bundle_cbf import experiment, simulate, system
from models.bundle_cbf import filter as cbf

K1 = K2 = 3.0
U_MAX = 2.0


def _on_circle(dist: np.ndarray, ang: np.ndarray) -> np.ndarray:
    return dist[..., None] * np.stack([np.cos(ang), np.sin(ang)], -1)


def _random_states(g: np.random.Generator, n: int, kmax: int = 4):
    """n states: velocity, 1-4 obstacles at measured positions outside their radius, delta, u_nom."""
    v = g.uniform(-2.0, 2.0, (n, 2))
    on = np.arange(kmax)[None] < g.integers(1, kmax + 1, n)[:, None]
    r = g.uniform(0.2, 0.45, (n, kmax))
    y = _on_circle(r + g.uniform(1e-3, 1.5, (n, kmax)), g.uniform(0, 2 * np.pi, (n, kmax)))
    d = np.broadcast_to(g.uniform(0.0, 0.3, n)[:, None], (n, kmax))
    u_nom = g.uniform(-2 * U_MAX, 2 * U_MAX, (n, 2))
    return y, v, r, d, on, u_nom


# ------------------------------------------------------------------------------------------------ the filter
@pytest.mark.parametrize(
    "state, measured",
    [
        ([1.0, 1.0, 0.1, 0.0], [[3.0, 0.5]]),  # far from the obstacle
        ([1.0, 1.0, 0.8, 0.3], [[0.45, 0.05]]),  # close, but moving away from it
        (
            [1.0, 1.0, 0.0, 0.0],
            [[2.5, 0.0], [np.nan, np.nan], [-0.2, -2.0]],
        ),  # at rest, two obstacles, one absent
    ],
)
def test_safe_control_keeps_a_nominal_control_that_is_already_safe(state, measured):
    u_nom = np.array([0.7, -0.4])
    out = cbf.safe_control(state, measured, 0.3, 0.05, u_nom)
    assert np.array_equal(out.u, u_nom)
    assert out.u.shape == (2,) and out.active.shape == (len(measured) + 4,)
    assert not out.active.any() and not out.infeasible
    # the same obstacle, approached fast: the filter has to act, and its constraint is active
    fast = cbf.safe_control([1.0, 1.0, -0.5, 0.0], [[0.6, 0.0]], 0.3, 0.05, u_nom)
    assert not fast.infeasible and fast.active[0] and not np.allclose(fast.u, u_nom)


def test_filtered_controls_satisfy_every_hocbf_row_and_the_box_or_are_flagged():
    g = np.random.default_rng(2)
    y, v, r, d, on, u_nom = _random_states(g, 1000)
    model = system.TrueModel()
    out = cbf.filter_step(y, v, r, d, on, u_nom, model, K1, K2, U_MAX)
    rows, c = cbf.hocbf_rows(y, v, r, d, model, K1, K2)
    slack = np.einsum("bki,bi->bk", rows, out.u) - c
    ok = ~out.infeasible
    assert (np.abs(out.u) <= U_MAX + 1e-12).all()
    assert (np.where(on, slack, np.inf)[ok] >= -1e-7).all()
    # the check is not vacuous: most steps are solved, and many of them by an active obstacle constraint
    assert 0.05 < out.infeasible.mean() < 0.5
    assert out.active[ok, :4].any(1).sum() > 50
    # a flagged step's constraints really are incompatible: even its (maximal) worst slack is negative
    worst = np.where(on, slack, np.inf).min(1)
    assert (worst[out.infeasible] < 1e-7).all()
    # where not flagged, u is the QP's minimiser: no feasible point of the original problem is closer to u_nom
    # (checked against u_nom's own clip when that happens to be feasible)
    clipped = np.clip(u_nom, -U_MAX, U_MAX)
    clip_ok = (np.where(on, np.einsum("bki,bi->bk", rows, clipped) - c, np.inf) >= 0).all(1) & ok
    assert clip_ok.sum() > 50
    assert np.allclose(out.u[clip_ok], clipped[clip_ok], atol=1e-12)


def test_hocbf_rows_are_the_second_order_condition_along_the_flow():
    """g . u - c = psi1dot + k2 psi1 with psi1 = bdot + k1 b, differentiated numerically along ydot = v,
    vdot = a(v) + B(v) u (central differences), for the true model and a model with another drift and gain."""

    class Other:
        def drift(self, v):
            return np.stack([np.sin(v[..., 1]), -0.4 * v[..., 0] * v[..., 1]], -1)

        def gain(self, v):
            return np.broadcast_to([0.6, 1.3], np.shape(v)).copy()

    g = np.random.default_rng(17)
    n, k1, k2 = 300, 2.0, 5.0
    y = _on_circle(g.uniform(0.4, 2.0, n), g.uniform(0, 2 * np.pi, n))
    v, u = g.uniform(-2, 2, (n, 2)), g.uniform(-2, 2, (n, 2))
    r, m = g.uniform(0.2, 0.45, n), g.uniform(0, 0.3, n)
    for model in (system.TrueModel(), Other()):

        def psi1(y_, v_, r=r, m=m):
            dist = np.linalg.norm(y_, axis=-1)
            return (y_ * v_).sum(-1) / dist + k1 * (dist - r - m)

        ydot, vdot = v, model.drift(v) + model.gain(v) * u
        eps = 1e-5
        dpsi = (psi1(y + eps * ydot, v + eps * vdot) - psi1(y - eps * ydot, v - eps * vdot)) / (2 * eps)
        rows, c = cbf.hocbf_rows(y[:, None], v, r[:, None], m[:, None], model, k1, k2)
        lhs = np.einsum("bki,bi->bk", rows, u)[:, 0] - c[:, 0]
        assert np.allclose(lhs, dpsi + k2 * psi1(y, v), rtol=0, atol=1e-7)


def _random_feasible_instance(g: np.random.Generator):
    k = int(g.integers(1, 5))
    rows = g.normal(size=(k, 2))
    u0 = g.uniform(-U_MAX, U_MAX, 2)
    c = rows @ u0 - np.where(g.random(k) < 0.3, 0.0, g.exponential(0.5, k))
    return rows, c, g.uniform(-2 * U_MAX, 2 * U_MAX, 2), u0


def test_the_exact_qp_equals_slsqp_on_random_feasible_instances():
    g = np.random.default_rng(3)
    compared = 0
    for _ in range(500):
        rows, c, u_nom, u0 = _random_feasible_instance(g)
        ours = cbf.solve_qp(u_nom[None], rows[None], c[None], U_MAX)
        ref = optimize.minimize(
            lambda u, un=u_nom: ((u - un) ** 2).sum(),
            u0,
            jac=lambda u, un=u_nom: 2 * (u - un),
            method="SLSQP",
            bounds=[(-U_MAX, U_MAX)] * 2,
            constraints=[
                {"type": "ineq", "fun": lambda u, a=rows, b=c: a @ u - b, "jac": lambda u, a=rows: a}
            ],
            options={"ftol": 1e-14, "maxiter": 500},
        )
        if not ref.success or ours.infeasible[0]:
            continue
        assert np.abs(ours.u[0] - ref.x).max() < 1e-6, (rows, c, u_nom, ours.u[0], ref.x)
        compared += 1
    assert compared >= 400


def test_the_infeasible_fallback_maximises_the_worst_slack_over_the_box():
    g = np.random.default_rng(4)
    # the grid gives a lower bound only, the LP below the exact value (401 points a side cost 0.6 s more)
    lin = np.linspace(-U_MAX, U_MAX, 201)
    grid = np.stack(np.meshgrid(lin, lin), -1).reshape(-1, 2)
    checked = 0
    while checked < 60:
        k = int(g.integers(2, 5))
        rows = g.normal(size=(k, 2))
        c = g.normal(size=k) * 3 + 2.0
        out = cbf.solve_qp(g.uniform(-3, 3, (1, 2)), rows[None], c[None], U_MAX)
        if not out.infeasible[0]:
            continue
        best = cbf.max_worst_slack(rows[None], c[None], U_MAX)[0]
        worst = (rows @ best - c).min()
        assert worst < 0 and (np.abs(best) <= U_MAX).all()
        on_grid = grid[:, :1] * rows[:, 0] + grid[:, 1:] * rows[:, 1] - c  # (no BLAS: slow on a busy machine)
        assert worst >= on_grid.min(1).max() - 1e-9
        # the LP max_{u in box, t} t s.t. t <= g_k . u - c_k, exactly
        lp = optimize.linprog(
            [0, 0, -1],
            A_ub=np.column_stack([-rows, np.ones(k)]),
            b_ub=-c,
            bounds=[(-U_MAX, U_MAX)] * 2 + [(None, None)],
            method="highs",
        )
        assert lp.status == 0 and worst == pytest.approx(-lp.fun, abs=1e-9)
        # the flagged step's control reaches that worst slack too (up to the QP's tolerances)
        assert (np.abs(out.u[0]) <= U_MAX).all()
        assert (rows @ out.u[0] - c).min() >= worst - 1e-8 * (1 + np.abs(c).max())
        checked += 1


@pytest.mark.parametrize("angle", [0.0, 0.3, np.pi / 2])
def test_when_the_largest_worst_slack_is_reached_on_a_segment_the_fallback_takes_its_point_nearest_u_nom(
    angle,
):
    # two opposite half-planes n . u >= 3 and -n . u >= 3: worst slack -3 - |n . u|, largest (-3) on n . u = 0
    n = np.array([np.cos(angle), np.sin(angle)])
    rows, c = np.stack([n, -n])[None], np.array([[3.0, 3.0]])
    u_nom = np.array([[1.0, 0.7]])
    out = cbf.solve_qp(u_nom, rows, c, U_MAX)
    assert out.infeasible[0]
    want = (
        u_nom[0] - (n @ u_nom[0]) * n
    )  # the projection of u_nom on the line n . u = 0 (inside the box here)
    assert np.abs(out.u[0] - want).max() < 1e-6
    assert (rows[0] @ out.u[0] - c[0]).min() == pytest.approx(-3.0, abs=1e-7)


# ------------------------------------------------------------------------------------------------ the barrier
def _measured_barrier(y: np.ndarray, r: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """b(y) = ||y|| - r - m as the filter computes it: at v = 0 (no drift) hocbf_rows' bound is -k1 k2 b."""
    n = len(y)
    _, c = cbf.hocbf_rows(
        y[:, None], np.zeros((n, 2)), r[:, None], margin[:, None], system.TrueModel(), K1, K2
    )
    return -c[:, 0] / (K1 * K2)


def test_a_nonnegative_measured_barrier_with_the_delta_margin_implies_true_safety():
    g = np.random.default_rng(5)
    n = 200_000
    p = g.uniform(0, system.ARENA, (n, 2))
    dlt = system.delta(p, 0.08)
    r = g.uniform(0.2, 0.45, n)
    # obstacles near the robot, so that b is often within the noise of 0
    o = p - _on_circle(r + g.uniform(-0.1, 0.5, n), g.uniform(0, 2 * np.pi, n))
    noise = system.disc_noise(g, dlt, (n, 2))
    # a third of the draws on the boundary of the disc, and a few with the measurement exactly on b = 0
    edge = g.random(n) < 1 / 3
    noise[edge] = _on_circle(dlt[edge], g.uniform(0, 2 * np.pi, edge.sum()))
    y = p - o + noise
    tight = g.random(n) < 0.05
    y[tight] = _on_circle(r[tight] + dlt[tight], g.uniform(0, 2 * np.pi, tight.sum()))
    noise[tight] = (
        y[tight] / np.linalg.norm(y[tight], axis=-1, keepdims=True) * dlt[tight, None]
    )  # worst case
    o[tight] = p[tight] - (y[tight] - noise[tight])
    assert (np.linalg.norm(noise, axis=-1) <= dlt * (1 + 1e-12)).all()
    h = np.linalg.norm(p - o, axis=-1) - r
    b = _measured_barrier(y, r, dlt)
    assert np.allclose(b, np.linalg.norm(y, axis=-1) - r - dlt, atol=1e-12)
    safe = b >= 0
    assert safe.sum() > n / 4 and (b[safe] < 0.01).sum() > 1000
    assert (h[safe] >= -1e-12).all()
    assert np.abs(h[tight]).max() < 1e-12  # the worst case reaches h = 0: the margin is not loose
    # the nominal CBF (margin 0) does not have the guarantee: some b >= 0 with h < 0
    b0 = _measured_barrier(y, r, np.zeros(n))
    assert ((b0 >= 0) & (h < -1e-3)).sum() > 100


def test_disc_noise_fills_its_disc_uniformly():
    g = np.random.default_rng(6)
    n = 100_000
    radius = np.where(np.arange(n) % 2 == 0, 0.1, 0.3)
    v = system.disc_noise(g, radius, (n, 2))
    assert v.shape == (n, 2)
    s = (v**2).sum(-1) / radius**2  # uniform in the disc <=> ||v||^2 / r^2 ~ U(0, 1), angle ~ U(0, 2 pi)
    assert s.max() <= 1 + 1e-12 and s.max() > 0.999
    share = (s <= 0.25).mean()  # within radius / 2
    assert abs(share - 0.25) < 4 * np.sqrt(0.25 * 0.75 / n)
    assert sps.kstest(s, "uniform").pvalue > 1e-3
    assert sps.kstest(np.arctan2(v[:, 1], v[:, 0]), sps.uniform(-np.pi, 2 * np.pi).cdf).pvalue > 1e-3
    assert abs(v.mean(0)).max() < 0.003
    both = system.disc_noise(np.random.default_rng(7), np.array([[0.1], [0.3]]), (2, 5000, 2))
    assert np.linalg.norm(both[0], axis=-1).max() <= 0.1 < np.linalg.norm(both[1], axis=-1).max() <= 0.3


# ------------------------------------------------------------------------------------------------ the Neural ODE
def test_constant_sigma_gives_the_unweighted_loss_and_varying_sigma_does_not():
    import torch

    from models.bundle_cbf import node

    gen = torch.Generator().manual_seed(0)
    pred, target = torch.randn(50, 5, 4, generator=gen), torch.randn(50, 5, 4, generator=gen)
    const = torch.full((50, 5), 0.37)
    w = node.weights(const, True)
    assert torch.allclose(w, torch.ones_like(w), rtol=1e-6, atol=0)
    assert torch.equal(node.weights(const, False), torch.ones_like(const))
    plain = node.window_loss(pred, target, node.weights(const, False))
    assert float(plain) == pytest.approx(float(((pred - target) ** 2).sum(-1).mean()), rel=1e-6)
    assert float(node.window_loss(pred, target, w)) == pytest.approx(float(plain), rel=1e-6)
    varying = 0.05 + torch.rand(50, 5, generator=gen)
    wv = node.weights(varying, True)
    assert float(wv.mean()) == pytest.approx(1.0, rel=1e-6)  # normalised by the mean weight
    assert torch.allclose(wv * varying**2, (wv * varying**2)[0, 0].expand_as(wv), rtol=1e-5)  # w ~ sigma^-2
    assert abs(float(node.window_loss(pred, target, wv)) - float(plain)) > 0.01 * float(plain)


def _true_f(model):
    return lambda x, u: np.concatenate([x[..., 2:], model.accel(x[..., 2:], u)], -1)


def test_rk4_has_order_four_and_the_plant_step_is_the_same_scheme():
    from models.bundle_cbf import node

    model = system.TrueModel()
    f = _true_f(model)
    x0 = np.array([[0.5, 0.2, 1.5, 0.5], [3.0, 1.0, -0.8, 1.2]])
    u = np.array([[0.5, 0.3], [-1.0, 0.7]])  # the speed stays away from 0, where ||v|| v is not smooth
    horizon = 2.0

    def solve(dt):
        x = x0
        for _ in range(round(horizon / dt)):
            x = node.rk4(f, x, u, dt)
        return x

    ref = solve(1e-3)
    errs = [np.abs(solve(dt) - ref).max() for dt in (0.2, 0.1, 0.05)]
    for coarse, fine in zip(errs, errs[1:], strict=False):
        assert 12 < coarse / fine < 20, errs
    assert errs[-1] < 1e-6
    # one step of system.rk4_step is node.rk4 with the true model
    g = np.random.default_rng(8)
    x, uu = (
        np.column_stack([g.uniform(0, 4, (100, 2)), g.uniform(-2, 2, (100, 2))]),
        g.uniform(-2, 2, (100, 2)),
    )
    assert np.allclose(system.rk4_step(model, x, uu, 0.02), node.rk4(f, x, uu, 0.02), rtol=0, atol=1e-14)


def test_fit_on_noiseless_rollouts_recovers_the_true_accelerations():
    from models.bundle_cbf import data, node

    traj = data.rollouts(np.random.default_rng(9), 100, 20, 0.0, 1e-6)
    start = time.perf_counter()
    fit = node.fit_dynamics(traj, "sigma", True, steps=250, horizon=5)
    elapsed = time.perf_counter() - start
    v, u = data.heldout(np.random.default_rng(10), 2000)
    truth = system.TrueModel()
    err = node.accel_error(fit, truth, v, u)
    assert err < 0.05, err
    assert np.allclose(fit.gain(v[:1]), 1 / system.MASS, rtol=0.01)
    assert fit.history[-1] < 1e-2 * fit.history[0]
    # an untrained net (zero steps of Adam) is nowhere near: the bound is meaningful
    assert node.accel_error(node.Fitted(node.ControlAffineODE().eval(), [], True), truth, v, u) > 0.2
    assert elapsed < 30  # measured 2.5 s (250 steps of Adam) on 2 busy cores


def _frame() -> pd.DataFrame:
    from models.bundle_cbf import data

    return data.rollouts(np.random.default_rng(11), 3, 8, 0.01, 0.01)


@pytest.mark.parametrize(
    "tamper, sigma, match",
    [
        (lambda f: f.drop(columns="vx"), "sigma", r"missing column\(s\) vx"),
        (lambda f: f.assign(vy=f.vy.where(f.index != 4)), "sigma", r"column vy: 1 value"),
        (lambda f: f.assign(sigma=f.sigma.where(f.index != 2, -0.5)), "sigma", r"column sigma: .*> 0"),
        (lambda f: f.assign(sigma=f.sigma.where(f.index != 2, 0.0)), "sigma", r"column sigma: .*> 0"),
        (lambda f: f, np.zeros(27), r"sigma: .*> 0"),
        (lambda f: f.assign(t=f.t * 1.5), "sigma", r"step in t of 0\.03, not dt 0\.02"),
        (lambda f: f.drop(index=5), "sigma", r"trajectory 0: a step in t of 0\.04"),
    ],
)
def test_fit_dynamics_input_errors_are_user_errors_naming_the_problem(tamper, sigma, match):
    from icml25.errors import UserError
    from models.bundle_cbf import node

    with pytest.raises(UserError, match=match):
        node.fit_dynamics(tamper(_frame()), sigma, steps=1)


# ------------------------------------------------------------------------------------------------ the experiment
def test_layout_tables_round_trip_a_passage_batch():
    lay = system.passage(np.random.default_rng(12), 7)
    layouts, obstacles = experiment.layout_tables(lay, seed=3, family="passage")
    assert (layouts.seed == 3).all() and (obstacles.family == "passage").all()
    assert len(obstacles) == lay.mask.sum()
    back = experiment.layouts_from(
        layouts.sample(frac=1, random_state=0), obstacles.sample(frac=1, random_state=1)
    )
    assert len(back) == len(lay)
    for name in ("start", "goal", "waypoint", "gap_y", "gap_width"):
        assert np.array_equal(getattr(back, name), getattr(lay, name)), name
    for i in range(len(lay)):
        want = {(*lay.centres[i, k], lay.radii[i, k]) for k in np.flatnonzero(lay.mask[i])}
        got = {(*back.centres[i, k], back.radii[i, k]) for k in np.flatnonzero(back.mask[i])}
        assert got == want and back.mask[i].sum() == lay.mask[i].sum()


def test_without_a_filter_passage_episodes_collide_and_the_mcbf_keeps_them_safe():
    lay = system.passage(np.random.default_rng(13), 20)
    none = simulate.run_episodes(lay, "none", np.random.default_rng(14))
    assert none["collided"].sum() >= 2 and (none["min_h"][none["collided"]] < 0).all()
    assert (none["infeasible"] == 0).all() and (none["active"] == 0).all()
    safe = simulate.run_episodes(lay, "mcbf", np.random.default_rng(14))
    assert not safe["collided"].any() and (safe["min_h"] > 0).all()
    assert (safe["active"] > 0).all()  # the filter did the work
    assert safe["success"].sum() >= 5


def test_an_unknown_condition_is_a_value_error_before_any_work():
    lay = system.passage(np.random.default_rng(15), 3)
    g = np.random.default_rng(16)
    before = g.bit_generator.state
    with pytest.raises(ValueError, match="'mCBF'.*mcbf, nominal, robust, none"):
        simulate.run_episodes(lay, "mCBF", g)
    assert g.bit_generator.state == before


def test_claim_numbers_are_exact_counts():
    rows = []
    # (condition, seed) -> (episodes, collided, succeeded)
    counts = {
        ("mcbf", 0): (100, 3, 90),
        ("mcbf", 1): (100, 0, 95),
        ("robust", 0): (100, 0, 80),
        ("robust", 1): (100, 0, 70),
        ("nominal", 0): (100, 30, 60),
        ("nominal", 1): (100, 20, 70),
    }
    for (cond, seed), (n, hit, won) in counts.items():
        for i in range(n):
            collided = i < hit
            rows.append(("passage", cond, seed, i, collided, (not collided) and i < hit + won))
        # the other family's episodes must not count
        rows += [("random", cond, seed, i, True, False) for i in range(10)]
    episodes = pd.DataFrame(rows, columns=["family", "condition", "seed", "layout", "collided", "success"])
    episodes = episodes.sample(frac=1, random_state=0).reset_index(drop=True)
    errors = pd.DataFrame(
        {"seed": [1, 0, 1, 0], "weighting": ["weighted", "unweighted", "unweighted", "weighted"],
         "error": [0.3, 1.0, 1.0, 0.5]}
    )  # fmt: skip
    out = experiment.claim_numbers(episodes, errors)
    assert out["seeds"] == 2
    assert out["mcbf_safe_seeds"] == [0.97, 1.0] and out["mcbf_safe"] == 0.97
    assert out["less_conservative_seeds"] == [0.1, 0.25] and out["less_conservative"] == 0.1
    assert out["nominal_unsafe_seeds"] == [0.3, 0.2] and out["nominal_unsafe"] == 0.2
    assert out["weighting_ratio_seeds"] == [0.5, 0.3] and out["weighting_ratio"] == 0.5
