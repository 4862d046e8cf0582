"""Measurement-aware control barrier functions with Neural ODE dynamics: the controlled CPU reproduction.

Zheng and Mei, *Learning Dynamics under Environmental Constraints via Measurement-Induced Bundle Structures*,
ICML 2025 (arXiv 2505.19521). The official code is not public (not in the store); the Genesis tasks, SAC and the
Lie-group symmetry are out of scope.

Plant: a 2-D double integrator with unknown mass and quadratic drag, pdot = v, vdot = -(c_d/m)||v|| v + u/m
(m = 1.2, c_d = 0.3), |u_i| <= 2, dt = 0.02 s, in a 4 x 4 arena with four corner beacons. Each obstacle is
measured as y = p - o + v with v uniform in the disc ||v|| <= delta(p) = alpha min_j ||p - s_j||.

Method: the mCBF b(x, y) = h(y) - L_h delta(p) with h(y) = ||y|| - r (L_h = 1), enforced as a high-order CBF
(psi1 = bdot + k1 b, psi1dot + k2 psi1 >= 0) with a learned control-affine Neural ODE
xdot = [v; a_theta(v) + b_theta u] fitted by RK4 rollouts under the Sigma^-1-weighted loss; the safety filter
is the exact active-set QP min ||u - u_nom||^2 (models/bundle_cbf/filter.py). K(x), alpha, beta, gamma, the gains
and the filter's form are our choices (the paper leaves them open).

Stages: prepare (per seed, the narrow-passage and random-circle layouts and 200 noisy rollouts, or a user's
recorded trajectories: ``source: csv``) -> validate (GX: layouts inside the arena, obstacles with radii > 0,
trajectories finite with sigma > 0 and a constant step) -> train (per seed, the weighted and the unweighted
Neural ODE through Lightning) -> evaluate (the held-out dynamics errors; the closed-loop episodes of every
condition on every layout; the alpha sweep; recorded paths; the learned and true vector fields) -> report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="simulate", metadata={"choices": ("simulate", "csv")})
    csv: str = (
        ""  # with source csv: recorded trajectories under data/bundle_cbf/input/ (the fit command's columns)
    )
    id_col: str = "traj"
    sigma_col: str = (
        "sigma"  # with source csv: the per-row uncertainty column ("" for none: the fits coincide)
    )
    heldout_fraction: float = field(
        default=0.2, metadata={"gt": 0.0, "lt": 1.0}
    )  # csv: trajectories held out
    dt: float = field(default=0.02, metadata={"gt": 0.0})  # csv: the recorded step
    seeds: int = field(default=3, metadata={"ge": 1})
    layouts: int = field(default=100, metadata={"ge": 1})  # narrow-passage layouts per seed (the claims')
    random_layouts: int = field(
        default=100, metadata={"ge": 0}
    )  # the spec's 3-5 random circles (report only)
    gap_min: float = field(default=0.05, metadata={"ge": 0.0})
    gap_max: float = field(default=0.6, metadata={"gt": 0.0})
    rollouts: int = field(default=200, metadata={"ge": 1})
    rollout_steps: int = field(default=20, metadata={"ge": 2})
    fit_noise: float = field(default=0.02, metadata={"ge": 0.0})  # sigma(p) = floor + noise min_j ||p - s_j||
    fit_floor: float = field(default=0.001, metadata={"gt": 0.0})
    heldout: int = field(default=2000, metadata={"ge": 1})  # clean (v, u) states for the one-step error


@dataclass(frozen=True)
class Train:
    horizon: int = field(default=5, metadata={"ge": 1})  # RK4 steps per rollout window
    steps: int = field(default=600, metadata={"ge": 1})
    lr: float = field(default=0.01, metadata={"gt": 0.0})
    batch: int = field(default=1024, metadata={"ge": 1})
    hidden: int = field(default=32, metadata={"ge": 1})
    workers: int = field(default=2, metadata={"ge": 1})


@dataclass(frozen=True)
class Evaluate:
    alpha: float = field(default=0.08, metadata={"ge": 0.0})
    steps: int = field(default=600, metadata={"ge": 1})  # episode length (12 s)
    k1: float = field(default=3.0, metadata={"gt": 0.0})
    k2: float = field(default=3.0, metadata={"gt": 0.0})
    u_max: float = field(default=2.0, metadata={"gt": 0.0})
    v_max: float = field(default=1.0, metadata={"gt": 0.0})
    sense: float = field(default=1.0, metadata={"gt": 0.0})  # obstacles constrained within this measured gap
    switch: float = field(default=0.3, metadata={"ge": 0.0})  # the nominal controller leaves the gap waypoint
    goal_tol: float = field(default=0.15, metadata={"gt": 0.0})
    sweep_alphas: tuple[float, ...] = (0.02, 0.04, 0.08, 0.12)  # report only, on seed 0's passage layouts
    sweep_seeds: int = field(default=1, metadata={"ge": 0})
    record: int = field(default=4, metadata={"ge": 0})  # seed 0's first layouts whose paths are plotted
    # our choices, each changed alone on seed 0's passage layouts (report only): "name=value[,name=value]" over
    # the episode settings above
    ablations: tuple[str, ...] = ("switch=0.0", "switch=0.6", "sense=0.6", "sense=1.5", "k1=1.5,k2=1.5")


PAPER = Paper(
    slug="bundle_cbf",
    citation="Zheng and Mei. *Learning Dynamics under Environmental Constraints via Measurement-Induced Bundle "
    "Structures*. ICML 2025.",
    url="not public",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
