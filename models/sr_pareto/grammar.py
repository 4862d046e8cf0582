"""The paper's expression grammar, canonical forms and the two enumerations (all trees; Karva head length L).

Grammar: binary operators only, leaves a feature x_i or a constant c:

    Pow(a, b) = |a|^b (protected base),  Mul(a, b) = a b,  Add(a, b) = a + b,  Sub(a, b) = a - b,  Div(a, b) = a / b.

Length = number of tree nodes (operators + leaves), so lengths are odd: 1, 3, 5, 7, 9.

Canonical form (what "distinct expression" means here):
- a constant-only operator node collapses, Op(c, c) -> c, bottom-up (the official "erc collapse"), so such a
  tree counts at the shorter length it reduces to;
- the children of the commutative Add and Mul are ordered by a fixed total order on canonical forms.
Expressions are nested tuples: ``("x", i)``, ``("c",)``, ``(op, left, right)``.

Enumerations:
- :func:`enumerate_full`: every canonical expression of length <= N, bottom-up over lengths (E_n = {Op(a, b):
  a in E_i, b in E_{n-1-i}}), i.e. every tree shape (Catalan many), every operator, every leaf.
- :func:`enumerate_karva`: the official code's space: Karva k-expressions with head length L (symbols
  {Pow, Mul, Add, Sub, Div, R}, tail of L+1 R's), decoded breadth-first, so only trees whose operators are the
  first L nodes in level order are reachable (with L = 3, one of the five 3-operator shapes), then each R
  assigned a feature or a constant, collapsed and canonicalised.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

OPS = ("Pow", "Mul", "Add", "Sub", "Div")
COMMUTATIVE = frozenset({"Mul", "Add"})
C = ("c",)
R = ("R",)  # a structure's unassigned leaf

Expr = tuple


def length(e: Expr) -> int:
    return 1 if len(e) < 3 else 1 + length(e[1]) + length(e[2])


def key(e: Expr) -> str:
    """A total order on expressions: their printed form."""
    return show(e)


def show(e: Expr) -> str:
    """``Sub(Pow(c,x0),c)`` style; constants unnumbered."""
    if e[0] == "x":
        return f"x{e[1]}"
    if e[0] in ("c", "R"):
        return e[0]
    return f"{e[0]}({show(e[1])},{show(e[2])})"


def make(op: str, a: Expr, b: Expr) -> Expr:
    """The canonical node Op(a, b) for canonical children a, b."""
    if a == C and b == C:
        return C
    if op in COMMUTATIVE and key(b) < key(a):
        a, b = b, a
    return (op, a, b)


def canonical(e: Expr) -> Expr:
    if len(e) < 3:
        return e
    return make(e[0], canonical(e[1]), canonical(e[2]))


def leaves(n_features: int) -> list[Expr]:
    return [("x", i) for i in range(n_features)] + [C]


def enumerate_full(n_features: int, max_length: int, ops: tuple[str, ...] = OPS) -> dict[int, list[Expr]]:
    """Every canonical expression by length (odd lengths 1..max_length), each exactly once; ``ops`` restricts
    the operators (a smaller grammar for tests)."""
    by_len: dict[int, list[Expr]] = {1: leaves(n_features)}
    seen = set(by_len[1])
    for n in range(3, max_length + 1, 2):
        out: list[Expr] = []
        for i in range(1, n - 1, 2):
            j = n - 1 - i
            for a in by_len[i]:
                for b in by_len[j]:
                    for op in ops:
                        if op in COMMUTATIVE and i > j:
                            continue  # the mirrored pair is produced with i < j (or sorted when i == j)
                        e = make(op, a, b)
                        if length(e) == n and e not in seen:
                            seen.add(e)
                            out.append(e)
        by_len[n] = sorted(out, key=key)
    return by_len


def decode_karva(head: tuple[str, ...]) -> Expr:
    """Breadth-first decoding of a k-expression: head symbols, then a tail of len(head) + 1 R's."""
    symbols = list(head) + ["R"] * (len(head) + 1)
    nodes: list[list] = [[s] for s in symbols]
    nxt = 1
    for node in nodes:
        if node[0] != "R":
            node.extend([nodes[nxt], nodes[nxt + 1]])
            nxt += 2
        if nxt >= len(nodes):
            break

    def build(node: list) -> Expr:
        return R if node[0] == "R" else (node[0], build(node[1]), build(node[2]))

    return build(nodes[0])


def karva_structures(head_length: int, ops: tuple[str, ...] = OPS) -> list[Expr]:
    """Distinct canonical structures (leaves R) of Karva k-expressions with this head length."""
    out = {canonical(decode_karva(h)) for h in itertools.product(tuple(ops) + ("R",), repeat=head_length)}
    return sorted(out, key=key)


def assign(structure: Expr, choices: Iterable[Expr]) -> Expr:
    it = iter(choices)

    def walk(e: Expr) -> Expr:
        if e == R:
            return next(it)
        return make(e[0], walk(e[1]), walk(e[2]))

    return walk(structure)


def n_leaves(e: Expr) -> int:
    return 1 if len(e) < 3 else n_leaves(e[1]) + n_leaves(e[2])


def enumerate_karva(n_features: int, head_length: int, ops: tuple[str, ...] = OPS) -> dict[int, list[Expr]]:
    """The official search space (canonicalised), by the length each expression collapses to; ``ops`` restricts
    the head's operators (a smaller grammar for tests)."""
    seen: set[Expr] = set()
    for s in karva_structures(head_length, ops):
        for choice in itertools.product(leaves(n_features), repeat=n_leaves(s)):
            seen.add(assign(s, choice))
    by_len: dict[int, list[Expr]] = {}
    for e in seen:
        by_len.setdefault(length(e), []).append(e)
    return {n: sorted(v, key=key) for n, v in sorted(by_len.items())}


def n_constants(e: Expr) -> int:
    if e == C:
        return 1
    return 0 if len(e) < 3 else n_constants(e[1]) + n_constants(e[2])


def count_official_style(n_features: int, head_length: int, ops: tuple[str, ...] = OPS) -> int:
    """The official generator's expression count: structures de-duplicated, leaf assignments not (Add(x0,x1)
    and Add(x1,x0) both counted), constant-only nodes collapsed."""

    def fill(s: Expr, it) -> Expr:
        if s == R:
            return next(it)
        a, b = fill(s[1], it), fill(s[2], it)
        return C if a == C and b == C else (s[0], a, b)

    seen = set()
    for s in karva_structures(head_length, ops):
        for choice in itertools.product(leaves(n_features), repeat=n_leaves(s)):
            seen.add(fill(s, iter(choice)))
    return len(seen)
