"""``icml25 bundle_cbf filter`` and ``icml25 bundle_cbf fit``: the measurement-aware safety filter for one state,
and the uncertainty-weighted Neural ODE fitted to a user's trajectories.

    icml25 bundle_cbf filter --state PX,PY,VX,VY --measured "DX,DY;DX,DY" --radius R --delta D --u-nom UX,UY
        [--u-max 2] [--k1 3] [--k2 3] [--model MODEL.safetensors]
    icml25 bundle_cbf fit TRAJ.csv --dt 0.02 -o MODEL.safetensors [--sigma-col COL] [--unweighted]
        [--steps 600] [--horizon 5] [--id-col traj] [--seed 0]

``filter`` runs :func:`models.bundle_cbf.filter.safe_control` once: ``--measured`` holds the measured
obstacle-relative positions y = p - o, one ``DX,DY`` pair per obstacle, separated by ``;`` (obstacles are
numbered 1, 2, ... in that order); every obstacle has radius R and measurement-error bound D (the mCBF margin;
0 gives the nominal CBF); ``--model`` is a file written by ``fit`` (default: the true plant, m = 1.2,
c_d = 0.3). A value starting with a minus sign may follow its flag directly (``--state -1,0,0.5,0``). It prints
five lines::

    u: 1.335000 0.300000
    active: obstacle 1
    infeasible: no
    barriers: obstacle 1 b = 0.450000
    model: true plant (m = 1.2, c_d = 0.3)

``u`` is the safe control; ``active`` lists the constraints met with equality (``obstacle I`` and the box faces
``box u_x <= U``, ``box u_x >= -U``, ``box u_y <= U``, ``box u_y >= -U``), or ``none`` (u = u_nom);
``infeasible`` is ``no``, or ``yes (...)`` when no u in the box meets every obstacle's constraint and u is the
box point that maximises the worst constraint slack; ``barriers`` gives b = ||y|| - R - D per obstacle (< 0:
already inside the margin); ``model`` is the true plant or ``PATH (fitted Neural ODE, b_theta = BX BY)``.

``fit`` reads TRAJ.csv (columns t, px, py, vx, vy, ux, uy and the trajectory id ``--id-col``; each trajectory's
rows at the step ``--dt``), runs :func:`models.bundle_cbf.node.fit_dynamics` (the Sigma^-1-weighted loss, or
``--unweighted``) and prints the training loss every quarter of the steps, then a summary::

    step 5/20: training loss 1.956817e-03
    ...
    step 20/20: training loss 1.706150e-03
    fit: 10 trajectories, 160 windows of 5 steps, 20 Adam steps, weighted by column sigma
    one-step velocity error: 0.701787 (relative, sigma^-2 weighted, on traj.csv)
    b_theta: 0.888049 0.897660
    final training loss: 1.706150e-03
    wrote model.safetensors

The one-step velocity error needs no true model: sqrt(sum w ||v^_{t+1} - v~_{t+1}||^2 / sum w ||v~_{t+1} -
v~_t||^2) over every step of the same trajectories, w = sigma^-2 (0: perfect, 1: no better than keeping v; the
noise sets its floor); b_theta is the learned per-axis input gain; the final loss is the last Adam step's. Without
``--sigma-col`` sigma is 1 for every row (a column named sigma is then ignored), so the weighted and the
unweighted fit coincide. MODEL.safetensors is written atomically.

Bad input (a state not of 4 numbers, a pair not of 2, a value that is not a finite number, a negative radius or
delta, u-max, k1 or k2 <= 0, dt <= 0, steps or horizon < 1, a seed outside [0, 2^32), a missing file or column,
a NaN, a sigma <= 0, a model file that is not a safetensors file or not a bundle_cbf model, an output folder that
does not exist or an output not ending in .safetensors) is one line naming the value, exit status 2, and nothing
is written; the seed before any training, the model file's kind before torch loads it.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_seed, check_weights
from icml25.outputs import atomic_output, check_output

VECTOR_FLAGS = ("--state", "--measured", "--u-nom")
MODEL_KIND = "bundle_cbf_node"  # the metadata kind of node.save_model's files
INFEASIBLE = "yes (no u in the box meets every obstacle's constraint: u maximises the worst slack)"
BOX_FACES = ("u_x <= {m}", "u_x >= -{m}", "u_y <= {m}", "u_y >= -{m}")


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 bundle_cbf",
        description="Measurement-aware control barrier functions with Neural ODE dynamics (Zheng & Mei): the "
        "safety filter on measured obstacle positions, and the uncertainty-weighted dynamics fit.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    f = sub.add_parser(
        "filter",
        help="the safe control for one state and measured obstacles",
        description="The closest control to u_nom that meets the high-order mCBF constraint of every measured "
        "obstacle and the box |u_i| <= u_max; prints u, the active constraints and whether the step was "
        "infeasible. A value starting with '-' may follow its flag (--state -1,0,0,0).",
    )
    f.add_argument("--state", required=True, metavar="PX,PY,VX,VY", help="position and velocity")
    f.add_argument(
        "--measured",
        required=True,
        metavar="DX,DY;DX,DY",
        help="measured obstacle-relative positions y = p - o, one pair per obstacle, ';'-separated",
    )
    f.add_argument("--radius", type=float, required=True, help="the obstacles' radius (>= 0)")
    f.add_argument(
        "--delta", type=float, required=True, help="the measurement-error bound (>= 0; 0: the nominal CBF)"
    )
    f.add_argument("--u-nom", required=True, dest="u_nom", metavar="UX,UY", help="the nominal control")
    f.add_argument(
        "--u-max", type=float, default=2.0, dest="u_max", help="the box |u_i| <= u_max (default 2)"
    )
    f.add_argument("--k1", type=float, default=3.0, help="the HOCBF's first gain (> 0, default 3)")
    f.add_argument("--k2", type=float, default=3.0, help="the HOCBF's second gain (> 0, default 3)")
    f.add_argument(
        "--model",
        type=Path,
        metavar="MODEL.safetensors",
        help="a Neural ODE written by `fit` (default: the true plant, m = 1.2, c_d = 0.3)",
    )
    t = sub.add_parser(
        "fit",
        help="fit the control-affine Neural ODE to trajectories",
        description="Fit the uncertainty-weighted Neural ODE to TRAJ.csv; print the one-step velocity error "
        "on the same trajectories, the learned gain b_theta and the final training loss.",
    )
    t.add_argument(
        "data", type=Path, metavar="TRAJ.csv", help="columns t, px, py, vx, vy, ux, uy and a trajectory id"
    )
    t.add_argument("--dt", type=float, required=True, help="the time step of every trajectory (> 0)")
    t.add_argument(
        "--sigma-col",
        dest="sigma_col",
        metavar="COL",
        help="each row's measurement uncertainty (> 0); without it sigma = 1 for every row, and the "
        "weighted fit is the unweighted one",
    )
    t.add_argument("--unweighted", action="store_true", help="the unweighted loss (w_i = 1)")
    t.add_argument("--steps", type=int, default=600, help="Adam steps (default 600)")
    t.add_argument("--horizon", type=int, default=5, help="RK4 steps per training window (default 5)")
    t.add_argument("--id-col", default="traj", dest="id_col", help="the trajectory id column (default traj)")
    t.add_argument("--seed", type=int, default=0, help="initialisation and batching seed (default 0)")
    t.add_argument("-o", "--output", type=Path, required=True, metavar="MODEL.safetensors")
    return parser


def _glue(argv: list[str]) -> list[str]:
    """``--state -1,0,0,0`` -> ``--state=-1,0,0,0``: argparse would read a leading '-' as an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in VECTOR_FLAGS and i + 1 < len(argv) and re.match(r"-[\d.]", argv[i + 1]):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _vector(text: str, n: int, flag: str, form: str) -> list[float]:
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != n:
        raise UserError(f"{flag} {text!r}: expected {n} comma-separated numbers {form}")
    if not all(math.isfinite(v) for v in values):
        raise UserError(f"{flag} {text!r}: every value must be a finite number")
    return values


def _measured(text: str) -> list[list[float]]:
    if not text.strip():
        raise UserError(f"--measured {text!r}: give at least one DX,DY pair")
    pairs = []
    for i, part in enumerate(text.split(";"), 1):
        try:
            pairs.append(_vector(part, 2, "--measured", "DX,DY"))
        except UserError:
            raise UserError(
                f"--measured {text!r}: pair {i} {part!r} is not two finite numbers DX,DY"
            ) from None
    return pairs


def _at_least(value: float, flag: str, bound: float, strict: bool) -> None:
    ok = value > bound if strict else value >= bound
    if not (math.isfinite(value) and ok):
        raise UserError(f"{flag} {value:g}: must be a finite number {'>' if strict else '>='} {bound:g}")


def _load(path: Path):
    check_weights(path, MODEL_KIND, "--model")  # a foreign or broken file before torch and the weights load
    from .node import load_model

    try:
        return load_model(path)
    except UserError as exc:
        raise UserError(f"--model {exc}") from None


def _row(values) -> str:
    return " ".join(f"{float(v):.6f}" for v in values)


def cmd_filter(args: argparse.Namespace) -> int:
    import numpy as np

    from .filter import safe_control

    state = _vector(args.state, 4, "--state", "PX,PY,VX,VY")
    measured = np.array(_measured(args.measured))
    u_nom = _vector(args.u_nom, 2, "--u-nom", "UX,UY")
    _at_least(args.radius, "--radius", 0.0, strict=False)
    _at_least(args.delta, "--delta", 0.0, strict=False)
    _at_least(args.u_max, "--u-max", 0.0, strict=True)
    _at_least(args.k1, "--k1", 0.0, strict=True)
    _at_least(args.k2, "--k2", 0.0, strict=True)
    model = _load(args.model) if args.model is not None else None
    res = safe_control(
        state, measured, args.radius, args.delta, u_nom, model, k1=args.k1, k2=args.k2, u_max=args.u_max
    )
    k = len(measured)
    names = [f"obstacle {i + 1}" for i in range(k)] + [
        f"box {b.format(m=f'{args.u_max:g}')}" for b in BOX_FACES
    ]
    active = [name for name, on in zip(names, res.active, strict=True) if on]
    barrier = np.linalg.norm(measured, axis=-1) - args.radius - args.delta
    print(f"u: {_row(res.u)}")
    print(f"active: {', '.join(active) or 'none'}")
    print(f"infeasible: {INFEASIBLE if res.infeasible else 'no'}")
    print("barriers: " + ", ".join(f"obstacle {i + 1} b = {b:.6f}" for i, b in enumerate(barrier)))
    if model is None:
        print("model: true plant (m = 1.2, c_d = 0.3)")
    else:
        print(f"model: {args.model} (fitted Neural ODE, b_theta = {_row(model.gain(np.zeros(2)))})")
    return 0


def _read(path: Path):
    from icml25.tables import read_csv

    try:
        return read_csv(path)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def cmd_fit(args: argparse.Namespace) -> int:
    _at_least(args.dt, "--dt", 0.0, strict=True)
    if args.steps < 1:
        raise UserError(f"--steps {args.steps}: must be >= 1")
    if args.horizon < 1:
        raise UserError(f"--horizon {args.horizon}: must be >= 1")
    check_seed(args.seed)  # Lightning's seeding refused it, after the trajectories were read and checked
    check_output(args.output)
    if args.output.suffix != ".safetensors":
        raise UserError(f"--output {args.output}: expected a .safetensors file")
    if args.output.exists() and args.data.exists() and args.output.samefile(args.data):
        raise UserError(f"--output {args.output}: the same file as the trajectories")

    import numpy as np  # the arguments above are checked before torch is imported

    from .experiment import observed_error
    from .node import check_trajectories, fit_dynamics, save_model

    frame = _read(args.data)
    check_trajectories(frame, args.id_col, args.sigma_col)
    ids = frame[args.id_col]
    if ids.isna().any():
        raise UserError(
            f"column {args.id_col}: {int(ids.isna().sum())} id(s) missing "
            f"(first at row {int(np.flatnonzero(ids.isna())[0])})"
        )
    frame = frame.reset_index(drop=True)
    lengths = frame.groupby(args.id_col, sort=False).size()
    n_windows = int(np.maximum(lengths.to_numpy() - args.horizon, 0).sum())
    short = int((lengths <= args.horizon).sum())
    weighted = not args.unweighted

    def progress(step: int, loss: float) -> None:
        print(f"step {step}/{args.steps}: training loss {loss:.6e}")

    fitted = fit_dynamics(
        frame,
        args.sigma_col,
        weighted,
        dt=args.dt,
        horizon=args.horizon,
        steps=args.steps,
        seed=args.seed,
        id_col=args.id_col,
        progress=progress,
    )
    scored = frame.copy()
    scored["sigma"] = frame[args.sigma_col].to_numpy(float) if args.sigma_col else 1.0
    error = observed_error(fitted, scored, args.dt, args.id_col)
    with atomic_output(args.output) as tmp:
        save_model(
            tmp,
            fitted,
            dt=args.dt,
            horizon=args.horizon,
            steps=args.steps,
            seed=args.seed,
            sigma_col=args.sigma_col,
        )
    if not weighted:
        how = "unweighted"
    elif args.sigma_col:
        how = f"weighted by column {args.sigma_col}"
    else:
        how = "weighted with sigma = 1 (the same as --unweighted)"
    skipped = f" ({short} of {args.horizon + 1} rows or fewer skipped)" if short else ""
    print(
        f"fit: {len(lengths)} trajectories{skipped}, {n_windows} windows of {args.horizon} steps, "
        f"{args.steps} Adam steps, {how}"
    )
    weights = "sigma^-2 weighted" if args.sigma_col else "sigma = 1"
    print(f"one-step velocity error: {error:.6f} (relative, {weights}, on {args.data.name})")
    print(f"b_theta: {_row(fitted.gain(np.zeros(2)))}")
    print(f"final training loss: {fitted.history[-1]:.6e}")
    print(f"wrote {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(_glue(list(sys.argv[1:] if argv is None else argv)))
    return {"filter": cmd_filter, "fit": cmd_fit}[args.command](args)
