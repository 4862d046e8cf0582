"""``icml25 star``: learn skill codes from a user's demonstrations, and code their chunks.

    icml25 star fit DEMOS.hdf5 [--horizon 8] [--depths 2] [--codes 32] [--ste] [--steps 1500] [--seed 0] -o MODEL.safetensors
    icml25 star codes MODEL.safetensors DEMOS.hdf5 [--stride H] -o CODES.csv

DEMOS.hdf5 is LIBERO's layout: ``data/demo_i/actions`` (T x A) per demo. ``fit`` trains the RaRSQ autoencoder
(``--ste``: the straight-through baseline) on every window of ``--horizon`` steps and prints, per depth, the code
perplexity exp(H(p)) and the active codes, and the reconstruction MSE (standardised actions). ``codes`` writes
one row per chunk (demo, start step, code_1 .. code_D, the chunk's reconstruction MSE), chunks every
``--stride`` steps (default: the model's horizon, non-overlapping).

Bad input (a horizon longer than a demo, depths < 1, codes < 2, NaN actions, a demo without ``actions``, a file
that is not HDF5, a seed outside [0, 2^32)) is a one-line error naming the value, exit status 2, and nothing is
written; ``codes`` reads the demos and checks the model file's kind before the model loads.
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
        prog="icml25 star",
        description="STAR (Li et al., ICML 2025): residual skill codes of action chunks, learned with the "
        "rotation trick at every depth (RaRSQ).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    f = sub.add_parser(
        "fit",
        help="learn skill codes from demonstrations",
        description="Train RaRSQ (or STE) on every window of --horizon steps; print per-depth perplexity, "
        "active codes and the reconstruction MSE.",
    )
    f.add_argument("demos", type=Path, metavar="DEMOS.hdf5", help="data/demo_i/actions (T x A) per demo")
    f.add_argument("--horizon", type=int, default=8, help="steps per chunk (default 8)")
    f.add_argument("--depths", type=int, default=2, help="residual depths D (default 2)")
    f.add_argument("--codes", type=int, default=32, help="codes per codebook K (default 32)")
    f.add_argument("--ste", action="store_true", help="the straight-through baseline instead of the rotation")
    f.add_argument("--steps", type=int, default=1500, help="Adam steps of batch 256 (default 1500)")
    f.add_argument("--seed", type=int, default=0, help="initialisation and minibatch seed (default 0)")
    f.add_argument("-o", "--output", type=Path, required=True, metavar="MODEL.safetensors")
    c = sub.add_parser(
        "codes",
        help="the codes of each chunk of demonstrations",
        description="Code every chunk (every --stride steps) of every demo; write a CSV.",
    )
    c.add_argument("model", type=Path, metavar="MODEL.safetensors")
    c.add_argument("demos", type=Path, metavar="DEMOS.hdf5")
    c.add_argument("--stride", type=int, help="steps between chunk starts (default: the model's horizon)")
    c.add_argument("-o", "--output", type=Path, required=True, metavar="CODES.csv")
    return parser


def _usage_lines(usage: dict, depths: int, codes: int) -> list[str]:
    lines = [
        f"depth {d}: perplexity {usage[f'perplexity_{d}']:.3f}, active codes {usage[f'active_{d}']} of {codes}"
        for d in range(1, depths + 1)
    ]
    return [*lines, f"reconstruction MSE (standardised actions): {usage['mse']:.5f}"]


def cmd_fit(args: argparse.Namespace) -> int:
    from .api import check_demos, check_sizes, chunks_of, fit_skill_model, read_hdf5

    check_sizes(args.horizon, args.depths, args.codes, args.steps)
    check_seed(args.seed)  # Lightning's seeding refused it, after the demos were read and the trainer built
    check_output(args.output)
    demos = read_hdf5(args.demos)
    check_demos(demos, args.horizon, source=str(args.demos))
    model = fit_skill_model(
        demos, args.horizon, args.depths, args.codes, ste=args.ste, steps=args.steps, seed=args.seed
    )
    chunks, _ = chunks_of(demos, args.horizon)
    usage = model.usage(chunks)
    model.save(args.output)
    kind = "STE" if args.ste else "RaRSQ"
    print(f"{kind}: {len(demos)} demos, {len(chunks)} chunks of {args.horizon} steps, {args.steps} steps")
    for line in _usage_lines(usage, args.depths, args.codes):
        print(line)
    print(f"wrote {args.output}")
    return 0


def cmd_codes(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    from .api import KIND_SKILLS, SkillModel, check_demos, chunks_of, read_hdf5

    if args.stride is not None and args.stride < 1:
        raise UserError(f"--stride must be >= 1, got {args.stride}")
    check_output(args.output)
    # the demos and the model file's kind before the model loads (Lightning's import and the weights: seconds)
    demos = read_hdf5(args.demos)
    check_weights(args.model, KIND_SKILLS)
    model = SkillModel.load(args.model)
    cfg = model.config
    check_demos(demos, cfg.horizon, source=str(args.demos))
    width = next(iter(demos.values())).shape[1]
    if width != cfg.action_dim:
        raise UserError(
            f"{args.demos}: actions have {width} dimensions, the model was fitted on {cfg.action_dim}"
        )
    chunks, where = chunks_of(demos, cfg.horizon, args.stride or cfg.horizon)
    codes = model.codes(chunks)
    err = ((model.decode(codes) - chunks) / model.sd.reshape(cfg.horizon, cfg.action_dim)) ** 2
    frame = pd.DataFrame(where, columns=["demo", "start"])
    for d in range(cfg.depths):
        frame[f"code_{d + 1}"] = codes[:, d]
    frame["mse"] = np.round(err.reshape(len(err), -1).mean(1), 6)
    with atomic_output(args.output) as tmp:
        frame.to_csv(tmp, index=False)
    print(f"{len(frame)} chunks of {cfg.horizon} steps from {len(demos)} demos; wrote {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"fit": cmd_fit, "codes": cmd_codes}[args.command](args)
