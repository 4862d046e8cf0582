"""``icml25 neuroalgebraic dim``: the dimension of a polynomial network's neuromanifold.

    icml25 neuroalgebraic dim --widths 3,2,1 --degree 3 [--fixed-output] [--exact] [--seed S]

Prints the number of parameters, the symmetries (rescalings, or GL for linear networks), the expected dimension,
the computed one (float64 Jacobian rank; with ``--exact`` also the rank over GF(2^31 - 1)), the ambient dimension,
the defect, the generic fiber's dimension and whether the neuromanifold fills its ambient space. Bad input (fewer
than 2 widths, a width < 1, degree < 1, a value that is not an integer, an ambient dimension above the cap) is one
line naming the value, exit status 2.
"""

from __future__ import annotations

import argparse

from icml25.cli import ToolParser
from icml25.errors import UserError


def _ints(flag: str, text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{flag} {text!r}: expected integers separated by commas") from None


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 neuroalgebraic",
        description="Neuroalgebraic geometry (ICML 2025 position paper): dimensions of neuromanifolds.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = sub.add_parser("dim", help="the dimension of a polynomial network's neuromanifold")
    d.add_argument("--widths", required=True, help="d_0,...,d_L, e.g. 3,2,1")
    d.add_argument("--degree", required=True, help="the activation's degree k (z^k; 1: linear)")
    d.add_argument("--fixed-output", action="store_true", help="fix the output layer to ones (a_i = 1)")
    d.add_argument("--exact", action="store_true", help="also the exact rank over GF(2^31 - 1)")
    d.add_argument("--seed", type=int, default=0)
    return parser


def cmd_dim(args: argparse.Namespace) -> int:
    from .neuromanifold import neuromanifold

    widths = _ints("--widths", args.widths)
    try:
        degree = int(args.degree.strip())
    except ValueError:
        raise UserError(f"--degree {args.degree!r}: expected one integer") from None
    try:
        nm = neuromanifold(widths, degree, args.fixed_output)
        nm.check_cap()
    except ValueError as exc:
        raise UserError(str(exc)) from None
    d = nm.dimension(exact=args.exact, seed=args.seed)
    print(f"architecture {d.architecture}")
    print(f"  parameters    {d.params}")
    print(f"  symmetries    {d.symmetries}")
    print(f"  expected      {d.expected}")
    print(f"  computed      {d.computed} (float64 Jacobian rank)")
    if d.exact is not None:
        print(f"  exact         {d.exact} (rank over GF(2^31 - 1))")
    print(f"  ambient       {d.ambient}")
    print(f"  defect        {d.defect}")
    print(f"  fiber         {d.fiber}")
    print(f"  fills         {'yes' if d.fills else 'no'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"dim": cmd_dim}[args.command](args)
