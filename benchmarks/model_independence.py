"""Speed and memory of the model_independence statistics (run by hand: python benchmarks/model_independence.py).

For each model size (d = residual width, h = hidden width, L = 2 blocks, random icml25-glu weights of two
independent models): wall time of phi_U, phi_H and phi_MATCH (on N = 200 inputs) and of PERMTEST-l2 with
T = 99, and the peak memory of a process running phi_MATCH. h = 11008 is one Llama-2-7B MLP width (the paper's
models): the LAP is O(h^3) and the h x h float64 cost matrix is ~1 GB, so it is measured for phi_U on one block
only. Writes benchmarks/results/model_independence.json, which the report renders.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import peak_rss_mb, timed, write  # noqa: E402

SIZES = [(32, 64), (128, 512), (512, 2048)]


def weights_pair(d: int, h: int):
    import torch

    from models.model_independence.glu import GLUConfig, init_weights

    cfg = GLUConfig(d_model=d, d_hidden=h, n_blocks=2)
    return (
        cfg,
        init_weights(cfg, torch.Generator().manual_seed(1)),
        init_weights(cfg, torch.Generator().manual_seed(2)),
    )


def main() -> None:
    import torch

    from models.model_independence import stats
    from models.model_independence.glu import forward

    rows = []
    for d, h in SIZES:
        cfg, w1, w2 = weights_pair(d, h)
        x = torch.rand(200, cfg.d_in)
        with torch.no_grad():
            a1, a2 = forward(w1, x, 2, collect=True)[1], forward(w2, x, 2, collect=True)[1]
        repeat = 3 if h <= 512 else 1
        u = timed(lambda: stats.phi_u(w1, w2, 2), repeat)[0]  # noqa: B023
        hh = timed(lambda: stats.phi_h(a1, a2), repeat)[0]  # noqa: B023
        m = timed(lambda: stats.phi_match(a1, a2), repeat)[0]  # noqa: B023
        p = timed(lambda: stats.permtest_l2(w1, w2, "icml25-glu", 2, T=99), 1)[0]  # noqa: B023
        mem = peak_rss_mb(
            "import sys; sys.path.insert(0, '.')\n"
            "import torch\nfrom benchmarks.model_independence import weights_pair\n"
            "from models.model_independence import stats\nfrom models.model_independence.glu import forward\n"
            f"cfg, w1, w2 = weights_pair({d}, {h}); x = torch.rand(200, cfg.d_in)\n"
            "a1 = forward(w1, x, 2, collect=True)[1]; a2 = forward(w2, x, 2, collect=True)[1]\n"
            "stats.phi_match(a1, a2)\n"
        )
        rows.append(
            {
                "d": d,
                "h": h,
                "phi_U s": round(u, 4),
                "phi_H s": round(hh, 4),
                "phi_MATCH s": round(m, 4),
                "PERMTEST-l2 (T=99) s": round(p, 3),
                "phi_MATCH peak RSS MiB": round(mem),
            }
        )
        print(rows[-1], flush=True)

    import numpy as np

    rng = np.random.default_rng(0)
    h = 11008
    u1, u2 = rng.standard_normal((h, 512)), rng.standard_normal((h, 512))
    t = timed(lambda: stats.match(u1, u2), 1)[0]
    rows.append(
        {
            "d": "512 (cols)",
            "h": h,
            "phi_U s": f"{t:.1f} (MATCH, one block)",
            "phi_H s": "-",
            "phi_MATCH s": "-",
            "PERMTEST-l2 (T=99) s": "-",
            "phi_MATCH peak RSS MiB": "-",
        }
    )
    print(rows[-1], flush=True)
    write(
        "model_independence",
        list(rows[0]),
        rows,
        note="Two cores. The quick profile's models are d = 32, h = 64 (first row). No official timing to "
        "compare with: the paper reports none; its code runs MATCH on GPU tensors moved back to scipy.",
    )


if __name__ == "__main__":
    main()
