"""Gradient descent under ell-generalized smoothness: the controlled CPU reproduction.

Tyurin. "Toward a Unified Theory of Gradient Descent under Generalized Smoothness". ICML 2025 (a theory paper;
no official code).

||hess f(x)|| <= ell(||grad f(x)||), ell positive and non-decreasing. Step:
x_{k+1} = x_k - gamma_k grad f(x_k), gamma_k = int_0^1 dv / ell(||grad f(x_k)|| (1 + v)), with the descent
f(x_{k+1}) <= f(x_k) - gamma_k ||grad f(x_k)||^2 / 2 and an iteration count that depends on ||grad f(x_0)||
only logarithmically ((L0, L1) case).

Stages (one module each): prepare (scikit-learn's digits for the training experiment) -> validate (GX) ->
train (Lightning: an MLP in the exploding-gradient regime, LSmoothGD against GD and clipped GD at the same
budget) -> evaluate (the analytic suite: cosh, quartic, x - log x with every step rule; closed form against
quadrature; the fit of iterations against log ||grad f(x0)||) -> report (claims in report.py, prose in
report.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    test_fraction: float = field(default=0.2, metadata={"gt": 0.0, "lt": 1.0})


@dataclass(frozen=True)
class Train:
    hidden: int = field(default=64, metadata={"ge": 1})
    init_scale: float = field(default=20.0, metadata={"gt": 0.0})
    L0: float = field(default=2.0, metadata={"gt": 0.0})
    L1: float = field(default=10.0, metadata={"gt": 0.0})
    steps: int = field(default=300, metadata={"ge": 1})
    optimizers: tuple[str, ...] = field(
        default=("lsmooth", "sgd", "clipped"), metadata={"choices": ("lsmooth", "sgd", "clipped")}
    )


@dataclass(frozen=True)
class Evaluate:
    dim: int = field(default=10, metadata={"ge": 1})
    cosh_starts: tuple[float, ...] = field(default=(10.0, 20.0, 30.0, 40.0, 80.0), metadata={"gt": 0.0})
    main_start: float = field(default=30.0, metadata={"gt": 0.0})
    quartic_x0: float = field(default=1e3, metadata={"gt": 0.0})
    xlogx_x0: float = field(default=1e-8, metadata={"gt": 0.0})
    max_iter: int = field(default=10_000, metadata={"ge": 1})
    tol: float = field(default=1e-8, metadata={"gt": 0.0})
    closed_form_samples: int = field(default=1000, metadata={"ge": 1})


PAPER = Paper(
    slug="lsmooth_gd",
    citation="Tyurin. *Toward a Unified Theory of Gradient Descent under Generalized Smoothness*. ICML 2025.",
    url="(theory paper, no official code)",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
