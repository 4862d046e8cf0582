"""The measurement-aware safety filter: a high-order CBF on measured positions and an exact 2-D QP.

Barrier. For an obstacle of radius r the measured distance barrier is

    b(y) = ||y|| - r - m,

with y the measured obstacle-relative position and m the condition's margin: the mCBF's m = L_h delta(p) with
L_h = 1 (h(y) = ||y|| - r is 1-Lipschitz, so ||y - (p - o)|| <= delta and b(y) >= 0 imply the true
h = ||p - o|| - r >= 0: condition (1) of the paper's mCBF), the nominal CBF's m = 0 and the robust CBF's
m = max delta over the arena. The paper's condition (2) as printed ("inf over u") is read as
sup_u inf_{||w|| <= delta_w}, the robust CBF condition; with the margin covering the measurement error it is
enforced on the measured barrier.

High-order CBF (relative degree 2). With n = y / ||y|| and ydot = v (the noise and the margin held over a step):

    psi1    = bdot + k1 b = n.v + k1 b,
    psi1dot = (||v||^2 - (n.v)^2) / ||y|| + n.(a(v) + B(v) u) + k1 n.v,

and the filter asks psi1dot + k2 psi1 >= 0, a half-plane in u:

    (B(v) n) . u >= -[(||v||^2 - (n.v)^2) / ||y|| + n.a(v) + (k1 + k2) n.v + k1 k2 b],

with a, B the (learned or true) control-affine model. The gains k1, k2 and this filter's form are our choices
(the paper leaves them open).

QP. u* = argmin ||u - u_nom||^2 subject to one half-plane per obstacle and the box |u_i| <= u_max. In 2-D the
minimiser of a strictly convex objective over a polygon is u_nom itself, the projection of u_nom onto one
constraint's line, or the intersection of two constraints' lines (at most two active constraints); every such
candidate is enumerated, the infeasible ones dropped and the closest feasible one taken: exact, vectorised over
a batch, no iterations. When no candidate is feasible the step is flagged infeasible and takes, among the box points
that maximise the worst CBF slack t* = max_u min_i (g_i.u - c_i) (an LP in (u, t) whose vertices are box
corners, equal-slack points of two constraints on a box edge, or of three constraints inside), the one closest
to u_nom (the same QP with every bound lowered by t*). A reading at an obstacle's centre has no direction and is
flagged infeasible.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_EPS = 1e-12
_OFF = -1e30  # the bound of an inactive row: always satisfied


class Filtered(NamedTuple):
    """The filter's answer: u (..., 2); active (..., K + 4): which constraints hold with equality, the K
    obstacles first, then the box faces u_x <= u_max, u_x >= -u_max, u_y <= u_max, u_y >= -u_max; infeasible
    (...): the step took the largest worst slack instead of a QP solution."""

    u: np.ndarray
    active: np.ndarray
    infeasible: np.ndarray


def hocbf_rows(y: np.ndarray, v: np.ndarray, radius: np.ndarray, margin: np.ndarray, model, k1: float = 3.0,
               k2: float = 3.0) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The HOCBF half-planes g . u >= c for measured positions y (B, K, 2), velocities v (B, 2), radii and
    margins (B, K) under ``model`` (drift(v), gain(v) -> (B, 2)). Returns g (B, K, 2), c (B, K)."""
    dist = np.linalg.norm(y, axis=-1)
    centred = dist < 1e-9  # a reading at the obstacle's centre: no direction, and certainly unsafe
    n = y / np.maximum(dist, _EPS)[..., None]
    nv = np.einsum("bki,bi->bk", n, v)
    b = dist - radius - margin
    drift, gain = model.drift(v), model.gain(v)
    curv = ((v**2).sum(-1)[:, None] - nv**2) / np.maximum(dist, _EPS)
    c = -(curv + np.einsum("bki,bi->bk", n, drift) + (k1 + k2) * nv + k1 * k2 * b)
    return n * gain[:, None, :], np.where(centred, 1.0, c)  # 0 . u >= 1: flagged infeasible


def _box_rows(batch: int, u_max: float) -> tuple[np.ndarray, np.ndarray]:
    g = np.array([[-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])
    return np.broadcast_to(g, (batch, 4, 2)), np.full((batch, 4), -u_max)


def _slack(u: np.ndarray, g: np.ndarray, c: np.ndarray) -> np.ndarray:
    """g_m . u_n - c_m for candidates u (B, N, 2) and rows (B, M, 2), (B, M) -> (B, N, M)."""
    return np.einsum("bnk,bmk->bnm", u, g) - c[:, None, :]


def _pairs(g: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intersections of every pair of lines g_i . u = c_i -> points (B, P, 2) and whether they exist."""
    i, j = np.triu_indices(g.shape[1], 1)
    gi, gj, ci, cj = g[:, i], g[:, j], c[:, i], c[:, j]
    det = gi[..., 0] * gj[..., 1] - gi[..., 1] * gj[..., 0]
    scale = np.linalg.norm(gi, axis=-1) * np.linalg.norm(gj, axis=-1)
    ok = np.abs(det) > 1e-10 * np.maximum(scale, _EPS)
    safe = np.where(ok, det, 1.0)
    u = np.stack([(ci * gj[..., 1] - cj * gi[..., 1]) / safe, (gi[..., 0] * cj - gj[..., 0] * ci) / safe], -1)
    return u, ok & (scale > _EPS) & (ci > _OFF / 2) & (cj > _OFF / 2)


def solve_qp(u_nom: np.ndarray, g: np.ndarray, c: np.ndarray, u_max: float,
             tol: float = 1e-9) -> Filtered:  # fmt: skip
    """min ||u - u_nom||^2 s.t. g_k . u >= c_k (rows with c <= -1e30 are off) and |u_i| <= u_max, for a batch:
    u_nom (B, 2), g (B, K, 2), c (B, K). Exact active-set enumeration (see the module docstring)."""
    batch, k = c.shape
    gb, cb = _box_rows(batch, u_max)
    G, C = np.concatenate([g, gb], 1), np.concatenate([c, cb], 1)
    gg = (G**2).sum(-1)
    on = (gg > _EPS) & (C > _OFF / 2)
    resid = C - np.einsum("bmk,bk->bm", G, u_nom)
    proj = u_nom[:, None] + (resid / np.where(on, gg, 1.0))[..., None] * G
    both, both_ok = _pairs(G, C)
    cand = np.concatenate([u_nom[:, None], proj, both], 1)
    ok = np.concatenate([np.ones((batch, 1), bool), on, both_ok], 1)
    sl = _slack(cand, G, C)
    feas = ok & (sl >= -tol * (1.0 + np.abs(C))[:, None, :]).all(-1)
    dist = np.where(feas, ((cand - u_nom[:, None]) ** 2).sum(-1), np.inf)
    best = dist.argmin(1)
    u = cand[np.arange(batch), best]
    infeasible = ~np.isfinite(dist.min(1))
    if infeasible.any():
        # the largest worst slack t*, then the point closest to u_nom among those that reach it (the QP with
        # every bound lowered by t*; feasible by construction, so this recursion ends here)
        gi, ci, ui = g[infeasible], c[infeasible], u_nom[infeasible]
        best = max_worst_slack(gi, ci, u_max)
        worst = np.where(ci > _OFF / 2, np.einsum("bmk,bk->bm", gi, best) - ci, np.inf).min(1)
        shift = np.where(np.isfinite(worst), worst, 0.0)[:, None] - 1e-9 * (1.0 + np.abs(ci))
        again = solve_qp(ui, gi, np.where(ci > _OFF / 2, ci + shift, ci), u_max, tol)
        u[infeasible] = np.where(again.infeasible[:, None], best, again.u)
    final = np.einsum("bmk,bk->bm", G, u) - C
    active = on & (np.abs(final) <= 1e-7 * (1.0 + np.abs(C)))
    return Filtered(u, active, infeasible)


def max_worst_slack(g: np.ndarray, c: np.ndarray, u_max: float) -> np.ndarray:
    """argmax over the box |u_i| <= u_max of min_k (g_k . u - c_k) (rows with c <= -1e30 ignored): the LP's
    vertices are the box corners, the points on a box edge where two rows' slacks are equal, and the interior
    points where three are; all are enumerated. g (B, K, 2), c (B, K) -> u (B, 2)."""
    batch, k = c.shape
    on = c > _OFF / 2
    corners = np.array([[s1, s2] for s1 in (-1, 1) for s2 in (-1, 1)], float) * u_max
    cands = [np.broadcast_to(corners, (batch, 4, 2))]
    oks = [np.ones((batch, 4), bool)]
    if k >= 2:
        i, j = np.triu_indices(k, 1)
        dg, dc = g[:, i] - g[:, j], c[:, i] - c[:, j]  # slack_i = slack_j <=> dg . u = dc
        pair_on = on[:, i] & on[:, j]
        for axis in (0, 1):
            other = 1 - axis
            for side in (-u_max, u_max):
                coef = dg[..., other]
                ok = pair_on & (np.abs(coef) > 1e-12)
                free = (dc - dg[..., axis] * side) / np.where(ok, coef, 1.0)
                pt = np.empty(free.shape + (2,))
                pt[..., axis], pt[..., other] = side, free
                cands.append(pt)
                oks.append(ok)
    if k >= 3:
        t = np.array([(a, b, d) for a in range(k) for b in range(a + 1, k) for d in range(b + 1, k)])
        a_, b_, d_ = t[:, 0], t[:, 1], t[:, 2]
        rows = np.stack([g[:, a_] - g[:, b_], g[:, a_] - g[:, d_]], -2)  # (B, T, 2, 2)
        rhs = np.stack([c[:, a_] - c[:, b_], c[:, a_] - c[:, d_]], -1)
        det = np.linalg.det(rows)
        ok = on[:, a_] & on[:, b_] & on[:, d_] & (np.abs(det) > 1e-12)
        safe = np.where(ok[..., None, None], rows, np.eye(2))
        cands.append(np.linalg.solve(safe, rhs[..., None])[..., 0])
        oks.append(ok)
    cand, ok = np.concatenate(cands, 1), np.concatenate(oks, 1)
    ok &= (np.abs(cand) <= u_max * (1 + 1e-9)).all(-1)
    worst = np.where(on[:, None, :], _slack(cand, g, c), np.inf).min(-1)
    worst = np.where(ok, worst, -np.inf)
    return np.clip(cand[np.arange(batch), worst.argmax(1)], -u_max, u_max)


def filter_step(y: np.ndarray, v: np.ndarray, radius: np.ndarray, margin: np.ndarray, on: np.ndarray,
                u_nom: np.ndarray, model, k1: float, k2: float, u_max: float) -> Filtered:  # fmt: skip
    """One filtered step for a batch: the HOCBF rows of the obstacles marked ``on`` (B, K), then the QP."""
    g, c = hocbf_rows(y, v, radius, margin, model, k1, k2)
    c = np.where(on, c, _OFF)
    g = np.where(on[..., None], g, 0.0)
    return solve_qp(u_nom, g, c, u_max)


def _shaped(name: str, value, shape: tuple[int, ...], single: bool) -> np.ndarray:
    """``value`` broadcast to ``shape`` the numpy way (for a single state, to shape[1:] first), or a UserError."""
    from icml25.errors import UserError

    a = np.asarray(value, dtype=float)
    try:
        return np.broadcast_to(a, shape[1:])[None] if single else np.broadcast_to(a, shape)
    except ValueError:
        raise UserError(f"{name} has shape {a.shape}, which does not broadcast to {shape[single:]}") from None


def safe_control(state, measured, radius, delta, u_nom, model=None, k1: float = 3.0, k2: float = 3.0,
                 u_max: float = 2.0) -> Filtered:  # fmt: skip
    """The measurement-aware safe control for one state or a batch.

    state (4,) or (B, 4): p_x, p_y, v_x, v_y; measured (K, 2) or (B, K, 2): each obstacle's measured position
    relative to the robot's, y = p - o + noise (rows of NaN are absent obstacles); radius and delta: the
    obstacles' radii and the measurement-error bounds (the mCBF margin; 0 gives the nominal CBF), broadcast the numpy
    way against (K,) or (B, K): a scalar, one value per obstacle (K,), or per state as (B, 1); u_nom (2,) or
    (B, 2). ``model``: anything with drift(v) and gain(v) (a fitted
    models.bundle_cbf.node model), by default the true plant (m = 1.2, c_d = 0.3). Returns Filtered(u, active,
    infeasible) with the batch axis dropped for a single state. Bad input (a state not of length 4, a NaN, a
    negative radius or delta, u_max, k1 or k2 not > 0) raises icml25.errors.UserError naming the value.
    """
    from icml25.errors import UserError
    from models.bundle_cbf.system import TrueModel

    if not (np.isfinite(u_max) and u_max > 0):
        raise UserError(f"u_max {u_max} must be a finite number > 0")
    for name, k in (("k1", k1), ("k2", k2)):
        if not (np.isfinite(k) and k > 0):
            raise UserError(f"{name} {k} must be a finite number > 0")
    x = np.asarray(state, dtype=float)
    single = x.ndim == 1
    x = np.atleast_2d(x)
    if x.shape[-1] != 4:
        raise UserError(f"state has {x.shape[-1]} entries; it must be (p_x, p_y, v_x, v_y)")
    if not np.isfinite(x).all():
        raise UserError("state: every entry must be a finite number")
    y = np.asarray(measured, dtype=float)
    if y.shape[-1:] != (2,) or y.ndim != (2 if single else 3) or (not single and len(y) != len(x)):
        want = "(K, 2)" if single else f"({len(x)}, K, 2)"
        raise UserError(f"measured has shape {y.shape}; it must be {want}")
    y = y.reshape(len(x), -1, 2)
    bk = y.shape[:2]
    r, d = _shaped("radius", radius, bk, single), _shaped("delta", delta, bk, single)
    for name, a in (("radius", r), ("delta", d)):
        bad = ~np.isfinite(a) | (a < 0)
        if bad.any():
            raise UserError(f"{name} {a[bad].flat[0]}: every {name} must be a finite number >= 0")
    un = _shaped("u_nom", u_nom, (len(x), 2), False).copy()
    if not np.isfinite(un).all():
        raise UserError("u_nom: every entry must be a finite number")
    on = np.isfinite(y).all(-1)
    out = filter_step(np.nan_to_num(y, nan=1.0), x[:, 2:], r, d, on, un, model or TrueModel(), k1, k2, u_max)
    return Filtered(*(a[0] for a in out)) if single else out
