"""``icml25 lsmooth_gd``: the step size of GD under ell-generalized smoothness.

    icml25 lsmooth_gd step --ell "1 + s" --grad-norm 5 [--quadrature]

prints the rule, the family it recognised, and gamma = int_0^1 dv / ell(s (1 + v)) as its last number. The
expression may use numbers, s (the gradient norm), + - * / ** (or ^) and parentheses; it is parsed by an
allow-listed walk over the syntax tree, never evaluated as code. A bad ell (unparsable, another name, not
positive, decreasing) or a negative gradient norm is a one-line error and exit status 2.
"""

from __future__ import annotations

import argparse

from icml25.cli import ToolParser
from icml25.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 lsmooth_gd",
        description="GD step size under ell-generalized smoothness (Tyurin, ICML 2025).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    st = sub.add_parser("step", help="gamma for an ell and a gradient norm")
    st.add_argument("--ell", required=True, help='ell as an expression in s, e.g. "1 + s" or "(1 + s)^2"')
    st.add_argument("--grad-norm", required=True, type=float, help="the gradient norm s >= 0")
    st.add_argument(
        "--quadrature", action="store_true", help="integrate numerically even if a closed form exists"
    )
    return parser


def main(argv: list[str]) -> int:
    from .ell import Ell, step_size

    args = build_parser().parse_args(argv)
    try:
        ell = Ell.parse(args.ell)
        gamma = step_size(ell, args.grad_norm, "quad" if args.quadrature else "auto")
    except ValueError as exc:
        raise UserError(str(exc)) from None
    how = "quadrature" if args.quadrature or ell.kind == "general" else f"closed form ({ell.kind})"
    print(f"ell(s) = {args.ell}; s = {args.grad_norm:g}; {how}")
    print(f"gamma = {gamma!r}")
    return 0
