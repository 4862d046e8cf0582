"""``icml25 issm``: fit an interventional state-space model to recordings, and predict responses to a new
stimulation protocol.

    icml25 issm fit DATA.npz --latents D [--iters 500] [--ssm] [--seed 0] [--gamma 1] [--dt 0.05] -o MODEL.safetensors
    icml25 issm predict MODEL.safetensors STIM.npz [--trials K] -o PRED.npz

DATA.npz holds ``y`` (trials x bins x neurons) and ``u`` (trials x bins x inputs; B = I, so one input per
latent: inputs = D). ``fit`` runs :func:`models.issm.fit_issm` (``--ssm``: the baseline with additive inputs
and no clamp) and prints the final ELBO and the eigenvalues of the learned A (leak form: compare with I + the
drift Jacobian). ``predict`` reads ``u`` from STIM.npz (trials x bins x inputs, or one protocol bins x inputs
repeated ``--trials`` times) and writes the predicted observations ``y`` and latents ``x`` of the deterministic
do-rollout.

Bad input (y not 3-D, u's trials or bins differ from y's, inputs not matching B, a NaN, --iters < 1, a seed
outside [0, 2^32), an unreadable file) is a one-line error naming the value, exit status 2, and nothing is
written; ``predict`` checks STIM.npz and the model file's kind before the model loads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_seed, check_weights
from icml25.outputs import atomic_output, check_output


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 issm",
        description="Interventional state-space models (Nejatbakhsh et al., ICML 2025): latent dynamics under "
        "hard interventions (stimulation sets latents to B u), fitted by amortised variational inference.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    f = sub.add_parser(
        "fit",
        help="fit an iSSM (or SSM) to recordings y under inputs u",
        description="Fit by full-batch Adam on the negative ELBO; print the final ELBO and A's eigenvalues.",
    )
    f.add_argument(
        "data",
        type=Path,
        metavar="DATA.npz",
        help="arrays y (trials x bins x neurons), u (trials x bins x inputs)",
    )
    f.add_argument(
        "--latents", type=int, required=True, metavar="D", help="latent dimension (= inputs, B = I)"
    )
    f.add_argument("--iters", type=int, default=500, help="Adam steps (default 500)")
    f.add_argument("--ssm", action="store_true", help="fit the SSM baseline (additive inputs, no clamp)")
    f.add_argument("--seed", type=int, default=0, help="initialisation and sampling seed (default 0)")
    f.add_argument("--gamma", type=float, default=1.0, help="weight of log q (1: the ELBO; 0: the notebook)")
    f.add_argument("--dt", type=float, default=0.05, help="bin width: leak and noise scale (default 0.05)")
    f.add_argument("-o", "--output", type=Path, required=True, metavar="MODEL.safetensors")
    p = sub.add_parser(
        "predict",
        help="predicted observations under a new stimulation protocol",
        description="The deterministic do-rollout of the learned dynamics from x = 0 under STIM's u, then the "
        "emission; writes y (trials x bins x neurons) and x (trials x bins x latents).",
    )
    p.add_argument("model", type=Path, metavar="MODEL.safetensors")
    p.add_argument(
        "stim", type=Path, metavar="STIM.npz", help="array u: trials x bins x inputs, or bins x inputs"
    )
    p.add_argument("--trials", type=int, help="repeat a 2-D protocol this many times (default 1)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="PRED.npz")
    return parser


def _arrays(path: Path, names: tuple[str, ...]) -> dict:
    from icml25.io import load_npz

    arrays = load_npz(path)
    missing = [n for n in names if n not in arrays]
    if missing:
        have = ", ".join(sorted(arrays)) or "none"
        raise UserError(f"{path}: no array {', '.join(missing)} (it holds: {have})")
    return arrays


def _eigs(values) -> str:
    return ", ".join(f"{v.real:.4g}{'+' if v.imag >= 0 else '-'}{abs(v.imag):.4g}i" for v in values)


def cmd_fit(args: argparse.Namespace) -> int:
    from .api import fit_issm

    if args.iters < 1:
        raise UserError(f"--iters must be >= 1, got {args.iters}")
    if args.latents < 1:
        raise UserError(f"--latents must be >= 1, got {args.latents}")
    check_seed(args.seed)  # Lightning's seeding refused it, after the data were read and the trainer built
    check_output(args.output)
    arrays = _arrays(args.data, ("y", "u"))
    fit = fit_issm(
        arrays["y"],
        arrays["u"],
        args.latents,
        interventional=not args.ssm,
        iters=args.iters,
        seed=args.seed,
        gamma=args.gamma,
        dt=args.dt,
    )
    fit.save(args.output)
    print(f"{'SSM' if args.ssm else 'iSSM'}: {args.iters} steps, final ELBO {fit.final_elbo:.6g}")
    print(f"eigenvalues of A: {_eigs(fit.eigenvalues)}")
    print(f"wrote {args.output}")
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    import numpy as np

    from .api import KIND, FittedISSM

    if args.trials is not None and args.trials < 1:
        raise UserError(f"--trials must be >= 1, got {args.trials}")
    check_output(args.output)
    # The protocol and the model file's kind before the model loads (torch and the weights: seconds).
    u = _arrays(args.stim, ("u",))["u"]
    if u.ndim == 3 and args.trials is not None and args.trials != u.shape[0]:
        raise UserError(f"--trials {args.trials} but {args.stim}'s u holds {u.shape[0]} trials")
    if u.ndim not in (2, 3):
        raise UserError(
            f"{args.stim}: u must be 2-D (bins x inputs) or 3-D (trials x bins x inputs), got shape {u.shape}"
        )
    check_weights(args.model, KIND)
    fit = FittedISSM.load(args.model)
    n = args.trials if u.ndim == 2 else None
    y, x = fit.predict(u, n), fit.rollout(u, n)
    with atomic_output(args.output) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, y=y, x=x)
    print(f"predicted {y.shape[0]} trials x {y.shape[1]} bins x {y.shape[2]} neurons; wrote {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"fit": cmd_fit, "predict": cmd_predict}[args.command](args)
