"""Prepare: per seed, the simulated data sets (``<set>_s<seed>.npz``: y, u, the true latents x; the linear set
also ``y_test``, ``u_test``, ``x_test`` under the held-out protocol), or with ``source: npz`` the user's
recordings (``npz_s0.npz``: y, u), and ``meta.json`` (sets, seeds, dt, the true leak-form A per set).

Streams: ``ctx.rng("data", set, seed)`` per set and seed; the linear system's emission MLP from
``ctx.rng("emission")``, the same map for every seed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np

    from icml25.errors import UserError
    from icml25.io import load_npz
    from models.issm.experiment import Protocol, simulated_set, true_A

    pp = ctx.params.prepare
    if pp.source == "npz":
        path = ctx.input_path("file", pp.file)
        arrays = load_npz(path)
        missing = [k for k in ("y", "u") if k not in arrays]
        if missing:
            raise UserError(f"{path}: no array {', '.join(missing)} (expected y and u)")
        np.savez(ctx.out / "npz_s0.npz", y=arrays["y"], u=arrays["u"])
        ctx.write_json("meta.json", {"source": "npz", "sets": ["npz"], "seeds": 1, "dt": pp.dt, "true_A": {}})
        ctx.log.info("recordings %s: y %s, u %s", pp.file, arrays["y"].shape, arrays["u"].shape)
        return
    protocol = Protocol(
        pp.trials, pp.bins, pp.pulses, pp.width, pp.test_pulses, pp.test_width, pp.dt, pp.repetition
    )
    for name in pp.sets:
        for seed in range(pp.seeds):
            data = simulated_set(name, ctx.rng("data", name, seed), ctx.rng("emission"), protocol)
            np.savez(ctx.out / f"{name}_s{seed}.npz", **data)
        ctx.log.info("%s: %d seeds x %d trials x %d bins", name, pp.seeds, pp.trials, pp.bins)
    ctx.write_json(
        "meta.json",
        {
            "source": "simulated",
            "sets": list(pp.sets),
            "seeds": pp.seeds,
            "dt": pp.dt,
            "true_A": {name: true_A(name).tolist() for name in pp.sets},
        },
    )
