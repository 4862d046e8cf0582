"""Closed-loop episodes, vectorised over a batch of layouts.

Every step: the robot's position p gives the sensing bound delta(p); each obstacle is measured as
y = p - o + v with a fresh v uniform in the disc of radius delta(p); obstacles whose measured distance is within
``sense`` are constrained; the nominal velocity-tracking control is filtered by the condition's HOCBF (or not);
the true plant steps by RK4. An episode collides when the true distance to any surface goes negative at any step,
succeeds when it reaches within ``goal_tol`` of the goal without having collided within ``steps`` steps, and is
frozen once at the goal.

Conditions (the margin m of b = ||y|| - r - m): ``mcbf`` m = delta(p) (the measurement-aware CBF), ``nominal``
m = 0, ``robust`` m = max delta, ``none`` no filter (u_nom clipped to the box). ``margin_scale`` multiplies the
margin (1 by default: L_h delta with L_h = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.bundle_cbf.filter import filter_step
from models.bundle_cbf.system import (
    DT,
    Layouts,
    TrueModel,
    delta,
    delta_max,
    disc_noise,
    nominal_control,
    rk4_step,
)

CONDITIONS = ("mcbf", "nominal", "robust", "none")


@dataclass(frozen=True)
class Episode:
    """Closed-loop settings (the gains and ranges are ours)."""

    alpha: float = 0.08
    steps: int = 600
    k1: float = 3.0
    k2: float = 3.0
    u_max: float = 2.0
    v_max: float = 1.0
    sense: float = 1.0
    switch: float = 0.3
    goal_tol: float = 0.15


def override(cfg: Episode, spec: str) -> Episode:
    """``cfg`` with the settings of ``spec`` ("name=value[,name=value]", e.g. "k1=1.5,k2=1.5") changed; a
    ValueError names an unknown setting or a value that is not a number."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(Episode)}
    changes = {}
    for part in spec.split(","):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or name not in names:
            raise ValueError(
                f"ablation {spec!r}: {part!r} is not name=value with a name among {', '.join(sorted(names))}"
            )
        try:
            changes[name] = type(getattr(cfg, name))(float(value))
        except ValueError:
            raise ValueError(f"ablation {spec!r}: {value.strip()!r} is not a number") from None
    return dataclasses.replace(cfg, **changes)


def margin_of(condition: str, p: np.ndarray, alpha: float) -> np.ndarray:
    """The condition's margin at positions p (B, 2) -> (B,)."""
    if condition == "mcbf":
        return delta(p, alpha)
    if condition == "robust":
        return np.full(len(p), delta_max(alpha))
    if condition in ("nominal", "none"):
        return np.zeros(len(p))
    raise ValueError(f"condition {condition!r}; choose from {', '.join(CONDITIONS)}")


def run_episodes(lay: Layouts, condition: str, g: np.random.Generator, model=None, cfg: Episode = Episode(),
                 margin_scale: float = 1.0, record: bool = False) -> dict:  # fmt: skip
    """Run every layout of ``lay`` under ``condition`` with ``model`` in the filter (the true plant steps).

    Returns per-episode arrays: collided, success, steps (to the goal, or ``cfg.steps``), path (length),
    min_h (the smallest true surface distance), infeasible (flagged filter steps), active (steps with an active
    obstacle constraint), and with ``record`` the positions (steps + 1, B, 2)."""
    margin_of(condition, lay.start, cfg.alpha)  # rejects an unknown condition before any work
    model = model or TrueModel()
    plant = TrueModel()
    n = len(lay)
    x = np.concatenate([lay.start, np.zeros((n, 2))], 1)
    done = np.zeros(n, bool)
    collided = np.zeros(n, bool)
    steps = np.full(n, cfg.steps)
    path = np.zeros(n)
    min_h = np.full(n, np.inf)
    infeasible = np.zeros(n, int)
    active = np.zeros(n, int)
    trail = [lay.start.copy()] if record else None
    for t in range(cfg.steps):
        p, v = x[:, :2], x[:, 2:]
        u = nominal_control(p, v, lay, cfg.v_max, switch=cfg.switch)
        if condition != "none":
            d = delta(p, cfg.alpha)
            y = p[:, None] - lay.centres + disc_noise(g, d[:, None], lay.centres.shape)
            gap = np.linalg.norm(y, axis=-1) - lay.radii
            on = lay.mask & (gap < cfg.sense)
            # the obstacles in range, nearest first, in as many columns as the most crowded episode needs
            order = np.argsort(np.where(on, gap, np.inf), 1)[:, : max(1, int(on.sum(1).max()))]
            y, on = np.take_along_axis(y, order[..., None], 1), np.take_along_axis(on, order, 1)
            radii = np.take_along_axis(lay.radii, order, 1)
            m = margin_scale * margin_of(condition, p, cfg.alpha)
            f = filter_step(y, v, radii, np.broadcast_to(m[:, None], on.shape), on, u, model, cfg.k1, cfg.k2,
                            cfg.u_max)  # fmt: skip
            u = f.u
            infeasible += f.infeasible & ~done
            active += f.active[:, : on.shape[1]].any(1) & ~done
        else:
            u = np.clip(u, -cfg.u_max, cfg.u_max)
        new = rk4_step(plant, x, u, DT)
        new[done] = x[done]
        path += np.linalg.norm(new[:, :2] - x[:, :2], axis=-1)
        x = new
        h = np.linalg.norm(x[:, None, :2] - lay.centres, axis=-1) - lay.radii
        h = np.where(lay.mask, h, np.inf).min(1)
        min_h = np.minimum(min_h, h)
        collided |= h < 0
        arrived = ~done & (np.linalg.norm(x[:, :2] - lay.goal, axis=-1) < cfg.goal_tol)
        steps[arrived] = t + 1
        done |= arrived
        if record:
            trail.append(x[:, :2].copy())
        if done.all():
            break
    out = {
        "collided": collided,
        "success": done & ~collided,
        "steps": steps,
        "path": path,
        "min_h": min_h,
        "infeasible": infeasible,
        "active": active,
    }
    if record:
        out["positions"] = np.stack(trail)
    return out
