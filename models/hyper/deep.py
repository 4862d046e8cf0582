"""The deep variant: DQN-style learners with target networks and an RND bonus, every (agent, beta, seed) trained
in lockstep as one ensemble of independent networks, on the same MDPs as the tabular agents (a Lightning module).

Per run, each learner is an MLP ``Q(o) in R^A`` over an observation ``o`` of the state (one-hot by default; the
grid's scaled (x, y) coordinates with ``obs="xy"``), with its own target network ``Q^-`` copied from it every
``target_every`` steps. One replay buffer per run holds (s, a, r, s', done, e) and both learners learn from it,
off-policy, with the Huber loss on::

    y_pi = r + beta * e / sigma + gamma (1 - done) max_a' Q_pi^-(o', a')      (explores)
    y_mu = r                    + gamma (1 - done) max_a' Q_mu^-(o', a')      (exploits; evaluated)

The bonus is random network distillation (Burda et al. 2019): a fixed, randomly initialised target network
``f`` and a predictor ``g`` trained to match it on the replayed next observations;
``e = ||g(o') - f(o')||^2`` is recorded when the transition is collected, and ``sigma`` is the running standard
deviation of every ``e`` the run has seen so far (Welford), so ``beta`` multiplies a bonus of unit scale
whatever the networks' sizes. Bootstrapping runs through the time limit (only a terminal transition stops it),
as in the tabular agents.

Acting is epsilon-greedy on Q_mu for t < h and on Q_pi from then on, with h drawn once per episode:

- curiosity: h = 0 (Q_pi acts and is evaluated), decouple: h = 0 (Q_mu is evaluated),
- hyper: h = min(Geom(p), H), or 0 with probability 1 - p_rep (pure exploration),
- baseline: h = H and beta = 0 (epsilon-greedy DQN without a bonus; Q_mu acts and is evaluated).

The first ``warmup`` steps act uniformly at random and do not learn (the replay buffer fills first).

Independence: run r's networks are slices ``[r]`` of batched weights (``torch.baddbmm``), the loss is the sum
over runs of each run's own mean, and Adam is elementwise, so one run's data never moves another run's weights.
Each run draws its initial weights and its random numbers (epsilon coins, actions, h, replay indices) from its
own generators, keyed as the tabular runs are (master seed, beta, seed; not the agent: common random numbers).

Ours (neither the paper nor a spec states them; each is a keyword below): the one-hot observation, the network
sizes, the replay ratio of one minibatch per step, the warm-up, the Huber loss, hard target copies, recording
``e`` at collection time, training the predictor on replayed next observations, and one minibatch update per
environment step for all three networks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from .agents import Run, _generator, evaluate, parse
from .mdp import MDP

OBS = ("onehot", "xy")


@dataclass(frozen=True)
class DeepConfig:
    steps: int = 30_000
    every: int = 3_000
    hidden: int = 64
    rnd_dim: int = 32
    batch: int = 64
    lr: float = 1e-3
    target_every: int = 100
    warmup: int = 500
    epsilon: float = 0.05
    p: float = 0.1
    p_rep: float = 1.0
    obs: str = "onehot"

    def __post_init__(self) -> None:
        if self.obs not in OBS:
            raise ValueError(f"obs = {self.obs!r}: must be one of {', '.join(OBS)}")
        for name in ("steps", "every", "hidden", "rnd_dim", "batch", "target_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} = {getattr(self, name)}: must be >= 1")
        if self.warmup < 0 or not 0 < self.p <= 1 or not 0 <= self.p_rep <= 1 or not 0 <= self.epsilon <= 1:
            raise ValueError("warmup >= 0, p in (0, 1], p_rep and epsilon in [0, 1]")


def observations(mdp: MDP, kind: str = "onehot") -> torch.Tensor:
    """(S, D) observation of every state: one-hot (D = S), or a square grid's (x, y) scaled to [0, 1] (D = 2)."""
    S = mdp.states
    if kind == "onehot":
        return torch.eye(S)
    side = math.isqrt(S)
    if not mdp.name.startswith("grid") or side * side != S:
        raise ValueError(f"obs = 'xy' needs a square grid, {mdp.name} has {S} states")
    s = torch.arange(S)
    return torch.stack([s // side, s % side], 1).float() / (side - 1)


class Ensemble(nn.Module):
    """R independent MLPs in one module: layer i has weights (R, d_i, d_{i+1}) and biases (R, 1, d_{i+1}), ReLU
    between layers; input (R, B, d_0) -> output (R, B, d_last). Run r's slice is initialised from its own
    generator as ``nn.Linear`` would be (uniform on +-1/sqrt(fan_in) for weights and biases).

    With ``index=True`` the input is (R, B) state indices of a one-hot observation, and the first layer reads row
    ``s`` of the weights (``onehot(s) @ W = W[s]``: the same function, without multiplying by zeros)."""

    def __init__(self, sizes: list[int], gens: list[torch.Generator], index: bool = False):
        super().__init__()
        self.index = index
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        for d_in, d_out in zip(sizes[:-1], sizes[1:], strict=True):
            bound = 1.0 / math.sqrt(d_in)
            w = torch.stack([(torch.rand(d_in, d_out, generator=g) * 2 - 1) * bound for g in gens])
            b = torch.stack([(torch.rand(1, d_out, generator=g) * 2 - 1) * bound for g in gens])
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(b))
        self.register_buffer("rows", torch.arange(len(gens))[:, None], persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ws, bs = list(self.weights), list(self.biases)
        if self.index:
            x = torch.relu(ws[0][self.rows, x] + bs[0])
            ws, bs = ws[1:], bs[1:]
        last = len(ws) - 1
        for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
            x = torch.baddbmm(b, x, w)
            if i < last:
                x = torch.relu(x)
        return x


class RunningStd:
    """Per-run running mean and variance of a stream of scalars (Welford's update, batched over runs)."""

    def __init__(self, runs: int):
        self.n = torch.zeros(runs, dtype=torch.float64)
        self.mean = torch.zeros(runs, dtype=torch.float64)
        self.m2 = torch.zeros(runs, dtype=torch.float64)

    def update(self, x: torch.Tensor) -> None:
        x = x.double()
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)

    @property
    def std(self) -> torch.Tensor:
        var = torch.where(self.n > 1, self.m2 / (self.n - 1).clamp(min=1), torch.ones_like(self.m2))
        return var.sqrt().clamp(min=1e-8).float()


def _torch_generator(master: int, run: Run) -> torch.Generator:
    seed = int(_generator(master, run, stream=3).integers(2**62))
    return torch.Generator().manual_seed(seed)


class DeepSweep(L.LightningModule):
    """Every run of ``runs`` on ``mdp``, one environment step and one minibatch update per training step (manual
    optimisation: one Adam over Q_pi, Q_mu and the RND predictors of all runs). ``rows`` collects the greedy
    evaluations: step, agent, beta, seed, success, return."""

    CHUNK = 256  # steps of random numbers drawn per run at a time

    def __init__(
        self,
        mdp: MDP,
        runs: list[Run],
        cfg: DeepConfig,
        master: int = 0,
        progress: Callable[[int, int], None] | None = None,
    ):
        super().__init__()
        self.automatic_optimization = False
        self.mdp, self.runs, self.cfg, self.progress = mdp, runs, cfg, progress
        R, A = len(runs), mdp.actions
        parsed = [parse(r.agent) for r in runs]
        agent = [b for b, _ in parsed]
        self.register_buffer("obs_table", observations(mdp, cfg.obs))
        D, index = self.obs_table.shape[1], cfg.obs == "onehot"
        gens = [_torch_generator(master, r) for r in runs]
        # Q_pi of run r is slice r of ``q``, Q_mu slice R + r (one batched call for both learners).
        self.q = Ensemble([D, cfg.hidden, cfg.hidden, A], gens + gens, index)
        self.q_target = Ensemble([D, cfg.hidden, cfg.hidden, A], gens + gens, index).requires_grad_(False)
        self.rnd_target = Ensemble([D, cfg.hidden, cfg.rnd_dim], gens, index).requires_grad_(False)
        self.rnd_pred = Ensemble([D, cfg.hidden, cfg.rnd_dim], gens, index)
        self._sync_targets()
        self.beta = torch.tensor(
            [0.0 if a == "baseline" else r.beta for a, r in zip(agent, runs, strict=True)]
        )
        self.hyper = torch.tensor([a == "hyper" for a in agent])
        self.baseline = torch.tensor([a == "baseline" for a in agent])
        self.eval_pi = torch.tensor([a == "curiosity" for a in agent])
        self.next = torch.as_tensor(mdp.next)
        self.cum = torch.as_tensor(np.cumsum(mdp.prob, -1))
        self.reward = torch.as_tensor(mdp.reward, dtype=torch.float32)
        self.terminal = torch.as_tensor(mdp.terminal)
        self.start_cum = torch.as_tensor(np.cumsum(mdp.start))
        n = cfg.steps
        self.buf_s = torch.zeros(R, n, dtype=torch.long)
        self.buf_a = torch.zeros(R, n, dtype=torch.long)
        self.buf_r = torch.zeros(R, n)
        self.buf_s2 = torch.zeros(R, n, dtype=torch.long)
        self.buf_done = torch.zeros(R, n)
        self.buf_e = torch.zeros(R, n)
        self.stats = RunningStd(R)
        self.gens = [_generator(master, r, stream=2) for r in runs]
        self.eval_gens = [_generator(master, r, stream=1) for r in runs]
        self.rows: list[dict] = []
        self._state = None

    # --- random numbers, drawn per run -------------------------------------------------------------------
    def _draw(self) -> dict[str, torch.Tensor]:
        C, B, p = self.CHUNK, self.cfg.batch, self.cfg.p
        per_run = [(g.random((C, 5)), g.geometric(p, C), g.random((C, B))) for g in self.gens]
        return {
            "u": torch.as_tensor(np.stack([x[0] for x in per_run]), dtype=torch.float64),  # (R, C, 5)
            "geo": torch.as_tensor(np.stack([x[1] for x in per_run])),  # (R, C)
            "idx": torch.as_tensor(np.stack([x[2] for x in per_run]), dtype=torch.float64),  # (R, C, B)
        }

    def _start(self, u: torch.Tensor) -> torch.Tensor:
        return torch.searchsorted(self.start_cum, u.contiguous(), right=True).clamp(max=self.mdp.states - 1)

    def _h(self, u_rep: torch.Tensor, geo: torch.Tensor) -> torch.Tensor:
        H = self.mdp.horizon
        rep = torch.where(u_rep < self.cfg.p_rep, geo.clamp(max=H), torch.zeros_like(geo))
        return torch.where(self.hyper, rep, torch.where(self.baseline, torch.full_like(geo, H), 0))

    def _step_env(self, s: torch.Tensor, a: torch.Tensor, u: torch.Tensor):
        m = (u[:, None] >= self.cum[s, a]).sum(-1).clamp(max=self.next.shape[2] - 1)
        return self.next[s, a, m], self.reward[s, a, m], self.terminal[s, a, m]

    def _sync_targets(self) -> None:
        self.q_target.load_state_dict(self.q.state_dict())

    def _o(self, s: torch.Tensor) -> torch.Tensor:
        """(R, B) states -> the networks' input: the indices themselves (one-hot) or (R, B, D) observations."""
        return s if self.cfg.obs == "onehot" else self.obs_table[s]

    def q_values(self, s: torch.Tensor, target: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Q_pi and Q_mu (each (R, B, A)) at states (R, B), of the online or the target networks."""
        o = self._o(s)
        out = (self.q_target if target else self.q)(torch.cat([o, o]))
        R = len(self.runs)
        return out[:R], out[R:]

    def bonus(self, s: torch.Tensor) -> torch.Tensor:
        """RND error ``||g(o) - f(o)||^2`` per run for states (R, B) -> (R, B)."""
        o = self._o(s)
        return (self.rnd_pred(o) - self.rnd_target(o)).pow(2).sum(-1)

    # --- Lightning ---------------------------------------------------------------------------------------
    def configure_optimizers(self):
        params = [*self.q.parameters(), *self.rnd_pred.parameters()]
        return torch.optim.Adam(params, lr=self.cfg.lr, fused=True)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(range(self.cfg.steps), batch_size=None)

    def on_train_start(self) -> None:
        self._draws, self._k0 = self._draw(), 0
        R = len(self.runs)
        u = self._draws["u"][:, 0]
        self._state = {
            "s": self._start(u[:, 4]),
            "t": torch.zeros(R, dtype=torch.long),
            "h": self._h(u[:, 3], self._draws["geo"][:, 0]),
        }

    def training_step(self, batch, batch_idx: int) -> None:
        k = int(batch)
        if k - self._k0 >= self.CHUNK:
            self._draws, self._k0 = self._draw(), k
        j = k - self._k0
        u, geo, idx = self._draws["u"][:, j], self._draws["geo"][:, j], self._draws["idx"][:, j]
        cfg, A, st = self.cfg, self.mdp.actions, self._state
        s, t = st["s"], st["t"]
        with torch.no_grad():
            q_pi, q_mu = self.q_values(s[:, None])
            q = torch.where((t < st["h"])[:, None], q_mu[:, 0], q_pi[:, 0])
            a = q.argmax(-1)
            explore = (u[:, 0] < cfg.epsilon) | (k < cfg.warmup)
            a = torch.where(explore, (u[:, 1] * A).long().clamp(max=A - 1), a)
            s2, r, done = self._step_env(s, a, u[:, 2])
            e = self.bonus(s2[:, None])[:, 0]
        self.stats.update(e)
        for buf, v in (
            (self.buf_s, s),
            (self.buf_a, a),
            (self.buf_r, r),
            (self.buf_s2, s2),
            (self.buf_done, done.float()),
            (self.buf_e, e),
        ):
            buf[:, k] = v
        t = t + 1
        end = done | (t >= self.mdp.horizon)
        st["s"] = torch.where(end, self._start(u[:, 4]), s2)
        st["h"] = torch.where(end, self._h(u[:, 3], geo), st["h"])
        st["t"] = torch.where(end, torch.zeros_like(t), t)
        if k >= cfg.warmup:
            self._update(k, idx)
        if (k + 1) % cfg.target_every == 0:
            self._sync_targets()
        if (k + 1) % cfg.every == 0 or k + 1 == cfg.steps:
            self._evaluate(k + 1)

    @torch.no_grad()
    def targets(
        self, r: torch.Tensor, s2: torch.Tensor, done: torch.Tensor, e: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The TD targets (each (R, B)) of a minibatch: ``y_pi = r + beta e / sigma + gamma (1 - done) max Q_pi^-``
        and ``y_mu = r + gamma (1 - done) max Q_mu^-`` (no bonus in the exploitation learner's target)."""
        g = self.mdp.gamma
        next_pi, next_mu = self.q_values(s2, target=True)
        bonus = e / self.stats.std[:, None]
        y_pi = r + self.beta[:, None] * bonus + g * (1 - done) * next_pi.amax(-1)
        y_mu = r + g * (1 - done) * next_mu.amax(-1)
        return y_pi, y_mu

    def _update(self, k: int, u_idx: torch.Tensor) -> None:
        opt = self.optimizers()
        opt.zero_grad()
        self.manual_backward(self.loss(k, u_idx))
        opt.step()

    def loss(self, k: int, u_idx: torch.Tensor) -> torch.Tensor:
        """Sum over runs of each run's mean Huber TD losses (Q_pi and Q_mu) and RND predictor loss, on one
        minibatch per run drawn uniformly from its first k + 1 transitions (``u_idx``: (R, B) uniforms)."""
        i = (u_idx * (k + 1)).long().clamp(max=k)  # (R, B)
        s, a, r = self.buf_s.gather(1, i), self.buf_a.gather(1, i), self.buf_r.gather(1, i)
        s2, done, e = self.buf_s2.gather(1, i), self.buf_done.gather(1, i), self.buf_e.gather(1, i)
        y_pi, y_mu = self.targets(r, s2, done, e)
        q_pi, q_mu = (x.gather(-1, a[..., None])[..., 0] for x in self.q_values(s))
        huber = nn.functional.smooth_l1_loss
        return (
            huber(q_pi, y_pi, reduction="none").mean(1).sum()
            + huber(q_mu, y_mu, reduction="none").mean(1).sum()
            + self.bonus(s2).mean(1).sum()
        )

    @torch.no_grad()
    def greedy_episode(self) -> tuple[np.ndarray, np.ndarray]:
        """One greedy episode per run of its evaluated network (Q_pi for curiosity, Q_mu otherwise), read as a
        table over the MDP's states and run by the tabular agents' evaluation (:func:`.agents.evaluate`, each run
        drawing from its evaluation generator): (reached the goal, discounted return)."""
        states = torch.arange(self.mdp.states).expand(len(self.runs), -1)
        q_pi, q_mu = self.q_values(states)
        q = torch.where(self.eval_pi[:, None, None], q_pi, q_mu)
        return evaluate(self.mdp, q.double().numpy(), gens=self.eval_gens)

    def _evaluate(self, step: int) -> None:
        succ, ret = self.greedy_episode()
        self.rows += [
            {
                "step": step,
                "agent": r.agent,
                "beta": r.beta,
                "seed": r.seed,
                "success": bool(sc),
                "return": float(rt),
            }
            for r, sc, rt in zip(self.runs, succ, ret, strict=True)
        ]
        if self.progress is not None:
            self.progress(step, self.cfg.steps)


def deep_sweep(
    mdp: MDP,
    runs: list[Run],
    cfg: DeepConfig,
    master: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict]:
    """Train every run of ``runs`` for ``cfg.steps`` environment steps (Lightning, CPU); greedy evaluations every
    ``cfg.every`` steps and at the end. Returns one row per run and evaluation."""
    from icml25.training import make_trainer

    for r in runs:
        if parse(r.agent)[1]:
            raise ValueError(f"agent {r.agent!r}: the deep variant has no broken variants")
    module = DeepSweep(mdp, runs, cfg, master, progress)
    trainer = make_trainer(max_steps=-1, seed=master, max_epochs=1)
    trainer.fit(module)
    return module.rows
