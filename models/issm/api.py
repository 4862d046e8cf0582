"""The user-facing entry: ``fit_issm`` fits an iSSM (or the SSM baseline) to recordings; the returned
:class:`FittedISSM` infers latents, predicts responses to a new stimulation protocol and saves itself.

    >>> from models.issm import fit_issm
    >>> fit = fit_issm(y, u, latent_dim=2)            # y: trials x bins x neurons, u: trials x bins x inputs
    >>> x_hat = fit.posterior(y, u)                    # the recognition mean, clamped where B u != 0
    >>> y_new = fit.predict(u_new, n_trials=10)        # the do-rollout of the learned dynamics, then f_phi
    >>> fit.A, fit.eigenvalues

Bad input raises :class:`~icml25.errors.UserError` with one line naming the value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from icml25.errors import UserError

KIND = "issm-model"


def _array(name: str, a: Any, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{name} must be numeric ({exc})") from None
    if arr.ndim != ndim:
        shape = "trials x bins x " + ("neurons" if name == "y" else "inputs")
        raise UserError(f"{name} must be {ndim}-D ({shape}), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise UserError(f"{name} has a non-finite value at index {tuple(int(i) for i in bad)}")
    if 0 in arr.shape:
        raise UserError(f"{name} is empty (shape {arr.shape})")
    return arr


def check_inputs(y: Any, u: Any, B: np.ndarray | None, latent_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """y (K, T, N) and u (K, T, M), finite, with the same trials and bins; M matches B's columns (or, with
    B = I, the latents)."""
    y, u = _array("y", y, 3), _array("u", u, 3)
    if u.shape[:2] != y.shape[:2]:
        raise UserError(
            f"u has {u.shape[0]} trials x {u.shape[1]} bins but y has {y.shape[0]} x {y.shape[1]}: they must match"
        )
    inputs = latent_dim if B is None else B.shape[1]
    if u.shape[2] != inputs:
        what = f"B's {inputs} columns" if B is not None else f"the {latent_dim} latents (B = I)"
        raise UserError(f"u has {u.shape[2]} inputs but they must match {what}")
    return y, u


@dataclass
class FittedISSM:
    """A fitted model. ``history`` holds the objective's terms per step (``elbo``, ``loss``, ...)."""

    model: Any
    history: list[dict[str, float]]

    @property
    def config(self) -> Any:
        return self.model.cfg

    @property
    def A(self) -> np.ndarray:
        return self.model.A.detach().numpy().astype(float)

    @property
    def B(self) -> np.ndarray:
        return self.model.B.detach().numpy().astype(float)

    @property
    def eigenvalues(self) -> np.ndarray:
        return np.linalg.eigvals(self.A)

    @property
    def final_elbo(self) -> float:
        return float(self.history[-1]["elbo"]) if self.history else float("nan")

    def posterior(self, y: Any, u: Any) -> np.ndarray:
        """The posterior mean of the latents (K, T, D) for recordings y under inputs u."""
        import torch

        y, u = check_inputs(y, u, self.B, self.config.latents)
        if y.shape[2] != self.config.neurons:
            raise UserError(f"y has {y.shape[2]} neurons but the model was fitted to {self.config.neurons}")
        with torch.no_grad():
            mean, _ = self.model.posterior(
                torch.tensor(y, dtype=torch.float32), torch.tensor(u, dtype=torch.float32)
            )
        return mean.numpy().astype(float)

    def reconstruct(self, y: Any, u: Any) -> np.ndarray:
        """f_phi(posterior mean): the model's reconstruction of y."""
        import torch

        x = self.posterior(y, u)
        with torch.no_grad():
            return self.model.emission(torch.tensor(x, dtype=torch.float32)).numpy().astype(float)

    def rollout(self, u_new: Any, n_trials: int | None = None) -> np.ndarray:
        """The latents of the deterministic do-rollout under ``u_new`` (see :meth:`predict`)."""
        import torch

        u = self._protocol(u_new, n_trials)
        return self.model.rollout(torch.tensor(u, dtype=torch.float32)).numpy().astype(float)

    def predict(self, u_new: Any, n_trials: int | None = None) -> np.ndarray:
        """Predicted observations (K, T, N) under a new stimulation protocol: the deterministic rollout of the
        learned dynamics from x_0 = 0 (iSSM: intervened coordinates set to B u; SSM: inputs added), then the
        emission. ``u_new`` is (K, T, M), or one protocol (T, M) repeated ``n_trials`` times (default 1)."""
        import torch

        u = self._protocol(u_new, n_trials)
        return self.model.predict(torch.tensor(u, dtype=torch.float32)).numpy().astype(float)

    def _protocol(self, u_new: Any, n_trials: int | None) -> np.ndarray:
        u = np.asarray(u_new, dtype=float)
        if u.ndim == 2:
            u = np.repeat(u[None], 1 if n_trials is None else n_trials, axis=0)
        u = _array("u", u, 3)
        if n_trials is not None and n_trials != u.shape[0]:
            raise UserError(f"n_trials = {n_trials} but u_new holds {u.shape[0]} trials")
        if u.shape[2] != self.B.shape[1]:
            raise UserError(f"u has {u.shape[2]} inputs but the model's B has {self.B.shape[1]} columns")
        return u

    def save(self, path: str | Path) -> Path:
        from models.common.weights import save_weights

        meta = {"kind": KIND, "config": self.config.to_dict(), "final_elbo": self.final_elbo}
        return save_weights(path, self.model.state_dict(), meta)

    @classmethod
    def load(cls, path: str | Path) -> FittedISSM:
        from models.common.weights import load_weights

        from .model import ISSM, Config

        tensors, meta = load_weights(path, KIND)
        try:
            cfg = Config(**meta["config"])
            model = ISSM(cfg, tensors["B"])
            model.load_state_dict(tensors)
        except (KeyError, TypeError, RuntimeError, ValueError) as exc:
            raise UserError(
                f"{path}: the weights do not match an iSSM ({str(exc).splitlines()[0]})"
            ) from None
        model.eval()
        return cls(model, [{"elbo": float(meta.get("final_elbo", float("nan")))}])


def fit_issm(
    y: Any,
    u: Any,
    latent_dim: int,
    interventional: bool = True,
    iters: int = 500,
    seed: int = 0,
    *,
    dt: float = 0.05,
    gamma: float = 1.0,
    B: Any = None,
    train_B: bool = False,
    shared_noise: bool = False,
    progress: Callable[[int, dict], None] | None = None,
) -> FittedISSM:
    """Fit an iSSM (``interventional=False``: the SSM baseline) by ``iters`` full-batch Adam steps on the
    negative ELBO (``gamma = 0``: the notebook's objective without the entropy term). B defaults to I (then u
    needs one input per latent); ``train_B`` learns it under a Laplace prior."""
    from .lit import fit_model
    from .model import Config

    if isinstance(latent_dim, bool) or not isinstance(latent_dim, int | np.integer) or latent_dim < 1:
        raise UserError(f"latent_dim must be an integer >= 1, got {latent_dim!r}")
    if isinstance(iters, bool) or not isinstance(iters, int | np.integer) or iters < 1:
        raise UserError(f"iters must be an integer >= 1, got {iters!r}")
    if not np.isfinite(dt) or dt <= 0:
        raise UserError(f"dt must be > 0, got {dt!r}")
    if not np.isfinite(gamma) or gamma < 0:
        raise UserError(f"gamma must be >= 0, got {gamma!r}")
    Bm = None
    if B is not None:
        Bm = np.asarray(B, dtype=float)
        if Bm.ndim != 2 or Bm.shape[0] != latent_dim or not np.isfinite(Bm).all():
            raise UserError(f"B must be a finite {latent_dim} x inputs matrix, got shape {Bm.shape}")
    y, u = check_inputs(y, u, Bm, int(latent_dim))
    cfg = Config(
        latents=int(latent_dim),
        inputs=u.shape[2],
        neurons=y.shape[2],
        dt=float(dt),
        interventional=bool(interventional),
        train_B=bool(train_B),
        gamma=float(gamma),
        shared_noise=bool(shared_noise),
    )
    model, history = fit_model(y, u, cfg, int(iters), int(seed), B=Bm, progress=progress)
    return FittedISSM(model, history)
