"""ell-generalized smoothness and the step-size rule of Tyurin (ICML 2025).

Assumption: ||hess f(x)|| <= ell(||grad f(x)||) with ell: [0, inf) -> (0, inf) non-decreasing and positive.
Lemma: for q(s) = int_0^s dv / ell(||grad f(x)|| + v) and ||y - x|| < q(inf),
f(y) <= f(x) + <grad f(x), y - x> + int_0^{||y - x||} q^{-1}(t) dt. Minimising this bound along -grad f gives
the step length q(||grad f||), that is

    x_{k+1} = x_k - gamma_k grad f(x_k),   gamma_k = int_0^1 dv / ell(s_k (1 + v)),   s_k = ||grad f(x_k)||,

and, q^{-1} being convex, the descent f(x_{k+1}) <= f(x_k) - gamma_k s_k^2 / 2, with 1/ell(2 s) <= gamma <= 1/ell(s).

Closed forms (gamma = 1/ell(0) at s = 0):
- constant ell = L:            gamma = 1/L;
- (L0, L1): ell = L0 + L1 s:    gamma = log1p(L1 s / (L0 + L1 s)) / (L1 s)   (-> 1/L0 as s -> 0, ~ ln 2/(L1 s) as
  s -> inf, like normalised GD);
- ell = (a + b s)^2:            gamma = 1 / ((a + b s)(a + 2 b s))   ((1 + s)^2: 1/((1 + s)(1 + 2 s))).
Any other ell: adaptive quadrature (scipy.integrate.quad, relative tolerance 1e-12).

An ell can be written as an expression in ``s`` (numbers, s, + - * / ** and parentheses), parsed by an
allow-listed walk over Python's AST (never eval; sympy's parsers call eval). It must be positive and
non-decreasing: both are checked on a log-spaced grid of s in [0, 1e8] when the expression is parsed. Limits that
keep a hostile or mistyped expression a one-line error: at most 1,000 characters, parentheses and operators
nested at most 50 deep, and every number a finite float64 (a 400-digit literal is refused, not an
OverflowError); an expression that overflows float64 on the grid is refused as such.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
MAX_LENGTH = 1000  # characters of an ell expression
MAX_DEPTH = 50  # nesting of parentheses, and of operators in the syntax tree
CHECK_GRID = [0.0] + [10.0**e for e in range(-6, 9)] + [x * 10.0**e for e in range(-3, 8) for x in (2, 5)]


def _show(text: str, limit: int = 60) -> str:
    """``repr(text)``, cut to about ``limit`` characters: an error message stays one short line."""
    r = repr(str(text))
    return r if len(r) <= limit else r[: limit - 5] + "...'" + f" ({len(str(text))} chars)"


def _paren_depth(source: str) -> int:
    depth = deepest = 0
    for ch in source:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


def _tree_depth(tree: ast.AST) -> int:
    """How deeply expressions nest in the syntax tree (``s + s + s``: 3), computed without recursion."""
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        depth += isinstance(node, ast.expr)
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in ast.iter_child_nodes(node))
    return deepest


def _compile(node: ast.AST, text: str) -> Callable[[float], float]:
    if isinstance(node, ast.Expression):
        return _compile(node.body, text)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        try:
            c = float(node.value)
        except OverflowError:
            c = math.inf
        if not math.isfinite(c):
            digits = len(str(abs(node.value))) if isinstance(node.value, int) else None
            literal = ast.get_source_segment(str(text).strip().replace("^", "**"), node) or str(node.value)
            what = f"a {digits}-digit number" if digits else f"the number {_show(literal)}"
            raise ValueError(f"ell {_show(text)}: {what} is beyond float64 (at most about 1.8e308)")
        return lambda s: c
    if isinstance(node, ast.Name):
        if node.id != "s":
            raise ValueError(
                f"ell {_show(text)}: unknown name {_show(node.id)} (only s, the gradient norm, is allowed)"
            )
        return lambda s: s
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _compile(node.operand, text)
        return (lambda s: -inner(s)) if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        f, a, b = _BINOPS[type(node.op)], _compile(node.left, text), _compile(node.right, text)
        return lambda s: f(a(s), b(s))
    what = type(node).__name__
    raise ValueError(
        f"ell {_show(text)}: {what} is not allowed (only numbers, s, + - * / ** and parentheses)"
    )


@dataclass(frozen=True)
class Ell:
    """ell(s) with its closed form when one applies: kind in {"constant", "affine", "square", "general"} and
    the coefficients (L,), (L0, L1) or (a, b)."""

    fn: Callable[[float], float]
    kind: str = "general"
    coef: tuple[float, ...] = ()
    text: str = ""

    def __call__(self, s: float) -> float:
        return self.fn(s)

    @staticmethod
    def constant(L: float) -> Ell:
        _positive(L, "L")
        return Ell(lambda s: L, "constant", (L,), f"{L:g}")

    @staticmethod
    def affine(L0: float, L1: float) -> Ell:
        _positive(L0, "L0")
        if L1 < 0:
            raise ValueError(f"L1 must be >= 0, got {L1}")
        if L1 == 0:
            return Ell.constant(L0)
        return Ell(lambda s: L0 + L1 * s, "affine", (L0, L1), f"{L0:g} + {L1:g} s")

    @staticmethod
    def square(a: float, b: float) -> Ell:
        _positive(a, "a")
        if b < 0:
            raise ValueError(f"b must be >= 0, got {b}")
        return Ell(lambda s: (a + b * s) ** 2, "square", (a, b), f"({a:g} + {b:g} s)^2")

    @staticmethod
    def parse(text: str) -> Ell:
        """An ell from an expression in s; recognises the closed-form families; checks positivity and
        monotonicity on a grid."""
        text = str(text)
        source = text.strip().replace("^", "**")
        if len(source) > MAX_LENGTH:
            raise ValueError(
                f"ell {_show(text)}: {len(source)} characters long, at most {MAX_LENGTH} allowed"
            )
        if _paren_depth(source) > MAX_DEPTH:
            raise ValueError(f"ell {_show(text)}: parentheses nested deeper than {MAX_DEPTH}")
        try:
            tree = ast.parse(source, mode="eval")
        # ValueError: a NUL byte, an integer literal beyond Python's digit limit
        except (SyntaxError, ValueError):
            raise ValueError(f"ell {_show(text)}: not a valid expression") from None
        except (RecursionError, MemoryError):
            raise ValueError(f"ell {_show(text)}: nested deeper than {MAX_DEPTH}") from None
        if _tree_depth(tree) > MAX_DEPTH:
            raise ValueError(f"ell {_show(text)}: operators nested deeper than {MAX_DEPTH}")
        raw = _compile(tree, text)

        def fn(s: float) -> float:
            return float(raw(float(s)))

        values = []
        for s in CHECK_GRID:
            try:
                v = fn(s)
            except OverflowError:
                raise ValueError(f"ell {_show(text)} overflows float64 at s = {s:g}") from None
            except (ZeroDivisionError, ValueError, TypeError):
                raise ValueError(f"ell {_show(text)} is not defined at s = {s:g}") from None
            if isinstance(v, complex) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"ell {_show(text)} must be positive and finite; ell({s:g}) = {v}")
            values.append((s, v))
        values.sort()
        for (s0, v0), (s1, v1) in zip(values, values[1:], strict=False):
            if v1 < v0 * (1 - 1e-12):
                raise ValueError(
                    f"ell {_show(text)} must be non-decreasing; ell({s0:g}) = {v0:g} > ell({s1:g}) = {v1:g}"
                )
        return _recognise(fn, str(text))


def _positive(x: float, name: str) -> None:
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be positive and finite, got {x}")


def _recognise(fn: Callable[[float], float], text: str) -> Ell:
    """The closed-form family of a parsed ell, if it is one (checked at several points to 1e-12)."""
    pts = [0.0, 0.5, 1.0, 3.0, 10.0, 1e3]
    v = [fn(s) for s in pts]

    def close(a: float, b: float) -> bool:
        return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))

    if all(close(x, v[0]) for x in v):
        return Ell(fn, "constant", (v[0],), text)
    L0, L1 = v[0], v[2] - v[0]
    if all(close(x, L0 + L1 * s) for s, x in zip(pts, v, strict=True)):
        return Ell(fn, "affine", (L0, L1), text)
    r = [math.sqrt(x) for x in v]
    a, b = r[0], r[2] - r[0]
    if b >= 0 and all(close(x, (a + b * s) ** 2) for s, x in zip(pts, v, strict=True)):
        return Ell(fn, "square", (a, b), text)
    return Ell(fn, "general", (), text)


def step_size(ell: Ell, s: float, method: str = "auto") -> float:
    """gamma = int_0^1 dv / ell(s (1 + v)); ``method`` "auto" (closed form when known) or "quad"."""
    s = float(s)
    if not (math.isfinite(s) and s >= 0):
        raise ValueError(f"the gradient norm must be finite and >= 0, got {s}")
    if s == 0.0:
        return 1.0 / ell(0.0)
    if method == "auto":
        if ell.kind == "constant":
            return 1.0 / ell.coef[0]
        if ell.kind == "affine":
            L0, L1 = ell.coef
            return math.log1p(L1 * s / (L0 + L1 * s)) / (L1 * s)
        if ell.kind == "square":
            a, b = ell.coef
            return 1.0 / ((a + b * s) * (a + 2 * b * s))
    from scipy.integrate import quad

    value, _ = quad(lambda v: 1.0 / ell(s * (1.0 + v)), 0.0, 1.0, epsabs=0.0, epsrel=1e-12, limit=200)
    return value


def closed_form_error(rng, samples: int) -> dict[str, float]:
    """The largest relative difference |closed - quad| / |quad| between each closed form (affine, square) and
    adaptive quadrature, over ``samples`` random (a, b, s): a, b log-uniform on [1e-3, 1e3], s on [1e-6, 1e8]."""
    worst = {"affine": 0.0, "square": 0.0}
    for _ in range(samples):
        a, b = 10.0 ** rng.uniform(-3, 3, size=2)
        s = 10.0 ** rng.uniform(-6, 8)
        for kind, ell in (("affine", Ell.affine(a, b)), ("square", Ell.square(a, b))):
            closed, quad = step_size(ell, s), step_size(ell, s, "quad")
            worst[kind] = max(worst[kind], abs(closed - quad) / abs(quad))
    return worst
