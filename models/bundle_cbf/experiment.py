"""The experiment's pieces shared by the stages and the tests: layouts to and from tables, the conditions' episodes
as rows, the fits' held-out errors and the claims' numbers (worst seed, never the mean)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from models.bundle_cbf.simulate import Episode, run_episodes
from models.bundle_cbf.system import Layouts

# condition label -> (the filter's margin rule, which model the filter uses)
CONDITIONS = {
    "mcbf": ("mcbf", "learned"),
    "nominal": ("nominal", "learned"),
    "robust": ("robust", "learned"),
    "none": ("none", "-"),
    "mcbf_true": ("mcbf", "true"),
}
LAYOUT_COLUMNS = ("start_x", "start_y", "goal_x", "goal_y", "waypoint_x", "waypoint_y", "gap_y", "gap_width")


def layout_tables(lay: Layouts, **keys) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(layouts, obstacles) rows for a batch, each tagged with ``keys`` (seed, family)."""
    flat = np.column_stack([lay.start, lay.goal, lay.waypoint, lay.gap_y, lay.gap_width])
    layouts = pd.DataFrame(flat, columns=list(LAYOUT_COLUMNS))
    layouts.insert(0, "layout", np.arange(len(lay)))
    b, k = np.nonzero(lay.mask)
    obstacles = pd.DataFrame({"layout": b, "ox": lay.centres[b, k, 0], "oy": lay.centres[b, k, 1],
                              "r": lay.radii[b, k]})  # fmt: skip
    for name, value in reversed(keys.items()):
        layouts.insert(0, name, value)
        obstacles.insert(0, name, value)
    return layouts, obstacles


def layouts_from(layouts: pd.DataFrame, obstacles: pd.DataFrame) -> Layouts:
    """The batch that ``layout_tables`` wrote (one seed and family's rows), obstacles padded per layout."""
    layouts = layouts.sort_values("layout")
    ids = layouts.layout.to_numpy()
    pos = {v: i for i, v in enumerate(ids)}
    row = obstacles.layout.map(pos).to_numpy()
    slot = obstacles.groupby("layout").cumcount().to_numpy()
    k = max(1, int(slot.max()) + 1) if len(slot) else 1
    centres, radii, mask = np.zeros((len(ids), k, 2)), np.ones((len(ids), k)), np.zeros((len(ids), k), bool)
    centres[row, slot] = obstacles[["ox", "oy"]].to_numpy(float)
    radii[row, slot] = obstacles.r.to_numpy(float)
    mask[row, slot] = True
    a = {c: layouts[c].to_numpy(float) for c in LAYOUT_COLUMNS}
    pair = lambda x, y: np.column_stack([a[x], a[y]])  # noqa: E731
    return Layouts(centres, radii, mask, pair("start_x", "start_y"), pair("goal_x", "goal_y"),
                   pair("waypoint_x", "waypoint_y"), a["gap_y"], a["gap_width"])  # fmt: skip


def episode_rows(lay: Layouts, condition: str, g: np.random.Generator, learned, cfg: Episode,
                 margin_scale: float = 1.0, **keys) -> pd.DataFrame:  # fmt: skip
    """One row per layout of ``condition`` (a key of CONDITIONS) with the learned model where it asks for one."""
    rule, which = CONDITIONS[condition]
    res = run_episodes(lay, rule, g, learned if which == "learned" else None, cfg, margin_scale)
    frame = pd.DataFrame({k: v for k, v in res.items() if k != "positions"})
    frame.insert(0, "layout", np.arange(len(lay)))
    frame.insert(0, "condition", condition)
    for name, value in reversed(keys.items()):
        frame.insert(0, name, value)
    frame["gap_width"] = lay.gap_width
    return frame


def observed_error(model, traj: pd.DataFrame, dt: float, id_col: str = "traj") -> float:
    """For recorded trajectories (no true model): the relative one-step velocity prediction error,
    sqrt(sum w ||v^_{t+1} - v~_{t+1}||^2 / sum w ||v~_{t+1} - v~_t||^2) with w = sigma^-2 of the target rows."""
    from models.bundle_cbf.node import windows
    from models.bundle_cbf.system import rk4_step

    win = windows(traj, traj["sigma"].to_numpy(float), 1, id_col)
    pred = rk4_step(model, win.x0, win.us[:, 0], dt)
    w = win.sigma[:, 0] ** -2
    num = (w * ((pred[:, 2:] - win.target[:, 0, 2:]) ** 2).sum(-1)).sum()
    den = (w * ((win.target[:, 0, 2:] - win.x0[:, 2:]) ** 2).sum(-1)).sum()
    return float(np.sqrt(num / max(den, 1e-300)))


def table(episodes: pd.DataFrame) -> pd.DataFrame:
    """Per family, condition and seed: episodes, constraint satisfaction (no true collision), success, mean path
    length of the successes, mean steps of the successes, infeasible steps per episode."""
    grp = episodes.groupby(["family", "condition", "seed"], sort=False)
    out = grp.agg(episodes=("layout", "size"), satisfaction=("collided", lambda c: 1 - c.mean()),
                  success=("success", "mean"), infeasible=("infeasible", "mean"), min_h=("min_h", "min"))  # fmt: skip
    won = episodes[episodes.success].groupby(["family", "condition", "seed"], sort=False)
    out["path"] = won.path.mean()
    out["steps"] = won.steps.mean()
    return out.reset_index()


def claim_numbers(episodes: pd.DataFrame, errors: pd.DataFrame) -> dict:
    """The claims' numbers on the passage layouts, each the worst seed's (and the per-seed values). Shares are
    computed from counts (a difference of two shares of 100 episodes is then exact: 10 / 100, not 0.0999...)."""
    ep = episodes[episodes.family == "passage"]
    counts = ep.groupby(["condition", "seed"]).agg(n=("layout", "size"), hit=("collided", "sum"),
                                                    won=("success", "sum"))  # fmt: skip
    seeds = sorted(ep.seed.unique())

    def col(cond: str, c: str) -> np.ndarray:
        return np.array([int(counts.loc[(cond, s), c]) for s in seeds])

    n = col("mcbf", "n")
    safe = (n - col("mcbf", "hit")) / n
    gap = (col("mcbf", "won") - col("robust", "won")) / n
    unsafe = col("nominal", "hit") / col("nominal", "n")
    e = errors.set_index(["seed", "weighting"]).error
    ratio = [float(e.loc[(s, "weighted")] / e.loc[(s, "unweighted")]) for s in sorted(errors.seed.unique())]
    return {
        "mcbf_safe": float(safe.min()),
        "mcbf_safe_seeds": safe.tolist(),
        "less_conservative": float(gap.min()),
        "less_conservative_seeds": gap.tolist(),
        "nominal_unsafe": float(unsafe.min()),
        "nominal_unsafe_seeds": unsafe.tolist(),
        "weighting_ratio": max(ratio),
        "weighting_ratio_seeds": ratio,
        "seeds": len(seeds),
    }
