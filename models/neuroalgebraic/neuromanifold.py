"""Polynomial MLPs and the dimension of their neuromanifold.

An architecture has widths (d_0, ..., d_L), activation z -> z^k after every hidden layer, a linear output layer
and no biases: f_w(x) = W_L s(W_{L-1} s(... s(W_1 x))), s(z) = z^k (linear networks: k = 1). The shallow network
(n, r, 1) is f(x) = sum_i a_i (w_i . x)^k; ``fixed_output`` fixes the last layer to ones (a_i = 1).

Each output coordinate is a homogeneous polynomial of degree D = k^(L-1) in d_0 variables, so the neuromanifold
M = {f_w} lies in an ambient space of dimension d_L C(d_0 + D - 1, D) (d_L d_0 for linear networks). Its
dimension is the generic rank of the Jacobian of w -> (f_w(x_1), ..., f_w(x_N)) for N >= the ambient dimension
generic points (evaluation at that many generic points is injective on the polynomials of degree D).

Expected dimension:
- k >= 2: min(#params - #rescalings, ambient), one rescaling (W_in row i * t, W_out column i * t^-k) per hidden
  neuron (none for the last hidden layer when the output is fixed);
- linear (k = 1): with r = the smallest hidden width, r (d_0 + d_L - r) if r < min(d_0, d_L), else d_0 d_L
  (two layers: N1 (N0 + N2 - N1) for N1 <= min(N0, N2), else N0 N2: the determinantal variety of rank <= N1).

Closed forms (Alexander-Hirschowitz) for the shallow network (n, r, 1), k >= 2: the r-th secant of the Veronese
variety has dimension min(r n, C(n + k - 1, k)), except k = 2 (quadratic forms of rank <= r: r n - C(r, 2) for
r < n) and (n, k, r) in {(3, 4, 5), (4, 4, 9), (5, 4, 14), (5, 3, 7)} (one less).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

CAP = 5000  # the largest ambient dimension a rank is computed for (the Jacobian has that many rows)
AH_EXCEPTIONS = {(3, 4, 5), (4, 4, 9), (5, 4, 14), (5, 3, 7)}


@dataclass(frozen=True)
class Architecture:
    widths: tuple[int, ...]
    degree: int
    fixed_output: bool = False

    def __post_init__(self) -> None:
        if len(self.widths) < 2:
            raise ValueError(f"widths {list(self.widths)}: need at least an input and an output width")
        for w in self.widths:
            if not isinstance(w, numbers.Integral) or isinstance(w, bool) or w < 1:
                raise ValueError(f"width {w!r}: widths must be integers >= 1")
        if not isinstance(self.degree, numbers.Integral) or isinstance(self.degree, bool) or self.degree < 1:
            raise ValueError(f"degree {self.degree!r}: must be an integer >= 1")
        object.__setattr__(self, "widths", tuple(int(w) for w in self.widths))  # NumPy integers become ints
        object.__setattr__(self, "degree", int(self.degree))

    @property
    def label(self) -> str:
        return ",".join(map(str, self.widths)) + f" k={self.degree}" + (" fixed" if self.fixed_output else "")

    @property
    def layers(self) -> list[tuple[int, int]]:
        """(rows, columns) of W_1, ..., W_L."""
        return [(b, a) for a, b in zip(self.widths[:-1], self.widths[1:], strict=True)]

    @property
    def params(self) -> int:
        """Free parameters (the last layer's are fixed with ``fixed_output``)."""
        sizes = [r * c for r, c in self.layers]
        return sum(sizes[:-1]) if self.fixed_output else sum(sizes)

    @property
    def hidden(self) -> tuple[int, ...]:
        return tuple(self.widths[1:-1])

    @property
    def poly_degree(self) -> int:
        return self.degree ** (len(self.widths) - 2)

    @property
    def ambient(self) -> int:
        D = self.poly_degree
        return self.widths[-1] * math.comb(self.widths[0] + D - 1, D)

    @property
    def symmetries(self) -> int:
        """Dimension of the continuous symmetries: one rescaling per hidden neuron for k >= 2 (none in the last
        hidden layer when the output is fixed); GL(N_i) per hidden layer for linear networks."""
        if self.degree == 1:
            return sum(h * h for h in self.hidden)
        hidden = list(self.hidden)
        if self.fixed_output and hidden:
            hidden = hidden[:-1]
        return sum(hidden)

    @property
    def expected(self) -> int:
        if self.degree == 1:
            return linear_dimension(self.widths)
        return min(self.params - self.symmetries, self.ambient)

    @property
    def is_shallow(self) -> bool:
        return len(self.widths) == 3 and self.widths[-1] == 1

    def check_cap(self, cap: int = CAP) -> None:
        if self.ambient > cap:
            raise ValueError(f"{self.label}: ambient dimension {self.ambient} is above the cap {cap}")

    def dimension(self, exact: bool = False, seed: int = 0) -> Dimension:
        """The computed dimension (float64 Jacobian rank; and over GF(p) with ``exact``) beside the counts."""
        from .rank import exact_rank, float_rank

        self.check_cap()
        computed = float_rank(self, seed)
        ex = exact_rank(self, seed) if exact else None
        best = ex if ex is not None else computed
        return Dimension(
            self.label,
            self.params,
            self.symmetries,
            self.expected,
            computed,
            ex,
            self.ambient,
            self.expected - best,
            self.params - best,
            best == self.ambient,
        )


@dataclass(frozen=True)
class Dimension:
    architecture: str
    params: int
    symmetries: int
    expected: int
    computed: int  # float64 Jacobian rank
    exact: int | None  # rank over GF(p), when asked for
    ambient: int
    defect: int  # expected - (exact if known, else computed)
    fiber: int  # params - (exact if known, else computed): the generic fiber's dimension
    fills: bool  # the neuromanifold fills its ambient space


def neuromanifold(widths, degree: int, fixed_output: bool = False) -> Architecture:
    """The architecture (d_0, ..., d_L) with activation z^degree; ``.dimension(exact=False)`` computes it."""
    return Architecture(tuple(widths), degree, fixed_output)


def linear_dimension(widths: tuple[int, ...]) -> int:
    """The closed form for linear networks: matrices d_L x d_0 of rank <= r, r = the smallest hidden width."""
    n0, nl = widths[0], widths[-1]
    r = min(widths[1:-1], default=min(n0, nl))
    if r >= min(n0, nl):
        return n0 * nl
    return r * (n0 + nl - r)


def alexander_hirschowitz(n: int, k: int, r: int) -> int:
    """Dimension of the shallow network (n, r, 1) with activation z^k, k >= 2 (the r-th secant of the Veronese)."""
    full = math.comb(n + k - 1, k)
    if k == 2:
        return r * n - math.comb(r, 2) if r < n else full
    if (n, k, r) in AH_EXCEPTIONS:
        return min(r * n, full) - 1
    return min(r * n, full)
