"""Speed and memory of the ell-GD rule (run by hand: python benchmarks/lsmooth_gd.py).

- the step size: closed form against adaptive quadrature (microseconds per call);
- LSmoothGD's optimizer step against torch.optim.SGD's on the same MLP (the global gradient norm and the
  rule cost one reduction over the parameters and one scalar evaluation);
- the analytic suite (cosh from 30 * 1 with the ell rule) and the stage times of the last quick-profile
  `dvc repro` (from .dvc/tmp/icml25-timing). The issue names no reference implementation (a theory paper).
"""

from __future__ import annotations

import sys
import timeit
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks._common import stage_times, stage_times_text, write  # noqa: E402
from models.lsmooth_gd import Ell, LSmoothGD, step_size  # noqa: E402
from models.lsmooth_gd.gd import FUNCTIONS, run_gd  # noqa: E402


def per_call_us(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def optimizer_step_us(make_opt) -> float:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 10))
    x, y = torch.randn(512, 64), torch.randint(0, 10, (512,))
    opt = make_opt(net.parameters())
    torch.nn.functional.cross_entropy(net(x), y).backward()
    return per_call_us(opt.step, 200)


def main() -> None:
    rows = []
    for label, ell in (
        ("(L0, L1): 1 + s", Ell.affine(1.0, 1.0)),
        ("(1 + s)^2", Ell.square(1.0, 1.0)),
        ("1 + 3 s^(2/3)", Ell.parse("1 + 3 * s ** (2/3)")),
    ):
        closed = per_call_us(lambda ell=ell: step_size(ell, 7.5), 20000)
        quad = per_call_us(lambda ell=ell: step_size(ell, 7.5, "quad"), 500)
        rows.append(
            {
                "what": f"step size, ell = {label}",
                "ours": f"{closed:.2f} us (auto)",
                "comparison": f"{quad:.1f} us (quadrature)",
            }
        )
    sgd = optimizer_step_us(lambda p: torch.optim.SGD(p, lr=0.1))
    lsm = optimizer_step_us(lambda p: LSmoothGD(p, Ell.affine(1.0, 1.0)))
    rows.append(
        {
            "what": "optimizer step, MLP 64-256-10 (19k parameters)",
            "ours": f"{lsm:.1f} us (LSmoothGD)",
            "comparison": f"{sgd:.1f} us (torch SGD)",
        }
    )
    tracemalloc.start()
    secs = min(timeit.repeat(lambda: run_gd(FUNCTIONS["cosh"], np.full(10, 30.0), "ell"), number=1, repeat=5))
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    rows.append(
        {
            "what": "ell-GD on cosh, d = 10, x0 = 30 * 1 (144 steps)",
            "ours": f"{secs * 1e3:.1f} ms",
            "comparison": f"peak allocated {peak:.2f} MiB",
        }
    )
    stages = stage_times("lsmooth_gd")
    if stages:
        rows.append(
            {
                "what": "quick profile, `dvc repro` (last run's stage wall times)",
                "ours": f"{sum(stages.values()):.0f} s",
                "comparison": stage_times_text(stages),
            }
        )
    for r in rows:
        print(r, flush=True)
    write(
        "lsmooth_gd",
        ["what", "ours", "comparison"],
        rows,
        note="Two cores; each timing is the best of 5 repeats. A theory paper: no reference implementation.",
    )


if __name__ == "__main__":
    main()
