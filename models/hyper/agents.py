"""Tabular Q-learning agents built from shared parts, run as one batch of arrays (every agent, beta and seed at
once), and their greedy evaluation.

Shared: alpha = 0.5, epsilon-greedy with epsilon = 0.05, Q = 0 at the start, uniform random tie-breaking, the
count bonus ``r_i = 1 / sqrt(N(s'))`` with N counted over all of training, and bootstrapping through the time
limit (only a terminal transition stops the bootstrap). Per transition (s, a, r, s', done)::

    Q_pi(s, a) += alpha [r + beta r_i + gamma (1 - done) max_a' Q_pi(s', a') - Q_pi(s, a)]
    Q_mu(s, a) += alpha [r            + gamma (1 - done) max_a' Q_mu(s', a') - Q_mu(s, a)]

- **curiosity**: Q_pi acts and is evaluated (one learner on r + beta r_i).
- **decouple**: Q_pi acts; Q_mu learns off-policy from the same transitions and is evaluated.
- **hyper**: decouple plus repositioning: per episode ``h = min(Geom(p), H)`` (support 1, 2, ...),
  epsilon-greedy on Q_mu for t < h and on Q_pi from then on. With probability ``1 - p_rep`` an episode is pure
  exploration (h = 0; the spec's unverified reading; ``p_rep = 1`` by default).
- **baseline**: epsilon-greedy Q-learning without a bonus (Q_mu acts and is evaluated; the TD3 analogue).

Each run draws from its own generators (training and evaluation, seeded by the master seed, beta and the seed:
every agent at one (beta, seed) draws the same numbers), so a run does not depend on which other runs share the
batch. The keyword switches of :func:`sweep` are the
broken variants the tests check the claims against."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .mdp import MDP

AGENTS = ("curiosity", "decouple", "hyper", "baseline")
#: Broken variants, run as agents of their own (``<agent>:<flaw>``), so that one batch holds the method and its
#: stubs: Hyper or Decouple evaluated through Q_pi; beta r_i in Q_mu's target; Hyper with h = H (never explores);
#: Curiosity evaluated through the bonus-free table learned beside it.
FLAWS = ("eval_pi", "bonus_in_mu", "never_explore", "bonus_free")


@dataclass(frozen=True)
class Run:
    agent: str
    beta: float
    seed: int


def runs_of(agents: list[str] | tuple[str, ...], betas: list[float], seeds: int) -> list[Run]:
    """Every (agent, beta, seed); the baseline ignores beta, so it runs once per seed (beta 0)."""
    out = []
    for a in agents:
        for b in [0.0] if parse(a)[0] == "baseline" else betas:
            out += [Run(a, float(b), s) for s in range(seeds)]
    return out


def parse(agent: str) -> tuple[str, str | None]:
    """``"hyper:eval_pi"`` -> ("hyper", "eval_pi"); ValueError naming an unknown agent or flaw."""
    base, _, flaw = agent.partition(":")
    if base not in AGENTS or (flaw and flaw not in FLAWS):
        raise ValueError(f"unknown agent {agent!r} (agents: {', '.join(AGENTS)})")
    return base, flaw or None


def _generator(master: int, run: Run, stream: int = 0) -> np.random.Generator:
    """The run's own stream (0: training, 1: evaluation), keyed by the master seed, beta and the seed, not by the
    agent: every agent at one (beta, seed), and every stub, draws the same numbers (common random numbers, so
    Hyper with p_rep = 0 is Decouple exactly), and a run does not depend on which other runs share the batch."""
    bits = int(np.float64(run.beta).view(np.int64))
    return np.random.default_rng([master, stream, bits & 0xFFFFFFFF, bits >> 32 & 0xFFFFFFFF, run.seed])


def greedy(q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """argmax over the last axis, ties broken uniformly at random by the uniforms ``u`` (same shape as q)."""
    best = q == q.max(-1, keepdims=True)
    return np.argmax(np.where(best, u + 1.0, 0.0), -1)


def _outcome(mdp: MDP, s: np.ndarray, a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Which of the M outcomes of (s, a) happens, for uniforms u."""
    if mdp.next.shape[2] == 1:
        return np.zeros(len(s), np.int64)
    cum = np.cumsum(mdp.prob[s, a], -1)
    return np.minimum((u[:, None] >= cum).sum(-1), mdp.next.shape[2] - 1)


def _start(mdp: MDP, u: np.ndarray) -> np.ndarray:
    return np.minimum(np.searchsorted(np.cumsum(mdp.start), u, side="right"), mdp.states - 1)


def evaluate(
    mdp: MDP, q: np.ndarray, seed: int = 0, gens: list[np.random.Generator] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One greedy episode per run of the tables q (R, S, A): (reached the goal, discounted return). Each run draws
    its start and tie-breaking uniforms from its own generator (``gens``, else ``default_rng([seed, i])``), so
    its result does not depend on the batch."""
    R = len(q)
    gens = gens if gens is not None else [np.random.default_rng([seed, i]) for i in range(R)]
    draws = np.stack([g.random((mdp.horizon + 1, 2 + mdp.actions)) for g in gens])  # (R, H + 1, 2 + A)
    rows = np.arange(R)
    s = _start(mdp, draws[:, 0, 0])
    alive = np.ones(R, bool)
    ret, succ = np.zeros(R), np.zeros(R, bool)
    for t in range(mdp.horizon):
        a = greedy(q[rows, s], draws[:, t + 1, 2:])
        m = _outcome(mdp, s, a, draws[:, t + 1, 0])
        s2, r, done = mdp.next[s, a, m], mdp.reward[s, a, m], mdp.terminal[s, a, m]
        ret += np.where(alive, mdp.gamma**t * r, 0.0)
        succ |= alive & mdp.success[s, a, m]
        alive &= ~done
        s = np.where(alive, s2, s)
        if not alive.any():
            break
    return succ, ret


def sweep(
    mdp: MDP,
    runs: list[Run],
    episodes: int,
    p: float = 0.1,
    p_rep: float = 1.0,
    alpha: float = 0.5,
    epsilon: float = 0.05,
    every: int = 250,
    master: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict]:
    """Train every run for ``episodes`` episodes in lockstep; every ``every`` episodes (and at the end) evaluate
    each run's evaluated table greedily. Returns one row per run and evaluation. A run's agent may carry a flaw
    (:data:`FLAWS`): the broken variants the claims are tested against."""
    R, S, A, H = len(runs), mdp.states, mdp.actions, mdp.horizon
    parsed = [parse(r.agent) for r in runs]
    agent = np.array([b for b, _ in parsed])
    flaw = np.array([f or "" for _, f in parsed])
    beta = np.array([r.beta for r in runs])
    beta_mu = np.where(flaw == "bonus_in_mu", beta, 0.0)
    never_explore = flaw == "never_explore"
    # q[:, 0] is Q_pi, q[:, 1] is Q_mu, read and written through flat indices into ``flat`` (one gather and one
    # update serve both learners; 1-D fancy indexing is the fast kind)
    q, N = np.zeros((R, 2, S, A)), np.zeros(R * S)
    flat = q.reshape(-1)
    learner = (2 * np.arange(R)[:, None] + np.arange(2)[None, :]) * S  # (R, 2): row offsets of (run, learner)
    bonus_weight = np.stack([beta, beta_mu], 1)  # (R, 2)
    gens = [_generator(master, r) for r in runs]
    eval_gens = [_generator(master, r, 1) for r in runs]
    rows, acts = np.arange(R), np.arange(A)
    hyper, baseline = agent == "hyper", agent == "baseline"
    evaluated_pi = ((agent == "curiosity") & (flaw != "bonus_free")) | (flaw == "eval_pi")
    out = []
    for ep in range(1, episodes + 1):
        per_run = [(g.random((H, 3 + A)), g.geometric(p), g.random(2)) for g in gens]
        u = np.stack([b[0] for b in per_run])
        geo = np.array([b[1] for b in per_run])
        extra = np.stack([b[2] for b in per_run])
        h_hyper = np.where(never_explore, H, np.where(extra[:, 0] < p_rep, np.minimum(geo, H), 0))
        h = np.where(hyper, h_hyper, np.where(baseline, H, 0))
        actor = learner[
            rows[:, None], (np.arange(H)[None, :] < h[:, None]).astype(np.int64)
        ]  # Q_mu for t < h
        explore = u[:, :, 0] < epsilon
        random_action = np.minimum((u[:, :, 1] * A).astype(np.int64), A - 1)
        s = _start(mdp, extra[:, 1])
        alive = np.ones(R, bool)
        for t in range(H):
            q_act = flat[((actor[:, t] + s) * A)[:, None] + acts]
            a = np.where(explore[:, t], random_action[:, t], greedy(q_act, u[:, t, 3:]))
            m = _outcome(mdp, s, a, u[:, t, 2])
            s2, r, done = mdp.next[s, a, m], mdp.reward[s, a, m], mdp.terminal[s, a, m]
            n_at = rows * S + s2
            N[n_at] += alive  # finished runs add 0 (and their updates below are multiplied by 0)
            bonus = 1.0 / np.sqrt(np.maximum(N[n_at], 1.0))
            cont = mdp.gamma * ~done
            best_next = flat[((learner + s2[:, None]) * A)[..., None] + acts].max(-1)  # (R, 2)
            target = r[:, None] + bonus_weight * bonus[:, None] + cont[:, None] * best_next
            at = (learner + s[:, None]) * A + a[:, None]
            flat[at] += (alpha * alive)[:, None] * (target - flat[at])
            alive &= ~done
            s = np.where(alive, s2, s)
            if not alive.any():
                break
        if ep % every == 0 or ep == episodes:
            q_eval = np.where(evaluated_pi[:, None, None], q[:, 0], q[:, 1])
            succ, ret = evaluate(mdp, q_eval, gens=eval_gens)
            out += [
                {
                    "episode": ep,
                    "agent": r.agent,
                    "beta": r.beta,
                    "seed": r.seed,
                    "success": bool(sc),
                    "return": float(rt),
                }
                for r, sc, rt in zip(runs, succ, ret, strict=True)
            ]
            if progress is not None:
                progress(ep, episodes)
    return out


def fixed_policy_rows(mdp: MDP, action: int, runs: list[Run], episode: int) -> list[dict]:
    """The evaluation rows of a policy that always takes ``action`` (the step-left-and-stay stub: on the grid,
    action 1 steps onto the distractor and bumps the wall from then on)."""
    q = np.zeros((len(runs), mdp.states, mdp.actions))
    q[:, :, action] = 1.0
    succ, ret = evaluate(mdp, q)
    return [
        {
            "episode": episode,
            "agent": r.agent,
            "beta": r.beta,
            "seed": r.seed,
            "success": bool(sc),
            "return": float(rt),
        }
        for r, sc, rt in zip(runs, succ, ret, strict=True)
    ]
