"""Neuroalgebraic geometry (position paper): its dictionary checked numerically.

Marchetti, Shahverdi, Mereta, Trager and Kohn, ICML 2025. A position paper without code or experiments: what is
computed here checks known theorems (the dimension of polynomial and linear neuromanifolds, their defects and
fibers; singular points attracting gradient descent), not numbers of the paper.

- Dimension of M = {f_w} = the generic rank of the Jacobian of w -> (f_w(x_1), ..., f_w(x_N)), in float64 and
  exactly over GF(2^31 - 1), against Alexander-Hirschowitz (shallow z^k networks) and N1 (N0 + N2 - N1) (linear).
- Singularities: descent on |W W' - T|^2 (PSD matrices of rank <= 4) ends at a rank-deficient W exactly when T has
  fewer than 4 positive eigenvalues; the signed model W1 W0 does not.

Stages: prepare (architectures, targets and starting points; no data set) -> validate (GX: widths, degrees, the
ambient dimension under the cap; symmetric finite targets) -> train (the descent trials, plain NumPy: nothing
learns from data, so no Lightning) -> evaluate (ranks, closed forms, endpoints) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    shallow_ns: tuple[int, ...] = (2, 3, 4, 5, 6)
    shallow_ks: tuple[int, ...] = (2, 3, 4)
    shallow_extra: int = field(default=2, metadata={"ge": 0})  # r up to floor(C(n+k-1, k) / n) + extra
    linear_widths: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
    deep: tuple[tuple[int, ...], ...] = (
        (2, 2, 2, 1),
        (3, 2, 2, 1),
        (2, 3, 2, 1),
        (3, 3, 3, 1),
        (2, 2, 2, 2, 1),
    )
    deep_degree: int = field(default=2, metadata={"ge": 2})
    trials: int = field(default=200, metadata={"ge": 1})
    size: int = field(default=6, metadata={"ge": 2})
    rank: int = field(default=4, metadata={"ge": 1})
    init: float = field(default=1e-3, metadata={"gt": 0.0})


@dataclass(frozen=True)
class Train:
    steps: int = field(default=4000, metadata={"ge": 1})
    lr: float = field(default=0.01, metadata={"gt": 0.0})


PAPER = Paper(
    slug="neuroalgebraic",
    citation="Marchetti, Shahverdi, Mereta, Trager and Kohn. *Position: Algebra Unveils Deep Learning - An "
    "Invitation to Neuroalgebraic Geometry*. ICML 2025.",
    url="none (a position paper)",
    schema={"prepare": Prepare, "train": Train},
)
