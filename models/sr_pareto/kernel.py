"""Compiled (numba) kernels of the fast path: a skeleton group's expressions evaluated member by member, and the
Levenberg-Marquardt screen run on each member in compiled code.

A group (:class:`.batch.Group`) is a tree shape with fixed leaf kinds; its members differ in their operators and
features. The kernels see the tree as arrays over its nodes in preorder (a parent before its children, so
reversed preorder is a valid bottom-up order):

- ``kind[i]``: ``FEATURE`` (a feature leaf x_f, ``slot`` its column of ``feats``), ``CONST`` (constant leaf
  c_j, ``slot`` = j), ``FIXED`` (an operator node whose subtree holds no constant: its values for every member are
  computed once by numpy, :meth:`.batch.Group.kernel_arrays`, and passed in as ``fixed[slot]``) or ``LIVE`` (an
  operator node above a constant, ``slot`` its column of ``ops``);
- ``left[i]``, ``right[i]``: its children (-1 for a leaf);
- ``live``: the LIVE nodes bottom-up; ``paths[j]``: the LIVE nodes whose subtree holds c_j, bottom-up, padded
  with -1 (the only nodes whose values move when c_j does); ``cnode[j]``: the node of c_j; ``inputs``: the
  FEATURE and FIXED nodes that a LIVE node reads, and the root when it is not LIVE (loaded once per member).

One member's values live in a buffer ``V`` (nodes x padded rows: n rounded up to a multiple of 8, the padding
1.0 on the inputs and never read back): the inputs are copied in once, a constant leaf's row is filled with c_j,
and a LIVE node with operator ``op`` computes, row by row,

    V[i] = op(V[left], V[right]),  op in {Pow: |a|^b, Mul: a b, Add: a + b, Sub: a - b, Div: a / b}

(IEEE double, numpy's error model: x / 0 is +-inf or NaN, no exception): for Mul, Add, Sub and Div the same
elementwise operations as :func:`.batch._apply`, so the same bits. |a|^b is glibc's vector ``pow`` (libmvec, 8
or 4 lanes: :data:`POW_LANES`; about 3.5x the scalar ``pow``'s speed, within 1 unit in the last place of it, and
its special values, NaN, inf and 0, the same: tests/papers/sr_pareto/test_kernel.py) where the machine has it,
else the C library's scalar ``pow``. numpy's ``power`` (SIMD on AVX-512 machines) is a third implementation, so
a Pow above a constant can differ from numpy in the last places (the FIXED nodes, Pow of features included, are
numpy's own values). The root's row is the prediction f(X; c). The Levenberg-Marquardt screen runs on these
values; every score the fast path reports is numpy's (:meth:`.batch.Group.score_predictions`).

Compiled by numba on first use: about 6 to 10 s on these machines, once per checkout and kernel edit (cache=True
keeps the machine code in ``__pycache__/`` beside this file, ignored by git and by DVC), then about 0.4 s for a
process to load it (benchmarks/sr_pareto.py measures both).
"""

from __future__ import annotations

import ctypes.util
import math

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


def _pow_lanes() -> int:
    """8 (AVX-512) or 4 (AVX2) when glibc's libmvec is loadable and the CPU has the instructions, else 0; also 0
    when numba is told to compile for another CPU (NUMBA_CPU_NAME / NUMBA_CPU_FEATURES): the vector calling
    convention needs the host's vector registers."""
    from numba.core import config

    if config.CPU_NAME or config.CPU_FEATURES:
        return 0
    try:
        name = ctypes.util.find_library("mvec")
        if not name:
            return 0
        llvm.load_library_permanently(name)
        cpu = llvm.get_host_cpu_features()
    except (OSError, RuntimeError):
        return 0
    return 8 if cpu.get("avx512f", False) else 4 if cpu.get("avx2", False) else 0


#: lanes of the vector pow (0: the scalar C pow); libmvec's names: _ZGVeN8vv_pow (AVX-512), _ZGVdN4vv_pow (AVX2)
POW_LANES = _pow_lanes()
_VPOW = {8: "_ZGVeN8vv_pow", 4: "_ZGVdN4vv_pow"}


@intrinsic
def _vpow(typingctx, out, a, z, i):
    """out[i:i+L] = pow(|a[i:i+L]|, z[i:i+L]) by libmvec (L = POW_LANES; 1-d contiguous float64 arrays)."""
    lanes = POW_LANES

    def codegen(context, builder, sig, args):
        if not lanes:  # no vector pow here: the caller takes its scalar branch (never reaches this call)
            return context.get_dummy_value()
        vec = ir.VectorType(ir.DoubleType(), lanes)
        ptrs = []
        for ty, val in zip(sig.args[:3], args[:3], strict=True):
            data = context.make_array(ty)(context, builder, val).data
            ptrs.append(builder.bitcast(builder.gep(data, [args[3]]), vec.as_pointer()))
        mod = builder.module
        fname = f"llvm.fabs.v{lanes}f64"
        fabs = mod.globals.get(fname) or ir.Function(mod, ir.FunctionType(vec, [vec]), fname)
        fn = mod.globals.get(_VPOW[lanes]) or ir.Function(mod, ir.FunctionType(vec, [vec, vec]), _VPOW[lanes])
        base = builder.call(fabs, [builder.load(ptrs[1], align=8)])
        builder.store(builder.call(fn, [base, builder.load(ptrs[2], align=8)]), ptrs[0], align=8)
        return context.get_dummy_value()

    return types.none(out, a, z, i), codegen


FEATURE, CONST, FIXED, LIVE = 0, 1, 2, 3
POW, MUL, ADD, SUB, DIV = 0, 1, 2, 3, 4  # batch.OP_CODES

# error_model="numpy": a float division by zero gives inf / NaN as in numpy (numba's default raises); cache=True
# writes the compiled code next to this file in __pycache__/ (ignored by git and by DVC, .dvcignore)
_jit = njit(cache=True, error_model="numpy", nogil=True)


@_jit
def _node(V, i, op, lo, ro):
    """V[i] = op(V[lo], V[ro]) over the (padded) rows; one loop per operator, so the arithmetic ones vectorise."""
    a, z, out = V[lo], V[ro], V[i]
    n = out.shape[0]
    if op == POW:
        if POW_LANES:
            for t in range(0, n, POW_LANES):  # n is a multiple of 8
                _vpow(out, a, z, t)
        else:
            for t in range(n):
                out[t] = math.pow(abs(a[t]), z[t])
    elif op == MUL:
        for t in range(n):
            out[t] = a[t] * z[t]
    elif op == ADD:
        for t in range(n):
            out[t] = a[t] + z[t]
    elif op == SUB:
        for t in range(n):
            out[t] = a[t] - z[t]
    else:
        for t in range(n):
            out[t] = a[t] / z[t]


@_jit
def _copy(dst, src, n):
    """dst[:n] = src[:n] (an explicit loop: numba's slice assignment costs seconds of compile time)."""
    for t in range(n):
        dst[t] = src[t]


@_jit
def _fill(dst, v):
    """dst[:] = v."""
    for t in range(dst.shape[0]):
        dst[t] = v


@_jit
def _buffer(nodes, n):
    """A values buffer: nodes x (n rounded up to a multiple of 8), all 1.0 (the padding stays finite)."""
    return np.ones((nodes, (n + 7) // 8 * 8))


@_jit
def _load(V, b, kind, slot, inputs, X, feats, fixed):
    """Member b's inputs into V's first n columns: feature rows x_f and the constant-free subtrees' values."""
    n = X.shape[1]
    for q in range(inputs.shape[0]):
        i = inputs[q]
        if kind[i] == FEATURE:
            _copy(V[i], X[feats[b, slot[i]]], n)
        elif kind[i] == FIXED:
            _copy(V[i], fixed[slot[i], b], n)


@_jit
def _run(V, nodes, b, slot, left, right, ops):
    """The LIVE nodes ``nodes`` (bottom-up; -1 ends the list) of member b."""
    for q in range(nodes.shape[0]):
        i = nodes[q]
        if i < 0:
            break
        _node(V, i, ops[b, slot[i]], left[i], right[i])


@_jit
def _full(V, c, b, cnode, live, slot, left, right, ops):
    """Every constant-dependent value of member b at constants c (its inputs already loaded)."""
    for j in range(cnode.shape[0]):
        _fill(V[cnode[j]], c[j])
    _run(V, live, b, slot, left, right, ops)


@_jit
def evaluate_members(members, C, X, feats, ops, fixed, kind, slot, left, right, live, cnode, inputs):
    """f(X; C[m]) of each member ``members[m]``: an array (members x rows)."""
    n = X.shape[1]
    V = _buffer(kind.shape[0], n)
    out = np.empty((members.shape[0], n))
    for m in range(members.shape[0]):
        b = members[m]
        _load(V, b, kind, slot, inputs, X, feats, fixed)
        _full(V, C[m], b, cnode, live, slot, left, right, ops)
        _copy(out[m], V[0], n)
    return out


@_jit
def _dot(a, b, n):
    """sum_{t<n} a_t b_t with eight partial sums (t mod 8) added pairwise: independent chains, so the loop runs at
    the adder's throughput rather than its latency."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    m = n - n % 8
    for t in range(0, m, 8):
        s0 += a[t] * b[t]
        s1 += a[t + 1] * b[t + 1]
        s2 += a[t + 2] * b[t + 2]
        s3 += a[t + 3] * b[t + 3]
        s4 += a[t + 4] * b[t + 4]
        s5 += a[t + 5] * b[t + 5]
        s6 += a[t + 6] * b[t + 6]
        s7 += a[t + 7] * b[t + 7]
    for t in range(m, n):
        s0 += a[t] * b[t]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@_jit
def _residual_sse(y, pred, r):
    """r = y - pred (first n rows) and sum_t r_t^2, +inf when not finite."""
    n = y.shape[0]
    for t in range(n):
        r[t] = y[t] - pred[t]
    s = _dot(r, r, n)
    return s if math.isfinite(s) else math.inf


@_jit
def solve_pinv_sym(A, g, x, a, Q, rcond=1e-15):
    """x = pinv(A) g for a symmetric k x k matrix A, as numpy's ``pinv`` (rcond 1e-15) defines it: with the
    eigendecomposition A = Q diag(w) Q^T, pinv(A) = Q diag(w_i^+) Q^T with w_i^+ = 1 / w_i where |w_i| > rcond
    max|w| and 0 elsewhere (a symmetric matrix's singular values are the |w_i|). The eigendecomposition by
    cyclic Jacobi rotations (each zeroes one off-diagonal a_pq: tan(phi) = t, the root of t^2 + 2 theta t - 1 = 0
    of smaller modulus, theta = (a_qq - a_pp) / (2 a_pq)), until every |a_pq| <= 1e-17 max|a| (at most 60
    sweeps). ``a`` and ``Q`` are k x k scratch. A non-finite A gives x = 0."""
    k = A.shape[0]
    _fill(x, 0.0)
    big = 0.0
    for p in range(k):
        for q in range(k):
            if not math.isfinite(A[p, q]):
                return
            a[p, q] = A[p, q]
            Q[p, q] = 1.0 if p == q else 0.0
            big = max(big, abs(A[p, q]))
    for _ in range(60):
        off = 0.0
        for p in range(k - 1):
            for q in range(p + 1, k):
                off = max(off, abs(a[p, q]))
        if off <= 1e-17 * big:
            break
        for p in range(k - 1):
            for q in range(p + 1, k):
                if a[p, q] == 0.0:
                    continue
                theta = (a[q, q] - a[p, p]) / (2.0 * a[p, q])
                if abs(theta) > 1e150:
                    t = 0.5 / theta
                else:
                    t = 1.0 / (abs(theta) + math.sqrt(theta * theta + 1.0))
                    if theta < 0.0:
                        t = -t
                cs = 1.0 / math.sqrt(t * t + 1.0)
                sn = t * cs
                for r in range(k):  # a <- a G (columns p, q)
                    arp, arq = a[r, p], a[r, q]
                    a[r, p] = cs * arp - sn * arq
                    a[r, q] = sn * arp + cs * arq
                for r in range(k):  # a <- G^T a (rows p, q)
                    apr, aqr = a[p, r], a[q, r]
                    a[p, r] = cs * apr - sn * aqr
                    a[q, r] = sn * apr + cs * aqr
                for r in range(k):  # Q <- Q G
                    qrp, qrq = Q[r, p], Q[r, q]
                    Q[r, p] = cs * qrp - sn * qrq
                    Q[r, q] = sn * qrp + cs * qrq
    wmax = 0.0
    for p in range(k):
        wmax = max(wmax, abs(a[p, p]))
    cut = rcond * wmax
    for p in range(k):
        w = a[p, p]
        if abs(w) > cut:
            proj = 0.0  # (Q^T g)_p / w_p
            for r in range(k):
                proj += Q[r, p] * g[r]
            proj /= w
            for r in range(k):
                x[r] += Q[r, p] * proj


@_jit
def lm_members(
    members,
    C0,
    y,
    X,
    feats,
    ops,
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
):
    """Levenberg-Marquardt on each member ``members[m]`` from C0[m]: (constants, iterations), the iteration of
    :func:`.batch.levenberg_marquardt_reference` run member by member.

    With r = y - f(c) and SSE = r^T r: J_tj = (f_t(c + h_j e_j) - f_t(c - h_j e_j)) / (2 h_j), h_j = 1e-6
    max(1, |c_j|) (only the nodes on c_j's path to the root are recomputed: the others keep their values, so the
    same numbers as a full evaluation); the step s = pinv(J^T J + lam (diag(J^T J) + 1e-12 I)) J^T r
    (:func:`solve_pinv_sym`), taken when SSE(c + s) < SSE(c) (then lam / 3, else lam x 4). A member stops after
    an accepted step whose relative SSE gain is below ``gain_tol`` or whose step is below ``step_tol`` (||s|| <=
    step_tol (||c|| + step_tol)), when J^T J or J^T r is not finite (after one counted, unmoved iteration), when
    lam > 1e10, or after ``iters`` iterations; one whose starting SSE is not finite is left at C0 with 0
    iterations. A rejected step keeps J^T J and J^T r (the point did not move). Sums over the rows are
    :func:`_dot`'s (numpy's reference sums in another order: the same values to rounding)."""
    n = X.shape[1]
    nn = kind.shape[0]
    k = C0.shape[1]
    out = C0.copy()
    nit = np.zeros(members.shape[0], dtype=np.int64)
    V = _buffer(nn, n)  # values at the current point
    W = _buffer(nn, n)  # scratch: the shifted and trial points
    cols = V.shape[1]
    J = np.empty((k, n))
    fp = np.empty(n)
    r = np.empty(n)  # the residual at the current point
    rt = np.empty(n)  # the residual at the trial point
    JtJ = np.empty((k, k))
    Jtr = np.empty(k)
    A = np.empty((k, k))
    a = np.empty((k, k))
    Q = np.empty((k, k))
    c = np.empty(k)
    trial = np.empty(k)
    step = np.empty(k)
    for m in range(members.shape[0]):
        b = members[m]
        _load(V, b, kind, slot, inputs, X, feats, fixed)
        _copy(c, C0[m], k)
        _full(V, c, b, cnode, live, slot, left, right, ops)
        sse = _residual_sse(y, V[0], r)
        if not math.isfinite(sse):
            continue
        for i in range(
            nn
        ):  # W = V; afterwards only c_j's path (Jacobian) or the LIVE nodes (trial) move, and are restored
            _copy(W[i], V[i], cols)
        lam = 1e-3
        fresh = False
        ok = True
        it = 0
        while it < iters:
            if not fresh:
                for j in range(k):
                    h = 1e-6 * max(1.0, abs(c[j]))
                    path = paths[j]
                    _fill(W[cnode[j]], c[j] + h)
                    _run(W, path, b, slot, left, right, ops)
                    _copy(fp, W[0], n)
                    _fill(W[cnode[j]], c[j] - h)
                    _run(W, path, b, slot, left, right, ops)
                    h2 = 2.0 * h
                    for t in range(n):
                        J[j, t] = (fp[t] - W[0, t]) / h2
                    _copy(W[cnode[j]], V[cnode[j]], cols)  # restore c_j's path
                    for q in range(path.shape[0]):
                        if path[q] < 0:
                            break
                        _copy(W[path[q]], V[path[q]], cols)
                ok = True
                for p in range(k):
                    Jtr[p] = _dot(J[p], r, n)
                    ok = ok and math.isfinite(Jtr[p])
                    for q in range(p, k):
                        JtJ[p, q] = JtJ[q, p] = _dot(J[p], J[q], n)
                        ok = ok and math.isfinite(JtJ[p, q])
                fresh = True
            if ok:
                for p in range(k):
                    for q in range(k):
                        A[p, q] = JtJ[p, q]
                    A[p, p] = JtJ[p, p] + lam * (JtJ[p, p] + 1e-12)
                solve_pinv_sym(A, Jtr, step, a, Q)
            else:
                _fill(step, 0.0)
            for j in range(k):
                trial[j] = c[j] + step[j]
            _full(W, trial, b, cnode, live, slot, left, right, ops)
            new = _residual_sse(y, W[0], rt)
            better = ok and new < sse
            gain = (sse - new) / max(sse, 1e-300) if better else 0.0
            small = math.sqrt(_dot(step, step, k)) <= step_tol * (math.sqrt(_dot(c, c, k)) + step_tol)
            src, dst = (W, V) if better else (V, W)  # accepted: the trial point becomes current; else undone
            for j in range(k):
                _copy(dst[cnode[j]], src[cnode[j]], cols)
            for q in range(live.shape[0]):
                _copy(dst[live[q]], src[live[q]], cols)
            if better:
                _copy(c, trial, k)
                sse = new
                _copy(r, rt, n)
                fresh = False
                lam /= 3.0
            else:
                lam *= 4.0
            it += 1
            if (not ok) or (better and (gain < gain_tol or small)) or lam > 1e10:
                break
        _copy(out[m], c, k)
        nit[m] = it
    return out, nit
