"""The fast path: expressions that share a tree shape and leaf kinds are fitted as one group.

An expression is (shape, operators in preorder, leaves in preorder). Expressions with the same shape and the
same leaf kinds (feature or constant at each leaf) differ only in their operators and features: a
:class:`Group`. Its constant-free subtrees (operators over features only) are evaluated once for all members by
numpy; what sits above a constant is evaluated member by member by the compiled kernels of :mod:`.kernel`
(no row gathers: the tree is walked once per member, each node a loop over the rows). Per group, with k
constants:

- k = 0: one evaluation;
- members linear in the constants (:func:`.fit.degree` <= 1): f = g_0 + G c with g_0 = f(0), G_j = f(e_j) - g_0,
  and the least-squares constants c = G^+ (y - g_0) (batched pseudo-inverse): exact;
- the other members: Levenberg-Marquardt on the residual y - f(c) (central-difference Jacobian; damping
  lambda diag(J^T J), lambda / 3 on success, x 4 on failure) from the paper's start 2 U(0,1)^k - 1 (the same for
  every expression with k constants, since the official code re-seeds per expression), stopped on convergence
  (:func:`levenberg_marquardt`: relative SSE gain < 1e-6 or relative step < 1e-8, at most 30 iterations), each
  member run on its own in compiled code (:func:`.kernel.lm_members`; :func:`levenberg_marquardt_reference` is
  the same iteration batched in numpy, what the kernel is tested against).

Every member is scored at its final constants by :meth:`Group.score_predictions`: elementwise the same
operations in the same order as the scalar code path (:func:`.fit._result`), so the same bits, and a member's
numbers never depend on the other members of its batch. :func:`.front.refine_front` then refines the best
candidates of each length with scipy's BFGS.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from .fit import INVALID, Fit, degree, paper_start
from .grammar import C, Expr

OP_CODES = {"Pow": 0, "Mul": 1, "Add": 2, "Sub": 3, "Div": 4}


def decompose(
    e: Expr, memo: dict | None = None
) -> tuple[Expr, tuple[int, ...], tuple[str, ...], tuple[int, ...]]:
    """(shape, operator codes, leaf kinds 'x'/'c', features of the 'x' leaves), all in preorder: a node's
    operator, then its left subtree's, then its right's. ``memo`` (a dict kept across calls) holds every subtree
    already decomposed, so an expression whose subtrees were seen costs one step."""
    if memo is not None and (got := memo.get(e)) is not None:
        return got
    if e[0] == "x":
        out = (_LEAF, (), ("x",), (e[1],))
    elif e == C:
        out = (_LEAF, (), ("c",), ())
    else:
        a, b = decompose(e[1], memo), decompose(e[2], memo)
        out = (("o", a[0], b[0]), (OP_CODES[e[0]], *a[1], *b[1]), a[2] + b[2], a[3] + b[3])
    if memo is not None:
        memo[e] = out
    return out


_LEAF = ("l",)


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

    Two evaluations of the same numbers: ``evaluate`` (numpy, the reference: one pass over all members ``rows``
    per node, operators applied by :func:`_apply`) and ``evaluate_compiled`` (:mod:`.kernel`, member by member
    in compiled code, no row gathers). A subtree without constant leaves does not change with the constants, so
    its values for every member are computed once by numpy (on first use) and reused by every later evaluation,
    numpy's and the kernel's: only the paths from the constants to the root change."""

    def __init__(
        self, shape: Expr, kinds: tuple[str, ...], ops: np.ndarray, feats: np.ndarray, X: np.ndarray
    ):
        self.shape, self.kinds = shape, kinds
        self.X = np.ascontiguousarray(X, dtype=float)
        self.ops = np.ascontiguousarray(ops, dtype=np.int64)
        self.feats = np.ascontiguousarray(feats, dtype=np.int64)
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
        self._arrays: tuple | None = None

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

    def kernel_arrays(self) -> tuple:
        """The tree as :mod:`.kernel` reads it: (fixed, kind, slot, left, right, live, paths, cnode, inputs);
        ``fixed`` stacks the numpy values (members x rows) of the constant-free operator nodes that the kernel
        reads (children of a node above a constant, or the root)."""
        if self._arrays is not None:
            return self._arrays
        from . import kernel as K

        nn = len(self.plan)
        kind = np.zeros(nn, dtype=np.int64)
        slot = np.zeros(nn, dtype=np.int64)
        left = np.full(nn, -1, dtype=np.int64)
        right = np.full(nn, -1, dtype=np.int64)
        consts: dict[int, int] = {}  # node -> constant index
        below: list[set[int]] = [set() for _ in range(nn)]  # the constants in each node's subtree
        for i in reversed(range(nn)):  # children (later in preorder) first
            node = self.plan[i]
            if node[0] == "x":
                kind[i], slot[i] = K.FEATURE, node[1]
            elif node[0] == "c":
                kind[i], slot[i] = K.CONST, node[1]
                consts[node[1]] = i
                below[i] = {node[1]}
            else:
                kind[i] = K.LIVE if node[4] else K.FIXED
                slot[i] = node[1]  # a LIVE node's operator column (a FIXED one's slot is set below)
                left[i], right[i] = node[2], node[3]
                below[i] = below[node[2]] | below[node[3]]
        live = [i for i in reversed(range(nn)) if kind[i] == K.LIVE]
        read = {int(left[i]) for i in live} | {int(right[i]) for i in live} | {0}
        inputs = sorted(i for i in read if kind[i] in (K.FEATURE, K.FIXED))
        fixed_nodes = [i for i in inputs if kind[i] == K.FIXED]
        B, n = self.ops.shape[0], self.X.shape[1]
        fixed = np.empty((len(fixed_nodes), B, n))
        for s, i in enumerate(fixed_nodes):
            slot[i] = s
            with np.errstate(all="ignore"):
                fixed[s] = self._value(i, None, None)
        paths = np.full((max(self.k, 1), max(len(live), 1)), -1, dtype=np.int64)
        for j in range(self.k):
            on = [i for i in live if j in below[i]]
            paths[j, : len(on)] = on
        cnode = np.array([consts[j] for j in range(self.k)], dtype=np.int64)
        self._arrays = (
            fixed,
            kind,
            slot,
            left,
            right,
            np.array(live, dtype=np.int64),
            paths,
            cnode,
            np.array(inputs, dtype=np.int64),
        )
        return self._arrays

    def score_predictions(self, consts: np.ndarray) -> np.ndarray:
        """Every member's predictions at its constants ``consts`` (members x k) for its reported score: the
        numbers numpy's :meth:`evaluate` gives, so the same bits as the scalar path (:func:`.fit._result` on the
        compiled expression; tests/papers/sr_pareto/test_search.py checks it). The kernel computes the members
        whose operators above a constant are Mul, Add, Sub or Div (the same elementwise operations, so the same
        bits); numpy those with a Pow above a constant (numpy's ``power`` and the C library's differ in the last
        place) and every member of a group without constants (its values are numpy's, computed once)."""
        B = self.ops.shape[0]
        if self.k == 0:
            return np.asarray(self.evaluate(consts, np.arange(B)))
        from . import kernel as K

        _, kind, slot, *_ = self.kernel_arrays()
        live_cols = slot[kind == K.LIVE]
        with_pow = (self.ops[:, live_cols] == K.POW).any(axis=1)
        pred = np.empty((B, self.X.shape[1]))
        rows = np.flatnonzero(~with_pow)
        if rows.size:
            pred[rows] = self.evaluate_compiled(consts[rows], rows)
        rows = np.flatnonzero(with_pow)
        if rows.size:
            pred[rows] = self.evaluate(consts[rows], rows)
        return pred

    def evaluate_compiled(self, c: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """:meth:`evaluate` by the compiled kernel (:func:`.kernel.evaluate_members`): rows x n."""
        from .kernel import evaluate_members

        fixed, kind, slot, left, right, live, _, cnode, inputs = self.kernel_arrays()
        return evaluate_members(
            np.ascontiguousarray(rows, dtype=np.int64),
            np.ascontiguousarray(c, dtype=float).reshape(len(rows), self.k),
            self.X,
            self.feats,
            self.ops,
            fixed,
            kind,
            slot,
            left,
            right,
            live,
            cnode,
            inputs,
        )


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
    """LM over the members ``rows`` from ``c0``: (constants, iterations per member), each member run on its own
    in compiled code (:func:`.kernel.lm_members`), the iteration of :func:`levenberg_marquardt_reference`.

    A member stops on convergence: an accepted step that lowers its SSE by less than ``gain_tol`` (relative) or
    moves its constants by less than ``step_tol`` (relative to their norm), or damping above 1e10 (no step
    helps); and at the latest after ``iters`` iterations (accepted or rejected), a safety cap. The fast path only
    screens: the best 25 of each length are then refined by BFGS (:func:`.front.refine_front`), so the screen
    needs the ranking, not the last digits (on the benchmark's Karva workload, 18,022 expressions, the refined
    front is identical from 1e-12 / 60 to these settings; 27% of the LM members stop at the cap there)."""
    from .kernel import lm_members

    fixed, kind, slot, left, right, live, paths, cnode, inputs = g.kernel_arrays()
    c, nit = lm_members(
        np.ascontiguousarray(rows, dtype=np.int64),
        np.ascontiguousarray(c0, dtype=float),
        np.ascontiguousarray(y, dtype=float),
        g.X,
        g.feats,
        g.ops,
        fixed,
        kind,
        slot,
        left,
        right,
        live,
        paths,
        cnode,
        inputs,
        iters,
        gain_tol,
        step_tol,
    )
    return c, nit


def levenberg_marquardt_reference(
    g: Group,
    rows: np.ndarray,
    c0: np.ndarray,
    y: np.ndarray,
    iters: int = 30,
    gain_tol: float = 1e-6,
    step_tol: float = 1e-8,
):
    """The same LM batched in numpy over the members ``rows`` (the reference the compiled kernel is tested
    against): central-difference Jacobian J (step h_j = 1e-6 max(1, |c_j|)), damping lambda diag(J^T J), lambda
    / 3 on success, x 4 on failure, the step pinv(J^T J + lambda (diag(J^T J) + 1e-12 I)) J^T r. Each iteration
    works on the active members only. A rejected step leaves a member where it was, so its J^T J and J^T r are
    kept, not recomputed (only the damping changes); an accepted step's predictions are kept as the next
    point's base."""
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
                Jt = J.transpose(0, 2, 1)
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
    memo: dict = {}
    parts = [decompose(e, memo) for e in exprs]
    for i, (shape, _, kinds, _) in enumerate(parts):
        groups[(shape, kinds)].append(i)
    out: list[Fit] = [INVALID] * len(exprs)
    degrees: dict = {}
    for (shape, kinds), idx in groups.items():
        ops = np.array([parts[i][1] for i in idx], dtype=np.int64).reshape(len(idx), -1)
        feats = np.array([parts[i][3] for i in idx], dtype=np.int64).reshape(len(idx), -1)
        g = Group(shape, kinds, ops, feats, X)
        B, k = len(idx), g.k
        consts = np.zeros((B, k))
        nits = np.zeros(B, dtype=np.int64)
        if k:
            linear = np.array([degree(exprs[i], degrees) <= 1 for i in idx])
            rows = np.flatnonzero(linear)
            if rows.size:
                g0 = g.evaluate_compiled(np.zeros((rows.size, k)), rows)
                with np.errstate(all="ignore"):
                    G = np.stack(
                        [
                            g.evaluate_compiled(np.tile(np.eye(k)[j], (rows.size, 1)), rows) - g0
                            for j in range(k)
                        ],
                        axis=2,
                    )
                good = np.isfinite(g0).all(axis=1) & np.isfinite(G).all(axis=(1, 2))
                if good.any():
                    consts[rows[good]] = np.einsum("bkn,bn->bk", np.linalg.pinv(G[good]), y - g0[good])
            rows = np.flatnonzero(~linear)
            if rows.size:
                c, it = levenberg_marquardt(g, rows, np.tile(paper_start(k, seed), (rows.size, 1)), y)
                consts[rows], nits[rows] = c, it
        with np.errstate(all="ignore"):
            mse = np.mean((y - g.score_predictions(consts)) ** 2, axis=1)
        mse_l, consts_l, nits_l = mse.tolist(), consts.tolist(), nits.tolist()
        for b, i in enumerate(idx):
            m = mse_l[b]
            if math.isfinite(m):
                out[i] = Fit(1.0 - m, m, tuple(consts_l[b]), nits_l[b])
    return out
