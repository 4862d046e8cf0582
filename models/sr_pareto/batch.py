"""The fast path, vectorised: all expressions that share a tree shape and leaf kinds are fitted together.

An expression is (shape, operators in preorder, leaves in preorder). Expressions with the same shape and the
same leaf kinds (feature or constant at each leaf) differ only in their operators and features, so one numpy
pass evaluates all B of them: each operator node computes a_b op_b b_b row by row, with op_b gathered per
member. Per group, with k constants:

- k = 0: one evaluation;
- members linear in the constants (:func:`.fit.degree` <= 1): f = g_0 + G c with g_0 = f(0), G_j = f(e_j) - g_0,
  and the least-squares constants c = G^+ (y - g_0) (batched pseudo-inverse): exact;
- the other members: batched Levenberg-Marquardt on the residual y - f(c) (central-difference Jacobian;
  damping lambda diag(J^T J), lambda / 3 on success, x 4 on failure) from the paper's start 2 U(0,1)^k - 1
  (the same for every expression with k constants, since the official code re-seeds per expression), stopped on
  convergence (:func:`levenberg_marquardt`: relative SSE gain < 1e-6 or relative step < 1e-8, at most 30
  iterations).

Every member is scored by one evaluation of its group at its final constants: elementwise the same operations
in the same order as the scalar code path (:func:`.fit._result`), so the same bits, and a member's numbers never
depend on the other members of its batch. :func:`.front.fast_front` then refines the best candidates of each length with scipy's BFGS.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from .fit import INVALID, Fit, degree, paper_start
from .grammar import C, Expr

OP_CODES = {"Pow": 0, "Mul": 1, "Add": 2, "Sub": 3, "Div": 4}


def decompose(e: Expr) -> tuple[Expr, tuple[int, ...], tuple[str, ...], tuple[int, ...]]:
    """(shape, operator codes, leaf kinds 'x'/'c', features of the 'x' leaves), all in preorder."""
    ops: list[int] = []
    kinds: list[str] = []
    feats: list[int] = []

    def walk(e: Expr) -> Expr:
        if e[0] == "x":
            kinds.append("x")
            feats.append(e[1])
            return ("l",)
        if e == C:
            kinds.append("c")
            return ("l",)
        ops.append(OP_CODES[e[0]])
        return ("o", walk(e[1]), walk(e[2]))

    return walk(e), tuple(ops), tuple(kinds), tuple(feats)


def _op(op: int, x: np.ndarray, z: np.ndarray) -> np.ndarray:
    if op == 0:
        return np.power(np.abs(x), z)
    if op == 1:
        return x * z
    if op == 2:
        return x + z
    if op == 3:
        return x - z
    return x / z


def _apply(code: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row b of the result is op_b(a_b, b_b); ``code`` holds one operator code per row. ``a`` and ``b`` have one
    row per member and n or 1 columns (a constant leaf is one column, broadcast)."""
    present = np.flatnonzero(np.bincount(code, minlength=len(OP_CODES)))
    if present.size == 1:
        return _op(int(present[0]), a, b)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    for op in present.tolist():
        m = np.flatnonzero(code == op)  # the rows once, as indices: three gathers without three mask scans
        out[m] = _op(op, a[m], b[m])
    return out


class Group:
    """Members sharing a shape and leaf kinds; ``evaluate(c, rows)`` gives predictions (rows x n).

    A subtree without constant leaves does not change with the constants, so its values for every member are
    computed once (on first use) and reused by every later evaluation: the Levenberg-Marquardt loop evaluates
    a group 2k + 2 times per iteration, and only the paths from the constants to the root change."""

    def __init__(
        self, shape: Expr, kinds: tuple[str, ...], ops: np.ndarray, feats: np.ndarray, X: np.ndarray
    ):
        self.shape, self.kinds, self.ops, self.feats, self.X = shape, kinds, ops, feats, X
        self.k = kinds.count("c")
        # the tree in preorder: ("x", feature column) | ("c", constant index) | ("o", op column, left, right,
        # whether the subtree holds a constant); indices into this list
        self.plan: list[tuple] = []
        counters = {"op": 0, "x": 0, "c": 0}
        leaf_kinds = iter(kinds)

        def build(node: Expr) -> tuple[int, bool]:
            i = len(self.plan)
            self.plan.append(())
            if node[0] == "l":
                kind = next(leaf_kinds)
                self.plan[i] = (kind, counters[kind])
                counters[kind] += 1
                return i, kind == "c"
            col = counters["op"]
            counters["op"] += 1
            left, lc = build(node[1])
            right, rc = build(node[2])
            self.plan[i] = ("o", col, left, right, lc or rc)
            return i, lc or rc

        build(shape)
        self._fixed: dict[int, np.ndarray] = {}

    def _value(self, i: int, c: np.ndarray | None, rows: np.ndarray | None) -> np.ndarray:
        """Node i's values for the members ``rows`` (all members when None) with constants ``c``."""
        node = self.plan[i]
        if node[0] == "x":
            f = self.feats[:, node[1]] if rows is None else self.feats[rows, node[1]]
            return self.X[f]
        if node[0] == "c":
            return c[:, node[1], None]
        if not node[4]:  # constant-free: every member's values, once
            if i not in self._fixed:
                self._fixed[i] = _apply(
                    self.ops[:, node[1]], self._value(node[2], None, None), self._value(node[3], None, None)
                )
            return self._fixed[i] if rows is None else self._fixed[i][rows]
        code = self.ops[rows, node[1]]
        return _apply(code, self._value(node[2], c, rows), self._value(node[3], c, rows))

    def evaluate(self, c: np.ndarray, rows: np.ndarray) -> np.ndarray:
        n = self.X.shape[1]
        with np.errstate(all="ignore"):
            return np.broadcast_to(self._value(0, c, rows), (len(rows), n))


def _sse(g: Group, c: np.ndarray, rows: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(SSE per member, inf where not finite; the predictions)."""
    pred = g.evaluate(c, rows)
    r = y - pred
    with np.errstate(all="ignore"):
        s = np.einsum("bn,bn->b", r, r)
    return np.where(np.isfinite(s), s, np.inf), pred


def levenberg_marquardt(
    g: Group,
    rows: np.ndarray,
    c0: np.ndarray,
    y: np.ndarray,
    iters: int = 30,
    gain_tol: float = 1e-6,
    step_tol: float = 1e-8,
):
    """Batched LM over the members ``rows``: (constants, iterations per member). A member stops on convergence:
    an accepted step that lowers its SSE by less than ``gain_tol`` (relative) or moves its constants by less than
    ``step_tol`` (relative to their norm), or damping above 1e10 (no step helps); and at the latest after
    ``iters`` iterations (accepted or rejected), a safety cap. The fast path only screens: the best 25 of each
    length are then refined by BFGS (:func:`.front.refine_front`), so the screen needs the ranking, not the last
    digits (on the benchmark's Karva workload, 18,022 expressions, the refined front is identical from 1e-12 / 60
    to these settings; 27% of the LM members stop at the cap there). Each iteration works on the active members
    only. A rejected step leaves a member where it was, so its J^T J and J^T r are kept, not recomputed (only the
    damping changes): the same iterates as recomputing them, at one evaluation per rejected step instead of
    2k + 2; an accepted step's predictions are kept as the next point's base (2k + 1 evaluations per accepted
    step)."""
    c = c0.copy()
    B, k = c.shape
    n = y.shape[0]
    sse, pred = _sse(g, c, rows, y)
    pred = np.array(pred)  # each member's predictions at its current constants
    lam = np.full(B, 1e-3)
    nit = np.zeros(B, dtype=int)
    active = np.flatnonzero(np.isfinite(sse))
    eye = np.eye(k)
    JtJ_all, Jtr_all = np.zeros((B, k, k)), np.zeros((B, k))
    ok_all, fresh = np.zeros(B, dtype=bool), np.zeros(B, dtype=bool)
    for _ in range(iters):
        if active.size == 0:
            break
        need = active[~fresh[active]]
        if need.size:
            cn, rn = c[need], rows[need]
            base = pred[need]
            J = np.empty((need.size, n, k))
            with np.errstate(all="ignore"):
                for j in range(k):
                    h = 1e-6 * np.maximum(1.0, np.abs(cn[:, j]))
                    cp, cm = cn.copy(), cn.copy()
                    cp[:, j] += h
                    cm[:, j] -= h
                    J[:, :, j] = (g.evaluate(cp, rn) - g.evaluate(cm, rn)) / (2 * h[:, None])
                r = y - base
                Jt = J.transpose(0, 2, 1)  # batched BLAS products (einsum's loops were 11% of the fast path)
                JtJ_all[need] = Jt @ J
                Jtr_all[need] = (Jt @ r[:, :, None])[:, :, 0]
            ok_all[need] = np.isfinite(JtJ_all[need]).all(axis=(1, 2)) & np.isfinite(Jtr_all[need]).all(
                axis=1
            )
            fresh[need] = True
        ca, ra = c[active], rows[active]
        JtJ, Jtr, ok = JtJ_all[active], Jtr_all[active], ok_all[active]
        with np.errstate(all="ignore"):
            A = JtJ + lam[active, None, None] * (
                eye * np.diagonal(JtJ, axis1=1, axis2=2)[:, :, None] + 1e-12 * eye
            )
        A[~ok] = eye
        Jtr[~ok] = 0.0
        step = np.einsum("bkl,bl->bk", np.linalg.pinv(A), Jtr)
        trial = ca + step
        new, trial_pred = _sse(g, trial, ra, y)
        old = sse[active]
        better = ok & (new < old)
        gain = np.zeros(active.size)
        gain[better] = (old[better] - new[better]) / np.maximum(old[better], 1e-300)
        c[active[better]] = trial[better]
        sse[active[better]] = new[better]
        pred[active[better]] = trial_pred[better]
        fresh[active[better]] = False
        nit[active] += 1
        lam[active] = np.where(better, lam[active] / 3.0, lam[active] * 4.0)
        small = np.linalg.norm(step, axis=1) <= step_tol * (np.linalg.norm(ca, axis=1) + step_tol)
        done = ~ok | (better & ((gain < gain_tol) | small)) | (lam[active] > 1e10)
        active = active[~done]
    return c, nit


def fit_batched(exprs: Sequence[Expr], X: np.ndarray, y: np.ndarray, seed: int = 11284) -> list[Fit]:
    """The fast path for every expression; one :class:`Fit` per expression, in order."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    parts = [decompose(e) for e in exprs]
    for i, (shape, _, kinds, _) in enumerate(parts):
        groups[(shape, kinds)].append(i)
    out: list[Fit] = [INVALID] * len(exprs)
    for (shape, kinds), idx in groups.items():
        ops = np.array([parts[i][1] for i in idx], dtype=int).reshape(len(idx), -1)
        feats = np.array([parts[i][3] for i in idx], dtype=int).reshape(len(idx), -1)
        g = Group(shape, kinds, ops, feats, X)
        B, k = len(idx), g.k
        consts = np.zeros((B, k))
        nits = np.zeros(B, dtype=int)
        if k:
            linear = np.array([degree(exprs[i]) <= 1 for i in idx])
            rows = np.flatnonzero(linear)
            if rows.size:
                g0 = g.evaluate(np.zeros((rows.size, k)), rows)
                with np.errstate(all="ignore"):
                    G = np.stack(
                        [g.evaluate(np.tile(np.eye(k)[j], (rows.size, 1)), rows) - g0 for j in range(k)],
                        axis=2,
                    )
                good = np.isfinite(g0).all(axis=1) & np.isfinite(G).all(axis=(1, 2))
                if good.any():
                    consts[rows[good]] = np.einsum("bkn,bn->bk", np.linalg.pinv(G[good]), y - g0[good])
            rows = np.flatnonzero(~linear)
            if rows.size:
                c, it = levenberg_marquardt(g, rows, np.tile(paper_start(k, seed), (rows.size, 1)), y)
                consts[rows], nits[rows] = c, it
        # every member scored by one evaluation of the group at its final constants: elementwise the same
        # operations, in the same order, as the scalar path (fit._result on the compiled expression), so the
        # same bits (tests/papers/sr_pareto/test_search.py checks it), without compiling 18,000 lambdas
        with np.errstate(all="ignore"):
            mse = np.mean((y - g.evaluate(consts, np.arange(B))) ** 2, axis=1)
        for b, i in enumerate(idx):
            m = float(mse[b])
            if math.isfinite(m):
                out[i] = Fit(1.0 - m, m, tuple(float(v) for v in consts[b]), int(nits[b]))
    return out
