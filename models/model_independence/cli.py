"""``icml25 model_independence``: the independence test on two local checkpoints.

    icml25 model_independence test A B [--stat u|l2|h|match] [--permutations T] [--seed S] [--inputs N]
                                       [--alpha A] [--json]

A and B are checkpoint folders (config.json + model.safetensors): this project's icml25-glu models or
Llama-architecture Hugging Face folders. Prints each block's log10 p, the Fisher combination (or PERMTEST's
exact p) and a verdict at level alpha (default 1e-4, the paper's threshold). torch is imported only when a
command runs, so ``icml25 --help`` stays fast. Input problems raise :class:`~icml25.errors.UserError`.
"""

from __future__ import annotations

import argparse
import json
import math

from icml25.cli import ToolParser

STAT_HELP = {
    "u": "phi_U: match up-projection weights (exact p-value; fooled by hidden-unit permutations)",
    "l2": "PERMTEST with the l2 distance (exact p-value >= 1/(T+1))",
    "h": "phi_H: match up_proj activations on shared inputs",
    "match": "phi_MATCH: gate vs up activation matchings (robust to permutations and rescaling)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 model_independence",
        description="Independence tests for language models (Zhu et al., ICML 2025): are two models' weights "
        "from independent initialisations?",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    test = sub.add_parser(
        "test",
        help="test two checkpoints for dependence",
        description="Test H0: A and B were trained from independent initialisations.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="statistics:\n" + "\n".join(f"  {k:<6} {v}" for k, v in STAT_HELP.items()),
    )
    test.add_argument("a", metavar="A", help="checkpoint folder")
    test.add_argument("b", metavar="B", help="checkpoint folder")
    test.add_argument("--stat", default="u", help="u, l2, h or match (default: u)")
    test.add_argument(
        "--permutations",
        type=int,
        default=99,
        metavar="T",
        help="PERMTEST permutations for --stat l2 (default: 99)",
    )
    test.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of PERMTEST, of random tokens and of breaking tied matches (default: 0)",
    )
    test.add_argument(
        "--inputs",
        type=int,
        default=200,
        metavar="N",
        help="inputs (digits rows, or random-token sequences) for h and match (default: 200)",
    )
    test.add_argument("--alpha", type=float, default=1e-4, help="level of the verdict (default: 1e-4)")
    test.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def format_p(log10p: float) -> str:
    """A p-value given as log10 p in plain form, also below float64's range (e.g. 3.2e-401)."""
    if log10p >= -300:
        return f"{10.0**log10p:.3g}"
    exponent = math.floor(log10p)
    return f"{10.0 ** (log10p - exponent):.2f}e{exponent}"


def format_log10(log10p: float) -> str:
    """log10 p with one decimal, two near 0 (so -0.04 does not print as -0.0)."""
    return f"{log10p:.1f}" if log10p <= -1 else f"{log10p:.2f}"


def cmd_test(args: argparse.Namespace) -> int:
    from .api import independence_test

    result = independence_test(
        args.a, args.b, stat=args.stat, permutations=args.permutations, seed=args.seed, n_inputs=args.inputs
    )
    if args.json:
        print(json.dumps({**result.to_dict(), "a": str(args.a), "b": str(args.b)}))
        return 0
    print(f"{args.a} vs {args.b}: stat {args.stat}")
    for i, lp in enumerate(result.per_block):
        note = f" ({result.excluded[i]} dead hidden units left out)" if result.excluded[i] else ""
        shown = "n/a (fewer than 3 live units)" if math.isnan(lp) else format_log10(lp)
        print(f"block {i}: log10 p = {shown}{note}")
    if result.per_block:
        used = sum(not math.isnan(lp) for lp in result.per_block)
        print(
            f"Fisher over {used} blocks: p = {format_p(result.log10p)} "
            f"(log10 p = {format_log10(result.log10p)})"
        )
    else:
        print(
            f"PERMTEST with T={args.permutations}: p = {format_p(result.log10p)} "
            f"(log10 p = {format_log10(result.log10p)})"
        )
    if result.log10p <= math.log10(args.alpha):
        print(f"dependent at alpha={args.alpha:g}")
    else:
        note = ""
        if not result.per_block and 1.0 / (args.permutations + 1) > args.alpha:
            note = f" (PERMTEST's smallest p with T={args.permutations} is {1 / (args.permutations + 1):.3g} > alpha)"
        print(f"no evidence of dependence at alpha={args.alpha:g}{note}")
    return 0


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not 0.0 < args.alpha < 1.0:
        from icml25.errors import UserError

        raise UserError(f"--alpha must be in (0, 1), got {args.alpha:g}")
    if args.command == "test":
        return cmd_test(args)
    raise AssertionError(args.command)  # argparse rejects other commands
