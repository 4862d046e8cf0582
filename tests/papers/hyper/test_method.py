"""hyper: the method's own properties, each against a hand computation or a plain per-run loop.

The two updates (Q_mu's target is bonus-free Q-learning, Q_pi's adds beta r_i with r_i = 1/sqrt(N(s')) counted over
all of training, bootstrapping through the time limit; the ``bonus_in_mu`` stub departs from it), read off the
tables the sweep hands to its greedy evaluation on tiny hand-built MDPs, and seen in behaviour (which table is
evaluated decides between a +0.1 exit and a long chain of novel states); the batched sweep against a per-run
Python loop written from the issue (h = min(Geom(p), H) drawn once per episode, Q_mu acting for t < h and Q_pi
after); h's distribution; p_rep = 0 acting as Decouple and ``never_explore`` as the baseline (under one shared
random stream); tie-breaking of ``greedy``; the grid (layout, walls, the optimum 0.769, the distractor's 0.351,
the trap) and its table round trip; determinism and independence of the batch; gymnasium's toy-text tables; and
the claims' worst cases over the named betas. gymnasium is imported inside the tests only."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from models.hyper import agents, mdp
from models.hyper.agents import Run, greedy, sweep
from models.hyper.mdp import MDP, cells, from_cells, grid

GAMMA = 0.98


def _mdp(nxt, reward, terminal, *, start: int = 0, horizon: int, gamma: float = GAMMA, success=None) -> MDP:
    """A deterministic MDP from (S, A) tables of next state, reward and terminal flag."""
    nxt = np.asarray(nxt, np.int64)[..., None]
    reward = np.asarray(reward, float)[..., None]
    terminal = np.asarray(terminal, bool)[..., None]
    success = terminal & (reward > 0) if success is None else np.asarray(success, bool)[..., None]
    p0 = np.zeros(nxt.shape[0])
    p0[start] = 1.0
    return MDP("hand", nxt, np.ones(nxt.shape), reward, terminal, success, p0, horizon, gamma)


def _capture(monkeypatch) -> list[np.ndarray]:
    """Record the (R, S, A) tables the sweep hands to its greedy evaluation (its evaluated tables)."""
    seen: list[np.ndarray] = []

    def fake(m, q, seed=0, gens=None):
        seen.append(np.array(q, copy=True))
        return np.zeros(len(q), bool), np.zeros(len(q))

    monkeypatch.setattr(agents, "evaluate", fake)
    return seen


def _shared_stream(monkeypatch) -> None:
    """Every run draws the stream of (master, seed) whatever its agent and beta, so agents can be compared
    transition by transition (the real streams are keyed by the base agent and beta as well)."""
    monkeypatch.setattr(
        agents, "_generator", lambda master, run, stream=0: np.random.default_rng([master, stream, run.seed])
    )


# ------------------------------------------------------------------------------------------- the updates
def _one_action_reference(m: MDP, episodes: int, beta: float, beta_mu: float, alpha: float = 0.5):
    """Scalar Q-learning on a one-action deterministic MDP (the path is fixed): (Q_pi, Q_mu, N)."""
    q_pi, q_mu, n = np.zeros(m.states), np.zeros(m.states), np.zeros(m.states)
    for _ in range(episodes):
        s = int(np.argmax(m.start))
        for _t in range(m.horizon):
            s2, r, done = int(m.next[s, 0, 0]), float(m.reward[s, 0, 0]), bool(m.terminal[s, 0, 0])
            n[s2] += 1
            bonus = 1.0 / math.sqrt(n[s2])
            cont = 0.0 if done else m.gamma
            q_pi[s] += alpha * (r + beta * bonus + cont * q_pi[s2] - q_pi[s])
            q_mu[s] += alpha * (r + beta_mu * bonus + cont * q_mu[s2] - q_mu[s])
            if done:
                break
            s = s2
    return q_pi, q_mu, n


# state 0 -> 1 (r 0), 1 -> 1 (r 0.5, never terminal): the episode ends on the time limit (H = 3)
LOOP = dict(nxt=[[1], [1]], reward=[[0.0], [0.5]], terminal=[[False], [False]], horizon=3)
# 0 -> 1 -> 2 (r 0, 0.25) then 2 -> 2 terminal worth 1 (H = 5: the terminal transition stops the episode)
ENDS = dict(
    nxt=[[1], [2], [2]], reward=[[0.0], [0.25], [1.0]], terminal=[[False], [False], [True]], horizon=5
)


def test_first_episode_updates_by_hand(monkeypatch):
    seen = _capture(monkeypatch)
    beta = 2.0
    runs = [Run("decouple", beta, 0), Run("decouple:eval_pi", beta, 0), Run("decouple:bonus_in_mu", beta, 0)]
    sweep(_mdp(**LOOP), runs, episodes=1, epsilon=0.0)
    (q,) = seen
    q_mu, q_pi, q_bad = q[0, :, 0], q[1, :, 0], q[2, :, 0]
    # t=0: 0 -> 1, N(1)=1;  t=1: 1 -> 1, N(1)=2 (Q(1) still 0 as its target is formed);  t=2: 1 -> 1, N(1)=3
    q1_pi = 0.5 * (0.5 + beta / math.sqrt(2))
    q1_pi += 0.5 * (0.5 + beta / math.sqrt(3) + GAMMA * q1_pi - q1_pi)
    q1_mu = 0.5 * 0.5
    q1_mu += 0.5 * (0.5 + GAMMA * q1_mu - q1_mu)
    np.testing.assert_allclose(q_pi, [0.5 * beta, q1_pi], rtol=1e-12)
    np.testing.assert_allclose(q_mu, [0.0, q1_mu], rtol=1e-12)  # bonus-free: state 0's reward is 0
    np.testing.assert_allclose(q_bad, q_pi, rtol=1e-12)  # one action: the stub's Q_mu is Q_pi


@pytest.mark.parametrize("chain", [LOOP, ENDS], ids=["time-limit", "terminal"])
@pytest.mark.parametrize("beta", [0.1, 10.0])
def test_updates_over_episodes_match_scalar_q_learning(monkeypatch, chain, beta):
    seen = _capture(monkeypatch)
    m = _mdp(**chain)
    runs = [Run("hyper", beta, 0), Run("hyper:eval_pi", beta, 0), Run("hyper:bonus_in_mu", beta, 1)]
    sweep(m, runs, episodes=6, every=3)
    assert len(seen) == 2  # episodes 3 and 6
    for episodes, q in zip((3, 6), seen, strict=True):
        ref_pi, ref_mu, _ = _one_action_reference(m, episodes, beta, 0.0)
        _, bad_mu, _ = _one_action_reference(m, episodes, beta, beta)
        np.testing.assert_allclose(q[0, :, 0], ref_mu, rtol=1e-12, atol=1e-15)  # Q_mu: r only
        np.testing.assert_allclose(q[1, :, 0], ref_pi, rtol=1e-12)  # Q_pi: r + beta r_i
        np.testing.assert_allclose(q[2, :, 0], bad_mu, rtol=1e-12)
        assert np.abs(q[2, :, 0] - q[0, :, 0]).max() > 0.05 * beta


def test_bonus_counts_persist_across_episodes(monkeypatch):
    """r_i = 1/sqrt(N(s')) with N over all of training: a per-episode count would keep the bonus at 1."""
    seen = _capture(monkeypatch)
    m = _mdp(nxt=[[1], [1]], reward=[[0.0], [0.0]], terminal=[[False], [True]], horizon=2)
    sweep(m, [Run("curiosity", 1.0, 0)], episodes=4, every=1)
    # each episode: 0 -> 1 then 1 -> 1 (terminal): N(1) grows by 2, state 1's own update is beta/sqrt(N)
    q1 = 0.0
    for ep, q in enumerate(seen, start=1):
        q1 += 0.5 * (1.0 / math.sqrt(2 * ep) - q1)
        assert q[0, 1, 0] == pytest.approx(q1, rel=1e-12)


def _lure(chain: int = 5, corridor: bool = False) -> MDP:
    """State 0: action 0 exits at once (+0.1, terminal, the goal); action 1 enters a chain of ``chain`` fresh
    states worth nothing that ends in a terminal transition. Bonus-free, action 0 is worth 0.1 and action 1
    nothing; with the bonus, the chain's novelty makes action 1 worth more. ``corridor``: the episode starts one
    step before state 0 (both actions lead there), so the choice falls on t = 1 instead of t = 0."""
    S = chain + 2 + corridor  # 0 the choice, 1 the exit, 2..chain+1 the chain, then the corridor
    nxt = np.zeros((S, 2), np.int64)
    reward = np.zeros((S, 2))
    term = np.zeros((S, 2), bool)
    nxt[0] = [1, 2]
    reward[0, 0], term[0, 0] = 0.1, True
    for s in range(2, chain + 2):
        nxt[s] = min(s + 1, chain + 1)
        term[s] = s == chain + 1
    nxt[1], term[1] = 1, True
    if corridor:
        nxt[S - 1] = 0
    return _mdp(nxt, reward, term, start=S - 1 if corridor else 0, horizon=chain + 2 + corridor)


def test_which_table_is_evaluated_decides_the_policy():
    """Uniform behaviour (epsilon 1): the bonus-free Q_mu takes the +0.1 exit; a table carrying the bonus (Q_pi,
    or Q_mu with the bonus in its target) runs into the novel chain."""
    names = ["decouple", "hyper", "curiosity:bonus_free", "baseline"]
    names_bonus = [
        "curiosity",
        "decouple:eval_pi",
        "hyper:eval_pi",
        "decouple:bonus_in_mu",
        "hyper:bonus_in_mu",
    ]
    runs = [Run(a, 10.0, s) for a in names + names_bonus for s in range(2)]
    rows = sweep(_lure(), runs, episodes=40, epsilon=1.0)
    by = {(r["agent"], r["seed"]): r for r in rows}
    for a in names:
        for s in range(2):
            assert by[a, s]["success"] and by[a, s]["return"] == pytest.approx(0.1), (a, s)
    for a in names_bonus:
        for s in range(2):
            assert not by[a, s]["success"] and by[a, s]["return"] == 0.0, (a, s)


# --------------------------------------------------------------------------------- repositioning, h, p_rep
def _loop_reference(m: MDP, run: Run, episodes: int, p: float, p_rep: float, master: int, epsilon: float):
    """One run as a plain Python loop written from the issue, drawing the run's own stream the way the sweep
    does (per episode: H x (3 + A) uniforms, one geometric, two uniforms): (Q_pi, Q_mu)."""
    base, flaw = agents.parse(run.agent)
    g = agents._generator(master, run)
    S, A, H = m.states, m.actions, m.horizon
    q_pi, q_mu, n = np.zeros((S, A)), np.zeros((S, A)), np.zeros(S)
    beta_mu = run.beta if flaw == "bonus_in_mu" else 0.0
    for _ in range(episodes):
        u, geo, extra = g.random((H, 3 + A)), g.geometric(p), g.random(2)
        if base == "hyper":
            h = H if flaw == "never_explore" else (min(geo, H) if extra[0] < p_rep else 0)
        else:
            h = H if base == "baseline" else 0
        s = int(np.searchsorted(np.cumsum(m.start), extra[1], side="right"))
        for t in range(H):
            q = q_mu[s] if t < h else q_pi[s]
            tied = np.flatnonzero(q == q.max())
            a = int(tied[np.argmax(u[t, 3 + tied])])
            if u[t, 0] < epsilon:
                a = min(int(u[t, 1] * A), A - 1)
            s2, r, done = int(m.next[s, a, 0]), float(m.reward[s, a, 0]), bool(m.terminal[s, a, 0])
            n[s2] += 1
            bonus = 1.0 / math.sqrt(n[s2])
            cont = 0.0 if done else m.gamma
            q_pi[s, a] += 0.5 * (r + run.beta * bonus + cont * q_pi[s2].max() - q_pi[s, a])
            q_mu[s, a] += 0.5 * (r + beta_mu * bonus + cont * q_mu[s2].max() - q_mu[s, a])
            if done:
                break
            s = s2
    return q_pi, q_mu


@pytest.mark.parametrize(("p", "p_rep"), [(0.3, 1.0), (0.5, 0.5)])
def test_batched_sweep_equals_a_per_run_loop(monkeypatch, p, p_rep):
    """h = min(Geom(p), H) once per episode (or 0 when the episode is not repositioned), Q_mu acting for t < h and
    Q_pi from then on, for every agent: the batch's tables equal a plain loop's, run by run."""
    seen = _capture(monkeypatch)
    m = grid(size=5, start=(2, 1), goal=(4, 4), distractor=(2, 0), horizon=12)
    base = [Run("hyper", 1.0, 0), Run("hyper", 10.0, 1), Run("decouple", 1.0, 0), Run("curiosity", 1.0, 0)]
    base += [Run("baseline", 0.0, 0), Run("hyper:never_explore", 1.0, 0), Run("hyper:bonus_in_mu", 1.0, 0)]
    runs = base + [Run(r.agent.split(":")[0] + ":eval_pi", r.beta, r.seed) for r in base[:2]]
    sweep(m, runs, episodes=15, p=p, p_rep=p_rep, epsilon=0.2, master=3)
    (q,) = seen
    for i, run in enumerate(runs):
        ref_pi, ref_mu = _loop_reference(m, run, 15, p, p_rep, 3, 0.2)
        evaluated_pi = run.agent == "curiosity" or run.agent.endswith("eval_pi")
        np.testing.assert_allclose(q[i], ref_pi if evaluated_pi else ref_mu, rtol=1e-12, err_msg=str(run))
    # the loop is not vacuous: hyper's tables differ from decouple's and from never_explore's
    assert not np.allclose(q[0], q[2]) and not np.allclose(q[0], q[5])


@pytest.mark.parametrize(("p", "H"), [(0.1, 60), (0.5, 3), (0.02, 10)])
def test_h_is_a_capped_geometric_with_the_truncated_mean(p, H):
    """The expression the sweep draws, ``min(g.geometric(p), H)``: support 1..H, mean (1 - (1-p)^H) / p."""
    g = np.random.default_rng(7)
    h = np.minimum(np.array([g.geometric(p) for _ in range(10_000)]), H)
    assert h.min() == 1 and h.max() == H
    mean = (1 - (1 - p) ** H) / p
    assert mean == pytest.approx(sum((1 - p) ** k for k in range(H)))  # E min(G, H) = sum_k P(G > k)
    se = h.std() / math.sqrt(len(h))
    assert abs(h.mean() - mean) < 4 * se + 1e-9, (h.mean(), mean)
    assert (h == H).mean() == pytest.approx((1 - p) ** (H - 1), abs=0.02)


def test_p_rep_zero_acts_as_decouple_and_never_explore_as_the_baseline(monkeypatch):
    """Under one shared stream per seed: Hyper with p_rep = 0 never lets Q_mu act (its rows and tables are
    Decouple's); ``never_explore`` (h = H) never lets Q_pi act (the baseline's). With the real streams (keyed by
    the base agent) the two agents draw different numbers, so the equality holds only under a shared one."""
    _shared_stream(monkeypatch)
    m = grid(size=5, start=(2, 1), goal=(4, 4), distractor=(2, 0), horizon=15)
    runs = [
        Run("hyper", 3.0, 0),
        Run("decouple", 3.0, 0),
        Run("hyper:never_explore", 3.0, 0),
        Run("baseline", 0.0, 0),
    ]
    for p_rep in (0.0, 1.0):
        seen = _capture(monkeypatch)
        sweep(m, runs, episodes=30, every=10, p=0.2, p_rep=p_rep)
        q = np.stack(seen)  # (evaluations, runs, S, A)
        assert np.array_equal(q[:, 2], q[:, 3])  # never_explore == baseline, whatever p_rep
        same = np.array_equal(q[:, 0], q[:, 1])
        assert same == (p_rep == 0.0), p_rep
    # and the rows: each alone in its batch (a run's evaluation draws depend on its place in the batch)
    monkeypatch.undo()
    _shared_stream(monkeypatch)
    rows = {}
    for run in runs:
        rows[run.agent] = [
            {k: v for k, v in r.items() if k not in ("agent", "beta")}
            for r in sweep(m, [run], episodes=30, every=10, p=0.2, p_rep=0.0)
        ]
    assert rows["hyper"] == rows["decouple"] and rows["hyper:never_explore"] == rows["baseline"]


def _chain_visits(q: np.ndarray, chain: int = 5) -> np.ndarray:
    """Per evaluation and run, the sum of Q_pi over the chain's states: it changes only when a run enters it."""
    return q[:, :, 2 : chain + 2, :].sum((2, 3))


@pytest.mark.parametrize("corridor", [False, True], ids=["choice-at-t0", "choice-at-t1"])
def test_with_p_one_q_mu_acts_on_the_first_step_only(monkeypatch, corridor):
    """p = 1: h = 1 every episode (epsilon 0.2, 4 seeds, Q_pi read after each episode). Once Q_mu has seen the
    exit's +0.1 it prefers the exit, while Q_pi (bonus) prefers the chain. With the choice at t = 0, Q_mu makes
    it: Hyper enters the chain only when epsilon fires, Decouple most episodes. With the choice at t = 1, Q_pi
    makes it: Hyper enters the chain like Decouple. (h = H, Q_pi always acting, or Q_mu acting for t <= h each
    fail one of the two.)"""
    seen = _capture(monkeypatch)
    runs = [Run(a, 10.0, s) for a in ("hyper:eval_pi", "decouple:eval_pi") for s in range(4)]
    sweep(_lure(corridor=corridor), runs, episodes=60, every=1, p=1.0, epsilon=0.2)
    entered = (np.diff(_chain_visits(np.stack(seen)), axis=0) != 0)[20:]  # episodes 22..60
    hyper, decouple = entered[:, :4].mean(), entered[:, 4:].mean()
    assert decouple > 0.6, decouple
    assert (hyper > 0.6) if corridor else (hyper < 0.3), hyper


# ----------------------------------------------------------------------------------------------- greedy
def test_greedy_breaks_ties_uniformly_and_never_picks_a_lower_value():
    g = np.random.default_rng(0)
    n = 30_000
    q = np.tile([1.0, 1.0, 0.5, 1.0], (n, 1))
    a = greedy(q, g.random(q.shape))
    counts = np.bincount(a, minlength=4) / n
    assert counts[2] == 0
    np.testing.assert_allclose(counts[[0, 1, 3]], 1 / 3, atol=0.015)
    # random tables with many ties: always one of the maxima, and every maximum gets chosen
    q = g.integers(0, 3, (n, 5)).astype(float)
    a = greedy(q, g.random(q.shape))
    assert (q[np.arange(n), a] == q.max(1)).all()
    two = (q == q.max(1, keepdims=True)).sum(1) == 2
    first = np.argmax(q == q.max(1, keepdims=True), 1)
    assert 0.47 < (a[two] == first[two]).mean() < 0.53
    # no tie: the uniforms do not matter
    q = g.standard_normal((1000, 4))
    assert np.array_equal(greedy(q, g.random(q.shape)), q.argmax(1))


# ------------------------------------------------------------------------------------------------ the grid
def _state(x: int, y: int) -> int:
    return x * 11 + y


def test_grid_layout_walls_and_rewards():
    m = grid()
    assert (m.states, m.actions, m.horizon, m.gamma) == (121, 4, 60, 0.98)
    assert m.next.shape == (121, 4, 1) and (m.prob == 1).all()
    assert m.start[_state(5, 1)] == 1.0 and m.start.sum() == 1.0
    goal, side = _state(10, 10), _state(5, 0)
    into_goal = m.next[:, :, 0] == goal
    assert (m.reward[:, :, 0][into_goal] == 1.0).all() and m.terminal[:, :, 0][into_goal].all()
    # the goal's two neighbours step in, and from the goal itself two moves bump back into it
    assert m.success[:, :, 0][into_goal].all() and m.success.sum() == into_goal.sum() == 4
    into_side = m.next[:, :, 0] == side
    assert (m.reward[:, :, 0][into_side] == 0.01).all() and not m.terminal[:, :, 0][into_side].any()
    others = ~into_goal & ~into_side
    assert (m.reward[:, :, 0][others] == 0).all() and not m.terminal[:, :, 0][others].any()
    # up, down, left, right; bumping a wall stays
    assert list(m.next[_state(3, 4), :, 0]) == [_state(3, 5), _state(3, 3), _state(2, 4), _state(4, 4)]
    assert list(m.next[_state(0, 0), :, 0]) == [_state(0, 1), _state(0, 0), _state(0, 0), _state(1, 0)]
    assert list(m.next[_state(10, 9), :, 0]) == [goal, _state(10, 8), _state(9, 9), _state(10, 9)]
    trap = grid(trap=True)
    assert (trap.reward[:, :, 0][into_side] == 0.2).all() and trap.terminal[:, :, 0][into_side].all()
    assert not trap.success[:, :, 0][into_side].any() and trap.success.sum() == 4


def _shortest_path_q(m: MDP) -> np.ndarray:
    """Right until x = 10, then up."""
    q = np.zeros((1, m.states, 4))
    for s in range(m.states):
        q[0, s, 3 if s // 11 < 10 else 0] = 1.0
    return q


def test_the_shortest_path_returns_the_optimum():
    for m in (grid(), grid(trap=True)):
        succ, ret = agents.evaluate(m, _shortest_path_q(m))
        assert succ.tolist() == [True]
        # 14 steps (5 right, 9 up): the goal's +1 arrives on step t = 13
        assert ret[0] == pytest.approx(0.98**13) and round(float(ret[0]), 3) == 0.769


def test_staying_on_the_distractor_returns_0351_without_success():
    runs = [Run("stub", 1.0, s) for s in range(3)]
    rows = agents.fixed_policy_rows(grid(), 1, runs, episode=7)
    expected = 0.01 * sum(0.98**t for t in range(60))
    assert expected == pytest.approx(0.5 * (1 - 0.98**60))
    for r, run in zip(rows, runs, strict=True):
        assert r == {"episode": 7, "agent": "stub", "beta": 1.0, "seed": run.seed, "success": False,
                     "return": pytest.approx(expected, rel=1e-12)}  # fmt: skip
    assert round(expected, 3) == 0.351
    # on the trap grid the same step ends the episode with 0.2
    (trap,) = agents.fixed_policy_rows(grid(trap=True), 1, runs[:1], episode=1)
    assert trap["return"] == pytest.approx(0.2) and not trap["success"]


@pytest.mark.parametrize("trap", [False, True], ids=["grid", "grid-trap"])
def test_cells_round_trip(trap):
    m = grid(trap=trap, horizon=45, gamma=0.95)
    table = cells(m)
    assert len(table) == 121 and table.kind.value_counts().to_dict() == {
        "floor": 118, "start": 1, "goal": 1, ("trap" if trap else "distractor"): 1}  # fmt: skip
    side = table[table.kind == ("trap" if trap else "distractor")].iloc[0]
    assert (side.x, side.y, side.reward, side.terminal) == (5, 0, 0.2 if trap else 0.01, trap)
    back = from_cells(table, 45, 0.95)
    assert back.name == m.name and (back.horizon, back.gamma) == (45, 0.95)
    for field in ("next", "prob", "reward", "terminal", "success", "start"):
        assert np.array_equal(getattr(back, field), getattr(m, field)), field
    moved = grid(start=(2, 3), goal=(0, 10), distractor=(9, 9), distractor_reward=0.05)
    again = from_cells(cells(moved), 60, 0.98)
    for field in ("next", "reward", "terminal", "success", "start"):
        assert np.array_equal(getattr(again, field), getattr(moved, field)), field


# ------------------------------------------------------------------------------- determinism, the batch
def test_same_master_same_rows_other_master_other_rows():
    m = grid()
    runs = [Run(a, b, s) for a in ("hyper", "decouple", "curiosity") for b in (1.0, 10.0) for s in range(2)]
    one = sweep(m, runs, episodes=12, every=4, master=5)
    assert one == sweep(m, runs, episodes=12, every=4, master=5)
    assert len(one) == 3 * len(runs)
    assert one != sweep(m, runs, episodes=12, every=4, master=6)


def test_a_runs_tables_do_not_depend_on_the_rest_of_the_batch(monkeypatch):
    seen = _capture(monkeypatch)
    m = grid()
    a = Run("hyper", 1.0, 0)
    sweep(m, [a], episodes=8, every=4)
    sweep(m, [Run("decouple", 1.0, 0), a, Run("curiosity", 10.0, 3)], episodes=8, every=4)
    alone, shared = seen[:2], seen[2:]
    for x, y in zip(alone, shared, strict=True):
        assert np.array_equal(x[0], y[1])
    assert np.abs(alone[-1][0]).sum() > 0


def test_a_runs_rows_do_not_depend_on_the_rest_of_the_batch():
    m = grid()
    a = Run("hyper", 1.0, 0)
    alone = sweep(m, [a], episodes=5, every=1)
    shared = [r for r in sweep(m, [a, Run("decouple", 1.0, 0)], episodes=5, every=1) if r["agent"] == "hyper"]
    assert alone == shared


# ---------------------------------------------------------------------------------------- gymnasium
def test_frozenlake_without_slipping():
    m = mdp.from_gymnasium("FrozenLake-v1")
    assert (m.states, m.actions, m.next.shape[2], m.horizon) == (16, 4, 1, 100)
    assert (m.prob == 1).all() and m.start[0] == 1.0
    # only the step from 14 to the goal (15) by "right" succeeds; the holes end episodes worth nothing
    assert np.argwhere(m.success).tolist() == [[14, 2, 0]]
    holes = {5, 7, 11, 12}
    into_hole = np.isin(m.next, list(holes))
    assert m.terminal[into_hole].all() and (m.reward[into_hole] == 0).all() and not m.success[into_hole].any()
    assert m.next[4, 1, 0] == 8 and m.next[0, 0, 0] == 0  # down from 4; left at the wall stays
    # down, down, right, down, right, right: 6 steps, the +1 discounted by 0.98^5
    q = np.zeros((1, 16, 4))
    for s, a in {0: 1, 4: 1, 8: 2, 9: 1, 13: 2, 14: 2}.items():
        q[0, s, a] = 1.0
    succ, ret = agents.evaluate(m, q)
    assert succ[0] and ret[0] == pytest.approx(0.98**5)


def test_cliffwalking_and_taxi_build():
    cliff = mdp.make("CliffWalking-v1")
    assert (cliff.states, cliff.actions) == (48, 4) and cliff.start[36] == 1.0
    assert set(cliff.next[cliff.success].tolist()) == {47}
    taxi = mdp.make("Taxi-v4")
    assert (taxi.states, taxi.actions, taxi.horizon) == (500, 6, 200)
    assert math.isclose(taxi.start.sum(), 1.0) and (taxi.start > 0).sum() == 300
    assert taxi.success.sum() == 4 and (taxi.reward[taxi.success] == 20).all()
    assert (np.argwhere(taxi.success)[:, 1] == 5).all()  # drop-off


@pytest.mark.parametrize(
    ("env_id", "match"),
    [("Nope-v0", r"unknown environment 'Nope-v0'"), ("CartPole-v1", r"CartPole-v1: needs Discrete")],
)
def test_unknown_or_non_discrete_environments_raise_naming_them(env_id, match):
    with pytest.raises(ValueError, match=match):
        mdp.make(env_id)


def test_runs_of_and_parse():
    runs = agents.runs_of(["hyper", "baseline", "decouple:bonus_in_mu"], [1.0, 10.0], 2)
    assert [(r.agent, r.beta, r.seed) for r in runs] == [
        ("hyper", 1.0, 0), ("hyper", 1.0, 1), ("hyper", 10.0, 0), ("hyper", 10.0, 1),
        ("baseline", 0.0, 0), ("baseline", 0.0, 1),
        ("decouple:bonus_in_mu", 1.0, 0), ("decouple:bonus_in_mu", 1.0, 1),
        ("decouple:bonus_in_mu", 10.0, 0), ("decouple:bonus_in_mu", 10.0, 1),
    ]  # fmt: skip
    assert agents.parse("hyper:eval_pi") == ("hyper", "eval_pi") and agents.parse("hyper") == ("hyper", None)
    for bad in ("random", "hyper:nope"):
        with pytest.raises(ValueError, match=repr(bad)):
            agents.parse(bad)


# ---------------------------------------------------------------------------------------------- claims
def _table(rows: dict[str, dict[float, tuple[float, float]]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"agent": a, "beta": b, "success": s, "return": r}
            for a, v in rows.items()
            for b, (s, r) in v.items()
        ]
    )


def test_claims_take_the_worst_case_over_the_named_betas():
    from models.hyper.evaluation import claims

    t = _table(
        {
            "curiosity": {0.01: (0.9, 0.7), 1.0: (0.0, 0.3), 10.0: (0.2, 0.4), 100.0: (0.1, 0.3)},
            "hyper": {
                0.01: (0.0, 0.35),
                0.1: (0.1, 0.36),
                1.0: (0.9, 0.7),
                10.0: (0.8, 0.75),
                100.0: (1.0, 0.6),
            },
            "decouple": {
                0.01: (0.0, 0.35),
                0.1: (0.6, 0.5),
                1.0: (1.0, 0.77),
                10.0: (0.8, 0.7),
                100.0: (0.9, 0.7),
            },
        }
    )
    c = claims(t)
    assert (c["curiosity_max_success_large"], c["curiosity_at"]) == (0.2, 10.0)  # beta 0.01's 0.9 not named
    assert (c["hyper_min_success_large"], c["hyper_success_at"]) == (0.8, 10.0)  # beta 0.01's 0 not named
    assert (c["hyper_min_return_large"], c["hyper_return_at"]) == (0.6, 100.0)
    # hyper - decouple over every beta both ran: 0, -0.5, -0.1, 0, 0.1
    assert c["hyper_minus_decouple_min"] == pytest.approx(-0.5) and c["hyper_minus_decouple_at"] == 0.1
    c = claims(t, large=(0.01,))
    assert c["curiosity_max_success_large"] == 0.9 and c["hyper_min_success_large"] == 0.0


def test_claims_are_nan_when_an_agent_is_absent():
    from models.hyper.evaluation import claims

    t = _table({"hyper": {1.0: (1.0, 0.77), 10.0: (0.5, 0.6)}})
    c = claims(t)
    assert math.isnan(c["curiosity_max_success_large"]) and math.isnan(c["curiosity_at"])
    assert math.isnan(c["hyper_minus_decouple_min"]) and math.isnan(c["hyper_minus_decouple_at"])
    assert c["hyper_min_success_large"] == 0.5 and c["hyper_min_return_large"] == 0.6
    c = claims(_table({"curiosity": {1.0: (0.0, 0.3)}, "decouple": {1.0: (1.0, 0.77)}}))
    assert math.isnan(c["hyper_min_success_large"]) and math.isnan(c["hyper_min_return_large"])
    assert math.isnan(c["hyper_minus_decouple_min"]) and c["curiosity_max_success_large"] == 0.0
