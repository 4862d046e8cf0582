"""Training and evaluation of stacked agents (models/pigdreamer/agent.py): a Lightning module whose training step
is one PPO-Lagrangian update (a rollout of every agent's environments, the multiplier step, epochs of minibatch
updates; manual optimisation), and the evaluation of final policies on fresh episodes.

Random streams, per agent and derived from its seed alone (so A, B and C of one seed share their initial weights,
training environments and action noise: common random numbers): the training environments (seed, 1), the action
sampling (seed, 2), the minibatch permutations (seed, 3). Evaluation environments are seeded by the evaluation
seed only, the same episodes for every agent.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader

from .agent import AgentSpec, EnvConfig, PPOConfig, StackedAgents, gae, lagrange_step, sample
from .env import HiddenHazard, Step


def agent_rng(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, stream, 19])


def reset_all(envs: list[HiddenHazard]) -> tuple[np.ndarray, np.ndarray]:
    """Reset every agent's environments; their observations and privileged maps stacked (K, n, .)."""
    first = [e.reset() for e in envs]
    return np.stack([o for o, _ in first]), np.stack([p for _, p in first])


def step_all(envs: list[HiddenHazard], act: np.ndarray) -> Step:
    """Step agent k's environments with ``act[k]``; every field of the steps stacked (K, n, ...)."""
    steps = [e.step(a) for e, a in zip(envs, act, strict=True)]
    return Step(**{f.name: np.stack([getattr(s, f.name) for s in steps]) for f in fields(Step)})


def forward_step(
    net: StackedAgents, obs, priv, prev, first, h
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """One step of every agent's networks on (K, n, .) arrays: the heads' outputs (K, n, .) and the next state."""
    o, p = torch.from_numpy(obs)[None], torch.from_numpy(priv)[None]
    hs, h = net.encode(o, p, torch.from_numpy(prev)[None], torch.from_numpy(first)[None], h)
    return {k: v[0] for k, v in net.heads(hs, o, p).items()}, h


class PPOLagrangian(L.LightningModule):
    """One training step = one rollout + the multiplier step + ``epochs`` x ``minibatches`` PPO updates."""

    def __init__(self, specs: list[AgentSpec], env: EnvConfig | None = None, ppo: PPOConfig | None = None):
        super().__init__()
        env, ppo = env or EnvConfig(), ppo or PPOConfig()
        self.automatic_optimization = False
        self.specs, self.env_cfg, self.cfg = specs, env, ppo
        self.envs = [env.make(ppo.envs, int(agent_rng(s.seed, 1).integers(2**31))) for s in specs]
        self.net = StackedAgents(specs, self.envs[0].obs_dim, self.envs[0].privileged_dim, ppo.hidden,
                                 ppo.align_weight)  # fmt: skip
        self.act_gens = [agent_rng(s.seed, 2) for s in specs]
        self.mb_gens = [agent_rng(s.seed, 3) for s in specs]
        self.lam = np.full(len(specs), ppo.lagrange_init)
        self.lam[[not s.lagrangian for s in specs]] = 0.0
        K, n = len(specs), ppo.envs
        self.obs, self.priv = reset_all(self.envs)
        self.first = np.ones((K, n), bool)
        self.prev = np.zeros((K, n), np.int64)
        self.h = self.net.initial_state(n)
        self.ep = np.zeros((3, K, n))  # running return, cost, length
        self.history: list[dict[str, Any]] = []

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.net.parameters(), lr=self.cfg.lr, eps=1e-5, foreach=True)

    # ---- rollout ---------------------------------------------------------------------------------------------
    def rollout(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        T, K = self.cfg.rollout, self.first.shape[0]
        keys = ("obs", "priv", "first", "prev", "act", "logp", "rew", "cost", "done", "v_r", "v_c")
        buf: dict[str, list] = {k: [] for k in keys}
        finished: list[list[tuple[float, float, float]]] = [[] for _ in range(K)]
        h0 = self.h.clone()
        with torch.no_grad():
            for _ in range(T):
                out, self.h = forward_step(self.net, self.obs, self.priv, self.prev, self.first, self.h)
                act = sample(out["logits"], self.act_gens)
                logp = torch.log_softmax(out["logits"], -1).gather(-1, torch.from_numpy(act)[..., None])[
                    ..., 0
                ]
                for k, v in (("obs", self.obs), ("priv", self.priv), ("first", self.first), ("prev", self.prev),
                             ("act", act), ("logp", logp.numpy()), ("v_r", out["v_r"].numpy()),
                             ("v_c", out["v_c"].numpy())):  # fmt: skip
                    buf[k].append(v)
                step = step_all(self.envs, act)
                rew, cost, done = step.reward, step.cost, step.done
                buf["rew"].append(rew)
                buf["cost"].append(cost)
                buf["done"].append(done)
                self.ep += np.stack([rew, cost, np.ones_like(rew)])
                for k, i in zip(*np.nonzero(done), strict=True):
                    finished[k].append((self.ep[0, k, i], self.ep[1, k, i], float(rew[k, i] > 0)))
                self.ep[:, done] = 0.0
                self.obs, self.priv = step.obs, step.privileged
                self.first, self.prev = done, act
            last, _ = forward_step(self.net, self.obs, self.priv, self.prev, self.first, self.h)
        data = {k: np.stack(v) for k, v in buf.items()}
        data["h0"] = h0.numpy()
        data["last_r"], data["last_c"] = last["v_r"].numpy(), last["v_c"].numpy()
        stats = {
            "return": np.array([np.mean([e[0] for e in f]) if f else np.nan for f in finished]),
            "cost": np.array([np.mean([e[1] for e in f]) if f else np.nan for f in finished]),
            "success": np.array([np.mean([e[2] for e in f]) if f else np.nan for f in finished]),
        }
        return data, stats

    # ---- update ----------------------------------------------------------------------------------------------
    def training_step(self, batch: Any, batch_idx: int) -> None:
        cfg = self.cfg
        data, stats = self.rollout()
        live = np.array([s.lagrangian for s in self.specs]) & ~np.isnan(stats["cost"])
        self.lam[live] = lagrange_step(self.lam[live], stats["cost"][live], cfg.cost_limit, cfg.lagrange_lr)
        adv_r, ret_r = gae(data["v_r"], data["rew"], data["done"], data["last_r"], cfg.gamma, cfg.gae_lambda)
        adv_c, ret_c = gae(data["v_c"], data["cost"], data["done"], data["last_c"], cfg.gamma, cfg.gae_lambda)
        lam = self.lam[None, :, None]
        adv = (adv_r - lam * adv_c) / (1.0 + lam)
        adv = (adv - adv.mean((0, 2), keepdims=True)) / (adv.std((0, 2), keepdims=True) + 1e-8)
        t = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in data.items()}
        t["adv"], t["ret_r"], t["ret_c"] = (
            torch.from_numpy(x.astype(np.float32)) for x in (adv, ret_r, ret_c)
        )
        K, n = self.first.shape
        mb = n // cfg.minibatches
        opt = self.optimizers()
        if cfg.anneal_lr:
            total = self.trainer.max_steps // (cfg.epochs * cfg.minibatches)  # the updates of this run
            frac = 1.0 - len(self.history) / total
            for group in opt.param_groups:
                group["lr"] = cfg.lr * frac
        agents = torch.arange(K)[:, None]
        sums = np.zeros(5)
        for _ in range(cfg.epochs):
            perms = torch.from_numpy(np.stack([g.permutation(n) for g in self.mb_gens]))
            for j in range(cfg.minibatches):
                idx = perms[:, j * mb : (j + 1) * mb]
                b = {k: v[:, agents, idx] for k, v in t.items() if v.dim() >= 3 and k != "h0"}
                hs, _ = self.net.encode(b["obs"], b["priv"], b["prev"], b["first"], t["h0"][agents, idx])
                out = self.net.heads(hs, b["obs"], b["priv"])
                logp_all = torch.log_softmax(out["logits"], -1)
                logp = logp_all.gather(-1, b["act"][..., None])[..., 0]
                ratio = torch.exp(logp - b["logp"])
                a = b["adv"]
                pg = -torch.min(ratio * a, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a).mean((0, 2))
                vloss = 0.5 * (((out["v_r"] - b["ret_r"]) ** 2).mean((0, 2)) + ((out["v_c"] - b["ret_c"]) ** 2)
                               .mean((0, 2)))  # fmt: skip
                ent = -(logp_all.exp() * logp_all).sum(-1).mean((0, 2))
                align = out["align"].mean((0, 2))
                loss = pg + cfg.value_coef * vloss - cfg.entropy_coef * ent + self.net.align * align
                opt.zero_grad()
                self.manual_backward(loss.sum())
                clip_per_agent(self.net, cfg.max_grad_norm)
                opt.step()
                sums += [float(x.detach().mean()) for x in (pg, vloss, ent, align)] + [1.0]
        self.history.append(
            {
                "update": len(self.history) + 1,
                "return": stats["return"].tolist(),
                "cost": stats["cost"].tolist(),
                "success": stats["success"].tolist(),
                "lambda": self.lam.tolist(),
                "policy_loss": sums[0] / sums[4],
                "value_loss": sums[1] / sums[4],
                "entropy": sums[2] / sums[4],
                "align": sums[3] / sums[4],
            }
        )


def clip_per_agent(net: StackedAgents, max_norm: float) -> None:
    """Scale each agent's gradient (its slice of every stacked parameter) to norm <= max_norm."""
    params = [p for p in net.parameters() if p.grad is not None]
    sq = sum(p.grad.pow(2).reshape(p.shape[0], -1).sum(1) for p in params)
    scale = (max_norm / (sq.sqrt() + 1e-6)).clamp(max=1.0)
    for p in params:
        p.grad.mul_(scale.view(-1, *([1] * (p.dim() - 1))))


def train(specs: list[AgentSpec], updates: int, env: EnvConfig | None = None, ppo: PPOConfig | None = None,
          callbacks: list | None = None) -> PPOLagrangian:  # fmt: skip
    """Train the stacked agents for ``updates`` PPO updates through Lightning; returns the module."""
    from icml25.training import make_trainer
    from models.common.threads import one_thread

    seed = specs[0].seed if specs else 0
    ppo = ppo or PPOConfig()
    with one_thread():
        trainer = make_trainer(
            max_steps=updates * ppo.epochs * ppo.minibatches,
            seed=seed,  # optimizer steps
            callbacks=callbacks or [],
        )
        module = PPOLagrangian(specs, env, ppo)
        trainer.fit(module, DataLoader(list(range(updates)), batch_size=None))
    return module


# ---- evaluation ----------------------------------------------------------------------------------------------
def evaluate(net: StackedAgents, env: EnvConfig, episodes: int, seed: int, gamma: float, leak_states: int = 1000
             ) -> dict[str, np.ndarray]:  # fmt: skip
    """Each agent's final (sampling) policy on ``episodes`` fresh episodes (the same for every agent). Returns per
    agent: return, cost, success (means over episodes), the normalised critic errors MSE(V, G) / Var(G) of the
    cost and reward critics against the discounted Monte-Carlo cost-to-go (reward-to-go) G_t = sum_k gamma^k c_{t+k}
    of the episode's own steps, and ``leak``: the largest absolute change of the actor's logits over the first
    ``leak_states`` evaluation states when the map is replaced by uniform random values."""
    from models.common.threads import one_thread

    K = net.K
    envs = [env.make(episodes, seed) for _ in range(K)]
    gens = [np.random.default_rng([seed, k, 7]) for k in range(K)]
    obs, priv = reset_all(envs)
    first = np.ones((K, episodes), bool)
    prev = np.zeros((K, episodes), np.int64)
    alive = np.ones((K, episodes), bool)
    rec: dict[str, list] = {k: [] for k in ("obs", "priv", "first", "prev", "alive", "rew", "cost", "v_r", "v_c",
                                            "logits", "success")}  # fmt: skip
    with one_thread(), torch.no_grad():
        h = net.initial_state(episodes)
        for _ in range(env.horizon):
            out, h = forward_step(net, obs, priv, prev, first, h)
            act = sample(out["logits"], gens)
            step = step_all(envs, act)
            done, rew = step.done, step.reward
            for k, v in (("obs", obs), ("priv", priv), ("first", first), ("prev", prev), ("alive", alive.copy()),
                         ("rew", rew), ("cost", step.cost), ("v_r", out["v_r"].numpy()),
                         ("v_c", out["v_c"].numpy()), ("logits", out["logits"].numpy()),
                         ("success", alive & done & (rew > 0))):  # fmt: skip
                rec[k].append(v)
            alive = alive & ~done
            obs, priv = step.obs, step.privileged
            first, prev = done, act
        r = {k: np.stack(v) for k, v in rec.items()}  # (T, K, episodes, ...)
        # the leakage check: the same histories with the map replaced by random values
        noise = np.random.default_rng([seed, 99]).random(r["priv"].shape).astype(np.float32)
        hs, _ = net.encode(torch.from_numpy(r["obs"]), torch.from_numpy(noise), torch.from_numpy(r["prev"]),
                           torch.from_numpy(r["first"]), net.initial_state(episodes))  # fmt: skip
        swapped = net.heads(hs, torch.from_numpy(r["obs"]), torch.from_numpy(noise))["logits"].numpy()
    change = np.abs(swapped - r["logits"]).max(-1)  # (T, K, episodes)
    live = r["alive"]
    g_c, g_r = discounted_to_go(r["cost"], live, gamma), discounted_to_go(r["rew"], live, gamma)
    res: dict[str, np.ndarray] = {
        "return": (r["rew"] * live).sum(0).mean(-1),
        "cost": (r["cost"] * live).sum(0).mean(-1),
        "success": r["success"].any(0).mean(-1),
        "length": live.sum(0).mean(-1),
    }
    res["critic_error_cost"] = normalised_error(r["v_c"], g_c, live)
    res["critic_error_reward"] = normalised_error(r["v_r"], g_r, live)
    leak = np.zeros(K)
    for k in range(K):
        states = change[:, k][live[:, k]]  # (t, env) order, alive steps
        leak[k] = states[:leak_states].max() if states.size else 0.0
    res["leak"] = leak
    return res


def discounted_to_go(x: np.ndarray, live: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = x_t + gamma G_{t+1} within each episode (``live`` marks its steps; the first step after them ends it)."""
    g = np.zeros_like(x, dtype=float)
    nxt = np.zeros(x.shape[1:])
    for t in range(len(x) - 1, -1, -1):
        nxt = np.where(live[t], x[t] + gamma * nxt, 0.0)
        g[t] = nxt
    return g


def normalised_error(v: np.ndarray, g: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Per agent (axis 1): mean((v - g)^2) / Var(g) over the live steps."""
    out = np.zeros(v.shape[1])
    for k in range(v.shape[1]):
        m = live[:, k]
        target = g[:, k][m]
        var = target.var()
        out[k] = ((v[:, k][m] - target) ** 2).mean() / var if var > 0 else np.nan
    return out


def config_dict(env: EnvConfig, ppo: PPOConfig) -> dict[str, Any]:
    return {"env": asdict(env), "ppo": asdict(ppo)}


# ---- checkpoints -----------------------------------------------------------------------------------------------
KIND = "pigdreamer-agent"


def save_agent(
    path, net: StackedAgents, k: int, env: EnvConfig, ppo: PPOConfig, lam: float, updates: int
) -> None:
    """Agent ``k`` of a stack in one safetensors file (its slice of every tensor), with what rebuilds it."""
    from models.common.weights import save_weights

    spec = net.specs[k]
    meta = {"kind": KIND, "variant": spec.variant, "seed": spec.seed, "actor_map": spec.actor_map,
            "lambda": float(lam), "updates": int(updates), **config_dict(env, ppo)}  # fmt: skip
    save_weights(path, {name: t[k : k + 1] for name, t in net.state_dict().items()}, meta)


def load_agents(paths) -> tuple[StackedAgents, list[dict[str, Any]], EnvConfig, PPOConfig]:
    """Stack the agents of ``paths`` (one environment and network size) into one module; returns it, each file's
    metadata, and the environment and PPO settings of the first."""
    from icml25.errors import UserError
    from models.common.weights import load_weights

    loaded = [load_weights(p, KIND) for p in paths]
    metas = [m for _, m in loaded]
    try:
        env, ppo = EnvConfig(**metas[0]["env"]), PPOConfig(**metas[0]["ppo"])
        specs = [AgentSpec(m["variant"], int(m["seed"]), bool(m["actor_map"])) for m in metas]
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{paths[0]}: a {KIND} file with unreadable settings ({exc})") from None
    for p, m in zip(paths, metas, strict=True):
        if m["env"] != metas[0]["env"] or m["ppo"]["hidden"] != ppo.hidden:
            raise UserError(f"{p}: another environment or network size than {paths[0]}")
    probe = env.make(1, 0)
    net = StackedAgents(specs, probe.obs_dim, probe.privileged_dim, ppo.hidden, ppo.align_weight)
    blank = net.state_dict()
    for p, (tensors, _) in zip(paths, loaded, strict=True):
        # a non-leaking agent stacked with a leaking stub lacks only the stub's input (its zeros are filled in)
        missing = [k for k in blank if k not in tensors and not k.startswith("leak_x.")]
        extra = [k for k in tensors if k not in blank]
        if missing or extra:
            raise UserError(
                f"{p}: its tensors do not fit a {KIND} (missing {missing[:3]}, unexpected {extra[:3]})"
            )
    state = {name: torch.cat([t[name] if name in t else torch.zeros_like(ref[:1]) for t, _ in loaded])
             for name, ref in blank.items()}  # fmt: skip
    try:
        net.load_state_dict(state)
    except (RuntimeError, KeyError) as exc:
        raise UserError(f"{paths[0]}: its tensors do not fit a {KIND} ({str(exc).splitlines()[0]})") from None
    return net, metas, env, ppo
