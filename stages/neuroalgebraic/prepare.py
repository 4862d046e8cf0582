"""Prepare: the architectures (``architectures.csv``: family, widths, degree; the shallow and linear sweeps and the
deep monomial networks), the descent's targets and starting points (``targets.npz``: T = (G + G') / 2 per trial,
W0 for the sum-of-squares model, A0 and B0 for the signed control, each init * N(0, 1)) and ``meta.json``. No
data set."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import numpy as np
    import pandas as pd

    from models.neuroalgebraic.descent import targets
    from models.neuroalgebraic.experiment import family, linear_cases, shallow_cases
    from models.neuroalgebraic.neuromanifold import Architecture

    pp = ctx.params.prepare
    archs = shallow_cases(pp.shallow_ns, pp.shallow_ks, pp.shallow_extra) + linear_cases(pp.linear_widths)
    archs += [Architecture(tuple(w), pp.deep_degree) for w in pp.deep]
    pd.DataFrame(
        [{"family": family(a), "widths": ",".join(map(str, a.widths)), "degree": a.degree} for a in archs]
    ).to_csv(ctx.out / "architectures.csv", index=False)
    rng = ctx.rng("descent")
    n, r = pp.size, pp.rank
    T = targets(pp.trials, n, rng)
    np.savez(
        ctx.out / "targets.npz",
        T=T,
        W0=pp.init * rng.standard_normal((pp.trials, n, r)),
        A0=pp.init * rng.standard_normal((pp.trials, n, r)),
        B0=pp.init * rng.standard_normal((pp.trials, r, n)),
    )
    ctx.write_json("meta.json", {"trials": pp.trials, "size": n, "rank": r, "architectures": len(archs)})
    ctx.log.info("%d architectures, %d descent trials", len(archs), pp.trials)
