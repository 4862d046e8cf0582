"""``icml25 autospeculative sample``: ASD on the mixture, the digits network or a checkpoint.

    icml25 autospeculative sample --model gmm|digits|CKPT.safetensors --steps K --window L --n N [--seed S]
        [--frozen stale|fresh] [--check] -o out.npz

Prints the mean sequential calls per sample (against the sequential sampler's K + 1), the evaluations and the
acceptance rate; ``--check`` also runs the sequential sampler (an independent stream) and prints the
energy-distance permutation test's p-value. Writes ``samples``, per-chain ``calls``, ``evaluations`` and
``rounds`` (and with ``--check`` ``sequential``, ``energy``, ``p``) to the .npz. Bad input (K < 2, L outside
[1, K], n < 1, a negative seed, an unknown model, a checkpoint that is not the x0 network's, an output that is not
.npz) is one line naming the value, exit status 2, nothing written, before any model loads.
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
        prog="icml25 autospeculative",
        description="Autospeculative decoding (ICML 2025): exact parallel sampling of a DDPM.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser(
        "sample", help="sample with ASD", description="Sample with ASD; print calls and acceptance."
    )
    s.add_argument(
        "--model", required=True, help="gmm, digits (the trained network) or a .safetensors checkpoint"
    )
    s.add_argument("--steps", type=int, required=True, metavar="K", help="DDPM steps K")
    s.add_argument("--window", type=int, required=True, metavar="L", help="draft window L (1..K)")
    s.add_argument("--n", type=int, required=True, help="samples")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument(
        "--frozen", choices=("stale", "fresh"), default="stale", help="the draft mean (default stale)"
    )
    s.add_argument("--check", action="store_true", help="also run the sequential sampler and test equality")
    s.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.npz")
    return parser


def cmd_sample(args: argparse.Namespace) -> int:
    import numpy as np

    from .api import check, model, sample
    from .denoisers import NETWORK_KIND

    check(args.steps, args.window, args.n)
    check_seed(args.seed, bound=None)  # NumPy refused it with a traceback, after the model loaded
    if args.output.suffix != ".npz":
        raise UserError(f"--output {args.output}: expected a .npz file")
    check_output(args.output)
    if args.model.endswith(".safetensors"):
        check_weights(Path(args.model), NETWORK_KIND)  # a foreign or broken file before torch loads it
    loaded = model(args.model)  # an unknown model or a bad checkpoint fails before any sampling
    out = sample(loaded, args.steps, args.window, args.n, args.seed, args.check, args.frozen)
    calls, K = out["calls"], args.steps
    rate = out["accepted"].sum() / max(out["judged"].sum(), 1)
    print(
        f"{args.model}: K = {K}, L = {args.window}, n = {args.n}: {calls.mean():.1f} sequential calls per sample "
        f"(max {calls.max()}; sequential sampler {K + 1}, speed-up {(K + 1) / calls.mean():.1f}x), "
        f"{out['evaluations'].mean():.0f} evaluations per sample, {rate:.3f} of judged drafts accepted"
    )
    if args.check:
        print(
            f"check against the sequential sampler: energy distance {out['energy']:.4f}, permutation p = {out['p']:.3f}"
        )
    with atomic_output(args.output) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **{k: np.asarray(v) for k, v in out.items() if k not in ("judged", "accepted")})
    print(f"wrote {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"sample": cmd_sample}[args.command](args)
