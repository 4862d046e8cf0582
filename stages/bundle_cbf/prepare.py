"""Prepare: per seed, the narrow-passage layouts (the claims') and the spec's random-circle layouts, written as
``layouts.csv`` (one row per layout: start, goal, the gap's waypoint, height and free width) and
``obstacles.csv`` (one row per circle); the Neural ODE's data, ``trajectories.csv`` (seed, traj, t, px, py, vx,
vy, ux, uy, sigma, split): 200 short rollouts with noise growing away from the beacons (``source: simulate``), or
a user's recorded trajectories (``source: csv``: the fit command's columns, a share of the trajectory ids held
out); and ``heldout.npz`` (clean velocities and controls for the one-step acceleration error; simulate only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def _recorded(ctx: StageContext):
    """A user's trajectories: checked, sigma named (or ones), ids split into train and held-out."""
    import numpy as np
    import pandas as pd

    from icml25.errors import UserError
    from models.bundle_cbf.node import check_trajectories

    pp = ctx.params.prepare
    if not pp.csv:
        raise UserError("papers.bundle_cbf.prepare.csv: empty; name a file under data/bundle_cbf/input/")
    path = ctx.input_path("csv", pp.csv)
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    try:
        check_trajectories(frame, pp.id_col, pp.sigma_col or None)
    except UserError as exc:
        raise UserError(f"{path.name}: {exc}") from None
    frame = frame.rename(columns={pp.id_col: "traj"})
    frame["traj"] = pd.factorize(frame.traj)[0]  # ids of any type -> 0, 1, ... in order of appearance
    frame["sigma"] = frame[pp.sigma_col].astype(float) if pp.sigma_col else 1.0
    ids = frame.traj.unique()
    held = ctx.rng("heldout").permutation(len(ids))[: max(1, round(pp.heldout_fraction * len(ids)))]
    if len(held) == len(ids):
        raise UserError(f"{path}: {len(ids)} trajectory id(s); at least two are needed (one is held out)")
    frame["split"] = np.where(frame.traj.isin(ids[held]), "heldout", "train")
    return frame[["traj", "t", "px", "py", "vx", "vy", "ux", "uy", "sigma", "split"]], path.name


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from models.bundle_cbf.data import heldout, rollouts
    from models.bundle_cbf.experiment import layout_tables
    from models.bundle_cbf.system import passage, random_circles

    pp = ctx.params.prepare
    if pp.gap_max <= pp.gap_min:
        from icml25.errors import UserError

        raise UserError(f"papers.bundle_cbf.prepare.gap_max {pp.gap_max} must exceed gap_min {pp.gap_min}")
    lays, obs = [], []
    for k in range(pp.seeds):
        families = [("passage", passage(ctx.rng("passage", k), pp.layouts, (pp.gap_min, pp.gap_max)))]
        if pp.random_layouts:
            families.append(("random", random_circles(ctx.rng("random", k), pp.random_layouts)))
        for family, lay in families:
            a, b = layout_tables(lay, seed=k, family=family)
            lays.append(a)
            obs.append(b)
    pd.concat(lays, ignore_index=True).to_csv(ctx.out / "layouts.csv", index=False)
    pd.concat(obs, ignore_index=True).to_csv(ctx.out / "obstacles.csv", index=False)
    if pp.source == "simulate":
        frames = [rollouts(ctx.rng("rollouts", k), pp.rollouts, pp.rollout_steps, pp.fit_noise, pp.fit_floor)
                  .assign(split="train").assign(seed=k) for k in range(pp.seeds)]  # fmt: skip
        traj = pd.concat(frames, ignore_index=True)
        v, u = heldout(ctx.rng("heldout"), pp.heldout)
        np.savez(ctx.out / "heldout.npz", v=v, u=u)
        described, dt = f"{pp.rollouts} simulated rollouts of {pp.rollout_steps} steps a seed", 0.02
    else:
        rec, name = _recorded(ctx)
        traj = pd.concat([rec.assign(seed=k) for k in range(pp.seeds)], ignore_index=True)
        described, dt = f"{name}: {rec.traj.nunique()} recorded trajectories", pp.dt
    traj = traj[["seed", *[c for c in traj.columns if c != "seed"]]]
    traj.to_csv(ctx.out / "trajectories.csv", index=False)
    sig = traj.sigma.to_numpy(float)
    ctx.write_json(
        "meta.json",
        {
            "source": pp.source,
            "data": described,
            "seeds": pp.seeds,
            "layouts": pp.layouts,
            "random_layouts": pp.random_layouts,
            "gap": [pp.gap_min, pp.gap_max],
            "dt": dt,
            "trajectory_rows": int((traj.seed == 0).sum()),
            "sigma": {"min": float(sig.min()), "max": float(sig.max())},
            "heldout": pp.heldout if pp.source == "simulate" else int((traj.split == "heldout").sum()),
        },
    )
    ctx.log.info("%d seed(s): %d passage + %d random layouts each; %s (sigma %.4f to %.4f)", pp.seeds,
                 pp.layouts, pp.random_layouts, described, sig.min(), sig.max())  # fmt: skip
