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
  (the same for every expression with k constants, since the official code re-seeds per expression).

Every member is re-scored with the scalar code path (:func:`.fit._result`), so a front's numbers never depend on
the batching. :func:`.front.fast_front` then refines the best candidates of each length with scipy's BFGS.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from .fit import INVALID, Fit, _result, compile_expr, degree, paper_start
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


def _apply(code: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row b of the result is op_b(a_b, b_b); ``code`` holds one operator code per row."""
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape)
    for op in set(code.tolist()):
        m = code == op
        x, z = a[m], b[m]
        if op == 0:
            out[m] = np.power(np.abs(x), z)
        elif op == 1:
            out[m] = x * z
        elif op == 2:
            out[m] = x + z
        elif op == 3:
            out[m] = x - z
        else:
            out[m] = x / z
    return out


class Group:
    """Members sharing a shape and leaf kinds; ``evaluate(c, rows)`` gives predictions (rows x n)."""

    def __init__(
        self, shape: Expr, kinds: tuple[str, ...], ops: np.ndarray, feats: np.ndarray, X: np.ndarray
    ):
        self.shape, self.kinds, self.ops, self.feats, self.X = shape, kinds, ops, feats, X
        self.k = kinds.count("c")

    def evaluate(self, c: np.ndarray, rows: np.ndarray) -> np.ndarray:
        n = self.X.shape[1]
        ops, feats = self.ops[rows], self.feats[rows]
        counters = {"op": 0, "leaf": 0, "x": 0, "c": 0}

        def walk(node: Expr) -> np.ndarray:
            if node[0] == "l":
                kind = self.kinds[counters["leaf"]]
                counters["leaf"] += 1
                if kind == "x":
                    j = counters["x"]
                    counters["x"] += 1
                    return self.X[feats[:, j]]
                j = counters["c"]
                counters["c"] += 1
                return np.broadcast_to(c[:, j, None], (len(rows), n))
            code = ops[:, counters["op"]]
            counters["op"] += 1
            a = walk(node[1])
            b = walk(node[2])
            return _apply(code, a, b)

        with np.errstate(all="ignore"):
            return np.broadcast_to(walk(self.shape), (len(rows), n))


def _sse(g: Group, c: np.ndarray, rows: np.ndarray, y: np.ndarray) -> np.ndarray:
    r = y - g.evaluate(c, rows)
    with np.errstate(all="ignore"):
        s = np.einsum("bn,bn->b", r, r)
    return np.where(np.isfinite(s), s, np.inf)


def levenberg_marquardt(g: Group, rows: np.ndarray, c0: np.ndarray, y: np.ndarray, iters: int = 60):
    """Batched LM over the members ``rows``: (constants, iterations per member). A member stops when a step gains
    less than 1e-12 of its SSE or its damping exceeds 1e10; each iteration works on the active members only."""
    c = c0.copy()
    B, k = c.shape
    n = y.shape[0]
    sse = _sse(g, c, rows, y)
    lam = np.full(B, 1e-3)
    nit = np.zeros(B, dtype=int)
    active = np.flatnonzero(np.isfinite(sse))
    eye = np.eye(k)
    for _ in range(iters):
        if active.size == 0:
            break
        ca, ra = c[active], rows[active]
        base = g.evaluate(ca, ra)
        J = np.empty((active.size, n, k))
        with np.errstate(all="ignore"):
            for j in range(k):
                h = 1e-6 * np.maximum(1.0, np.abs(ca[:, j]))
                cp, cm = ca.copy(), ca.copy()
                cp[:, j] += h
                cm[:, j] -= h
                J[:, :, j] = (g.evaluate(cp, ra) - g.evaluate(cm, ra)) / (2 * h[:, None])
            r = y - base
            JtJ = np.einsum("bnk,bnl->bkl", J, J)
            Jtr = np.einsum("bnk,bn->bk", J, r)
            ok = np.isfinite(JtJ).all(axis=(1, 2)) & np.isfinite(Jtr).all(axis=1)
            A = JtJ + lam[active, None, None] * (
                eye * np.diagonal(JtJ, axis1=1, axis2=2)[:, :, None] + 1e-12 * eye
            )
        A[~ok] = eye
        Jtr[~ok] = 0.0
        step = np.einsum("bkl,bl->bk", np.linalg.pinv(A), Jtr)
        trial = ca + step
        new = _sse(g, trial, ra, y)
        old = sse[active]
        better = ok & (new < old)
        gain = np.zeros(active.size)
        gain[better] = (old[better] - new[better]) / np.maximum(old[better], 1e-300)
        c[active[better]] = trial[better]
        sse[active[better]] = new[better]
        nit[active] += 1
        lam[active] = np.where(better, lam[active] / 3.0, lam[active] * 4.0)
        done = ~ok | (better & (gain < 1e-12)) | (lam[active] > 1e10)
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
        for b, i in enumerate(idx):
            out[i] = _result(compile_expr(exprs[i]), consts[b], X, y, int(nits[b]))
    return out
