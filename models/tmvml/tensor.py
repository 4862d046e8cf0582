"""The t-SVD machinery: the Fourier transform along the third mode, per-slice SVDs, the Laplace tensor rank (LTR),
the tensor nuclear norm (TNN) and their proximal operators.

For a real tensor G (n1 x n2 x n3) let Gbar = fft(G, axis=3) and Gbar_k its k-th frontal slice. The tubal rank is
max_k rank(Gbar_k); the surrogates sum over every slice's singular values:

    ||G||_LTR = sum_k sum_i (1 - exp(-sigma_i(Gbar_k) / delta)),     ||G||_TNN = sum_k sum_i sigma_i(Gbar_k),

both times ``scale`` (1: the issue's sum; ``1 / n3``: the usual TNN normalisation, a switch). As delta -> 0 each
term of the LTR tends to 1[sigma > 0], so the LTR tends to the sum of the slices' ranks (n3 x the tubal rank for a
tensor whose slices share it): a tighter, non-convex surrogate than the TNN.

Proximal operators. Because ||G||_F^2 = (1 / n3) sum_k ||Gbar_k||_F^2, the problem
min_G 1/2 ||G - A||_F^2 + tau scale sum_k f(sigma(Gbar_k)) splits over Fourier slices into
min 1/2 ||Gbar_k - Abar_k||_F^2 + tau scale n3 f(sigma(Gbar_k)): each slice keeps its singular vectors and maps its
singular values s by the scalar prox with threshold t = tau scale n3,

    TNN: x = max(s - t, 0);
    LTR: x = argmin_{x >= 0} (x - s)^2 / 2 + t (1 - exp(-x / delta)): the stationarity condition
         phi(x) = x - s + (t / delta) exp(-x / delta) = 0 (phi convex, phi(s) > 0) is solved by Newton's method
         from x = s, which descends monotonically to the largest root below s, the local minimum (or finds none in
         [0, s]: then 0); the result is compared with x = 0; ``one_step`` is the spec's single weighted
         thresholding x = max(s - (t / delta) exp(-s / delta), 0).

Only slices 0..floor(n3/2) are decomposed: a real tensor's Fourier slices come in conjugate pairs
(Gbar_{n3-k} = conj(Gbar_k)), and the others are filled in by symmetry before the inverse FFT.
"""

from __future__ import annotations

import numpy as np

PENALTIES = ("ltr", "tnn")
PROX = ("fixed_point", "one_step")


def _half(n3: int) -> int:
    return n3 // 2 + 1


def slice_spectra(g: np.ndarray) -> np.ndarray:
    """Singular values of every Fourier slice of g (n1 x n2 x n3) -> (n3, min(n1, n2)), descending per slice."""
    gbar = np.fft.fft(g, axis=2)
    return np.linalg.svd(np.moveaxis(gbar, 2, 0), compute_uv=False)


def tubal_rank(g: np.ndarray, tol: float = 1e-8) -> int:
    """max_k rank(Gbar_k), a singular value counting when above tol x the largest of all slices."""
    s = slice_spectra(g)
    top = s.max() if s.size else 0.0
    return int((s > tol * max(top, 1e-300)).sum(1).max()) if top > 0 else 0


def ltr(g: np.ndarray, delta: float, scale: float = 1.0) -> float:
    """The Laplace tensor rank scale sum_k sum_i (1 - exp(-sigma_i(Gbar_k) / delta))."""
    return float(scale * (1.0 - np.exp(-slice_spectra(g) / delta)).sum())


def tnn(g: np.ndarray, scale: float = 1.0) -> float:
    """The tensor nuclear norm scale sum_k sum_i sigma_i(Gbar_k)."""
    return float(scale * slice_spectra(g).sum())


def prox_scalar(s: np.ndarray, t: float, penalty: str = "ltr", delta: float = 1.0, prox: str = "fixed_point",
                iters: int = 100, tol: float = 1e-13) -> np.ndarray:  # fmt: skip
    """The scalar prox of t f at s >= 0 (elementwise; see the module docstring)."""
    s = np.asarray(s, dtype=float)
    if penalty == "tnn":
        return np.maximum(s - t, 0.0)
    if penalty != "ltr":
        raise ValueError(f"penalty {penalty!r}; choose from {', '.join(PENALTIES)}")
    w = t / delta
    if prox == "one_step":
        return np.maximum(s - w * np.exp(-s / delta), 0.0)
    if prox != "fixed_point":
        raise ValueError(f"prox {prox!r}; choose from {', '.join(PROX)}")
    # phi(x) = x - s + w exp(-x / delta) is convex with phi(s) > 0: Newton from x = s descends monotonically to
    # its largest root (the local minimum) when phi'(s) > 0; where phi' <= 0 on the way there is no root in
    # [0, s] and the minimiser is 0
    x = s.copy()
    alive = np.ones(s.shape, bool)
    for _ in range(iters):
        e = w * np.exp(-x / delta)
        slope = 1.0 - e / delta
        alive &= slope > 0
        step = np.where(alive, (x - s + e) / np.where(alive, slope, 1.0), 0.0)
        x = np.where(alive, np.maximum(x - step, 0.0), 0.0)
        alive &= x > 0
        if np.abs(step).max(initial=0.0) <= tol * (1.0 + s.max(initial=0.0)):
            break
    x = np.maximum(x, 0.0)

    def obj(v):
        return 0.5 * (v - s) ** 2 + t * (1.0 - np.exp(-v / delta))

    return np.where(obj(x) < obj(np.zeros_like(s)), x, 0.0)  # a tie goes to 0, the sparser point


def prox_tensor(a: np.ndarray, tau: float, penalty: str = "ltr", delta: float = 1.0, scale: float = 1.0,
                prox: str = "fixed_point") -> np.ndarray:  # fmt: skip
    """argmin_G 1/2 ||G - A||_F^2 + tau ||G||_penalty for a real tensor A (n1 x n2 x n3)."""
    n3 = a.shape[2]
    abar = np.fft.fft(a, axis=2)
    h = _half(n3)
    u, s, vt = np.linalg.svd(np.moveaxis(abar[:, :, :h], 2, 0), full_matrices=False)
    x = prox_scalar(s, tau * scale * n3, penalty, delta, prox)
    slices = (u * x[:, None, :]) @ vt  # (h, n1, n2)
    out = np.empty_like(abar)
    out[:, :, :h] = np.moveaxis(slices, 0, 2)
    for k in range(h, n3):  # conjugate symmetry of a real tensor's spectrum
        out[:, :, k] = np.conj(out[:, :, n3 - k])
    return np.real(np.fft.ifft(out, axis=2))


def rotate(w: np.ndarray) -> np.ndarray:
    """W (d x q x V) -> G = permute(W, [1, 3, 2]) (d x V x q): each frontal slice of G is one label's classifiers
    across the views, and the FFT along its third mode couples the labels."""
    return np.transpose(w, (0, 2, 1))


def unrotate(g: np.ndarray) -> np.ndarray:
    """The inverse of :func:`rotate`: G (d x V x q) -> W (d x q x V)."""
    return np.transpose(g, (0, 2, 1))
