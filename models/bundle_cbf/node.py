"""The uncertainty-weighted Neural ODE: a control-affine model fitted to noisy trajectories by RK4 rollouts.

Model. xdot = f_theta(x, u) = [v; a_theta(v) + b_theta * u] with a_theta an MLP 2 -> 32 -> 32 -> 2 (tanh) and
b_theta = softplus(beta) > 0 a per-axis gain (control-affine with a positive diagonal input matrix, so the
HOCBF's constraint stays linear in u and its sign is known).

Loss. Windows of H steps cut from every trajectory: from the observed state x~_t integrate H RK4 steps of f_theta
with the recorded controls, and compare with the observed states,

    T = sum_windows sum_{h=1..H} w_{t+h} ||x^_{t+h} - x~_{t+h}||^2,    w_i = sigma_i^-2 / mean_j sigma_j^-2,

the paper's T = sum_i ||f^_theta(x_i, u_i) - xdot_i||^2_{Sigma_i^-1} with Sigma_i = sigma_i^2 I read on the
rollout's states (the multi-step "Neural ODE" form; the normalisation by the mean weight changes no minimiser
and makes a constant sigma give exactly the unweighted loss). ``weighted=False`` is the unweighted fit
(w_i = 1). Adam on full batches of windows, through Lightning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn

from icml25.errors import UserError

STATE = ("px", "py", "vx", "vy")
CONTROL = ("ux", "uy")
COLUMNS = ("t", *STATE, *CONTROL)


class ControlAffineODE(nn.Module):
    """f_theta(x, u) = [v; a_theta(v) + softplus(beta) * u]."""

    def __init__(self, hidden: int = 32):
        super().__init__()
        self.hidden = hidden
        self.drift = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                                   nn.Linear(hidden, 2))  # fmt: skip
        self.beta = nn.Parameter(torch.full((2,), float(np.log(np.e - 1.0))))  # softplus(beta) = 1 at start

    def gain(self) -> torch.Tensor:
        return nn.functional.softplus(self.beta)

    def forward(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        v = x[..., 2:]
        return torch.cat([v, self.drift(v) + self.gain() * u], -1)


def rk4(f, x, u, dt: float):
    """One classical Runge-Kutta step of xdot = f(x, u), u held over the step (torch or numpy)."""
    k1 = f(x, u)
    k2 = f(x + dt / 2 * k1, u)
    k3 = f(x + dt / 2 * k2, u)
    k4 = f(x + dt * k3, u)
    return x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def rollout(net: ControlAffineODE, x0: torch.Tensor, us: torch.Tensor, dt: float) -> torch.Tensor:
    """States after each of the H steps: x0 (N, 4), us (N, H, 2) -> (N, H, 4)."""
    out, x = [], x0
    for h in range(us.shape[1]):
        x = rk4(net, x, us[:, h], dt)
        out.append(x)
    return torch.stack(out, 1)


def weights(sigma: torch.Tensor, weighted: bool) -> torch.Tensor:
    """w_i = sigma_i^-2 / mean(sigma^-2) (or ones): the per-sample weights of the loss."""
    if not weighted:
        return torch.ones_like(sigma)
    w = sigma.clamp_min(1e-12) ** -2
    return w / w.mean()


def window_loss(pred: torch.Tensor, target: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """mean over windows and steps of w ||pred - target||^2: pred, target (N, H, 4), w (N, H)."""
    return (w * ((pred - target) ** 2).sum(-1)).mean()


@dataclass
class Windows:
    """Training windows: start states (N, 4), controls (N, H, 2), observed targets (N, H, 4), sigma (N, H)."""

    x0: np.ndarray
    us: np.ndarray
    target: np.ndarray
    sigma: np.ndarray


def windows(traj: pd.DataFrame, sigma: np.ndarray, horizon: int, id_col: str = "traj",
            dt: float | None = None) -> Windows:  # fmt: skip
    """Every H-step window of every trajectory (each trajectory's rows ordered by t). A trajectory shorter than
    H + 1 rows gives none; with ``dt``, a trajectory whose steps in t are not dt raises UserError."""
    x0, us, tg, sg = [], [], [], []
    state, ctrl = traj[list(STATE)].to_numpy(float), traj[list(CONTROL)].to_numpy(float)
    times = traj["t"].to_numpy(float)
    for name, idx in traj.groupby(id_col, sort=False).indices.items():
        idx = idx[np.argsort(times[idx], kind="stable")]
        step = np.diff(times[idx])
        if dt is not None and len(step) and np.abs(step - dt).max() > 1e-6 * max(1.0, dt) + 1e-9:
            bad = step[np.argmax(np.abs(step - dt))]
            raise UserError(f"trajectory {name}: a step in t of {bad:g}, not dt {dt:g}")
        n = len(idx) - horizon
        if n < 1:
            continue
        start = idx[:n]
        steps = idx[np.arange(n)[:, None] + np.arange(1, horizon + 1)]
        x0.append(state[start])
        us.append(ctrl[idx[np.arange(n)[:, None] + np.arange(horizon)]])  # u_t is held from t to t + 1
        tg.append(state[steps])
        sg.append(sigma[steps])
    if not x0:
        raise UserError(f"no trajectory has more than {horizon} rows: nothing to fit")
    return Windows(np.concatenate(x0), np.concatenate(us), np.concatenate(tg), np.concatenate(sg))


def _lightning_module(net: ControlAffineODE, lr: float, dt: float):
    import lightning as L

    class NodeFit(L.LightningModule):
        """Full-batch Adam on the (weighted) window loss; ``history`` keeps the loss per step."""

        def __init__(self):
            super().__init__()
            self.net, self.history = net, []

        def training_step(self, batch, _):
            x0, us, target, wb = batch
            loss = window_loss(rollout(self.net, x0, us, dt), target, wb)
            self.history.append(float(loss.detach()))
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.net.parameters(), lr=lr)

    return NodeFit()


@dataclass
class Fitted:
    """A fitted model: the torch net and a numpy copy of it for the filter (drift(v), gain(v), accel(v, u))."""

    net: ControlAffineODE
    history: list[float]
    weighted: bool

    def __post_init__(self):
        with torch.no_grad():
            lin = [m for m in self.net.drift if isinstance(m, nn.Linear)]
            self._layers = [(m.weight.numpy().T.copy(), m.bias.numpy().copy()) for m in lin]
            self._gain = self.net.gain().numpy().astype(float)

    def drift(self, v: np.ndarray) -> np.ndarray:
        h = np.asarray(v, dtype=float)
        for i, (wt, b) in enumerate(self._layers):
            h = h @ wt + b
            if i < len(self._layers) - 1:
                h = np.tanh(h)
        return h

    def gain(self, v: np.ndarray) -> np.ndarray:
        return np.broadcast_to(self._gain, np.shape(v)).copy()

    def accel(self, v: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.drift(v) + self.gain(v) * u


def fit_windows(win: Windows, weighted: bool = True, *, dt: float = 0.02, steps: int = 600, lr: float = 1e-2,
                batch: int = 1024, hidden: int = 32, seed: int = 0, progress=None) -> Fitted:  # fmt: skip
    """Fit a ControlAffineODE to the windows by Adam (``steps`` minibatches of ``batch`` windows)."""
    from icml25.training import make_trainer
    from models.common.threads import one_thread
    from models.common.training import Progress, loader

    torch.manual_seed(seed)
    net = ControlAffineODE(hidden)
    t = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float32)  # noqa: E731
    w = weights(t(win.sigma), weighted)
    module = _lightning_module(net, lr, dt)
    callbacks = [Progress(max(1, steps // 4), progress)] if progress else []
    trainer = make_trainer(steps, seed, callbacks=callbacks)
    with one_thread():
        trainer.fit(module, loader((t(win.x0), t(win.us), t(win.target), w), batch, steps, seed))
    net.eval()
    return Fitted(net, module.history, weighted)


def check_trajectories(traj: pd.DataFrame, id_col: str = "traj", sigma_col: str | None = None) -> None:
    """Raise UserError naming what is wrong: a missing column, a NaN or infinite value, a sigma <= 0."""
    need = [*COLUMNS, id_col] + ([sigma_col] if sigma_col else [])
    missing = [c for c in need if c not in traj.columns]
    if missing:
        raise UserError(f"missing column(s) {', '.join(missing)}; the trajectories need {', '.join(need)}")
    if traj.empty:
        raise UserError("no rows: nothing to fit")
    if traj[id_col].isna().any():
        raise UserError(f"column {id_col}: {int(traj[id_col].isna().sum())} trajectory id(s) missing")
    for c in [*COLUMNS, *([sigma_col] if sigma_col else [])]:
        col = pd.to_numeric(traj[c], errors="coerce")
        bad = ~np.isfinite(col.to_numpy(float))
        if bad.any():
            raise UserError(f"column {c}: {int(bad.sum())} value(s) missing, NaN or not numeric "
                            f"(first at row {int(np.flatnonzero(bad)[0])})")  # fmt: skip
    if sigma_col and (pd.to_numeric(traj[sigma_col]) <= 0).any():
        raise UserError(f"column {sigma_col}: every sigma must be > 0")


def fit_dynamics(traj: pd.DataFrame, sigma=None, weighted: bool = True, *, dt: float = 0.02, horizon: int = 5,
                 steps: int = 600, lr: float = 1e-2, batch: int = 1024, hidden: int = 32, seed: int = 0,
                 id_col: str = "traj", progress=None) -> Fitted:  # fmt: skip
    """Fit the control-affine Neural ODE to a user's noisy trajectories.

    traj: a frame with columns t, px, py, vx, vy, ux, uy and a trajectory id (``id_col``), rows at a constant
    step ``dt``; sigma: each row's measurement uncertainty (an array, the name of a column, a scalar, or None
    for ones); ``weighted`` chooses the Sigma^-1-weighted loss (the paper's) or the unweighted one. Returns a
    :class:`Fitted` (usable as the ``model`` of safe_control)."""
    if not (np.isfinite(dt) and dt > 0):
        raise UserError(f"dt {dt} must be a finite number > 0")
    for name, value in (("steps", steps), ("horizon", horizon), ("batch", batch), ("hidden", hidden)):
        if int(value) != value or value < 1:
            raise UserError(f"{name} {value} must be an integer >= 1")
    sigma_col = sigma if isinstance(sigma, str) else None
    check_trajectories(traj, id_col, sigma_col)
    traj = traj.reset_index(drop=True)
    if sigma_col:
        s = traj[sigma_col].to_numpy(float)
    else:
        s = np.asarray(1.0 if sigma is None else sigma, dtype=float)
        if s.ndim > 1 or s.size not in (1, len(traj)):
            raise UserError(f"sigma has shape {s.shape}; give one value, or one per row ({len(traj)})")
        s = np.broadcast_to(s, (len(traj),)).copy()
        if not np.isfinite(s).all() or (s <= 0).any():
            raise UserError("sigma: every value must be finite and > 0")
    win = windows(traj, s, horizon, id_col, dt)
    return fit_windows(win, weighted, dt=dt, steps=steps, lr=lr, batch=batch, hidden=hidden, seed=seed,
                       progress=progress)  # fmt: skip


def accel_error(model, truth, v: np.ndarray, u: np.ndarray) -> float:
    """Relative one-step acceleration error sqrt(mean ||a^ - a||^2 / mean ||a||^2) on states (v, u)."""
    a = truth.accel(v, u)
    return float(np.sqrt(((model.accel(v, u) - a) ** 2).sum(-1).mean() / (a**2).sum(-1).mean()))


def save_model(path, fitted: Fitted, **meta) -> None:
    from models.common.weights import save_weights

    save_weights(path, dict(fitted.net.state_dict()), {"kind": "bundle_cbf_node", "hidden": fitted.net.hidden,
                                                       "weighted": fitted.weighted, **meta})  # fmt: skip


def load_model(path) -> Fitted:
    """A model that save_model wrote; UserError naming the file when it is missing or not one."""
    from models.common.weights import load_weights

    tensors, meta = load_weights(path, "bundle_cbf_node")
    hidden = meta.get("hidden", 32)
    if not isinstance(hidden, int) or isinstance(hidden, bool) or hidden < 1:
        raise UserError(f"{path}: hidden size {hidden!r} in its metadata is not an integer >= 1")
    net = ControlAffineODE(hidden)
    try:
        net.load_state_dict(tensors)
    except RuntimeError:
        raise UserError(f"{path}: its tensors do not fit the Neural ODE") from None
    return Fitted(net.eval(), [], bool(meta.get("weighted", True)))
