"""pigdreamer (work in progress): the HiddenHazard environment and Theorem 3.3's tabular check."""

from __future__ import annotations

import numpy as np
import pytest


def test_tiger_hand_values_and_the_privileged_bound():
    from models.pigdreamer.pomdp import mdp_values, pomdp_value, tiger

    t, o, r = tiger()
    b = np.array([0.5, 0.5])
    assert pomdp_value(b, t, o, r, 1) == pytest.approx(-1.0)  # listen beats opening (-45)
    assert pomdp_value(b, t, o, r, 2) == pytest.approx(-2.0)  # after one listen, opening is still -6.5
    assert b @ mdp_values(t, r, 1) == pytest.approx(10.0)  # knowing the tiger, open the other door
    for h in (1, 2, 3, 4):
        assert b @ mdp_values(t, r, h) >= pomdp_value(b, t, o, r, h)


def test_the_privileged_value_bounds_the_pomdp_value_on_random_problems():
    from models.pigdreamer.pomdp import mdp_values, pomdp_value, random_pomdp

    g = np.random.default_rng(0)
    gaps = []
    for _ in range(200):
        t, o, r, b = random_pomdp(g)
        gaps.append(b @ mdp_values(t, r, 4) - pomdp_value(b, t, o, r, 4))
    assert min(gaps) >= -1e-12 and max(gaps) > 0.05  # the bound holds, and is strict on some problems


def test_fully_observed_problems_close_the_gap():
    from models.pigdreamer.pomdp import mdp_values, pomdp_value, random_pomdp

    g = np.random.default_rng(1)
    t, _, r, b = random_pomdp(g, states=3, actions=2, observations=3)
    o = np.broadcast_to(np.eye(3), (2, 3, 3))  # the observation is the state
    b = np.eye(3)[1]
    assert pomdp_value(b, t, o, r, 3) == pytest.approx(b @ mdp_values(t, r, 3))


def test_cost_only_on_hazards_and_the_episode_ends_at_the_goal():
    from models.pigdreamer.env import MOVES, HiddenHazard

    env = HiddenHazard(n=64, seed=3)
    env.reset()
    for _ in range(200):
        before_map = env.map.copy()
        a = env.g.integers(0, 4, env.n)
        target = np.clip(env.pos + MOVES[a], 0, env.size - 1)
        s = env.step(a)
        on = before_map[np.arange(env.n), target[:, 0], target[:, 1]]
        assert (s.cost == on).all()
    env = HiddenHazard(n=1, size=3, hazards=0, seed=0)
    env.reset()
    env.pos[:] = env.goal - np.array([0, 1])
    s = env.step(np.array([3]))  # right, onto the goal
    assert s.done[0] and s.reward[0] == pytest.approx(1 - 0.01) and s.cost[0] == 0


def test_the_window_hides_hazards_at_the_given_rate():
    from models.pigdreamer.env import HiddenHazard

    env = HiddenHazard(n=2000, hazards=20, visibility=0.25, frame="grid", seed=1)
    obs, priv = env.reset()
    padded = np.pad(env.map, ((0, 0), (1, 1), (1, 1)))
    r, c = env.pos[:, 0], env.pos[:, 1]
    true = np.stack([padded[i, r[i] : r[i] + 3, c[i] : c[i] + 3].reshape(9) for i in range(env.n)])
    shown = obs[:, 4:]
    assert not (shown.astype(bool) & ~true).any()  # never shows a hazard that is not there
    assert shown.sum() / true.sum() == pytest.approx(0.25, abs=0.03)
    assert (priv.reshape(env.n, env.size, env.size) == env.map).all()


def test_the_egocentric_map_is_the_map_shifted_to_the_agent():
    from models.pigdreamer.env import HiddenHazard

    env = HiddenHazard(n=50, hazards=8, seed=2)
    _, ego = env.reset()
    s = env.size
    ego = ego.reshape(env.n, 2 * s - 1, 2 * s - 1)
    for i in range(env.n):
        r, c = env.pos[i]
        for rr in range(s):
            for cc in range(s):  # grid cell (rr, cc) sits at offset (rr - r, cc - c) from the centre
                assert ego[i, s - 1 + rr - r, s - 1 + cc - c] == env.map[i, rr, cc]
        assert ego[i].sum() == env.map[i].sum()  # nothing else is set


def test_seeding_and_bad_settings():
    from models.pigdreamer.env import HiddenHazard

    a, b = HiddenHazard(n=8, seed=5), HiddenHazard(n=8, seed=5)
    assert all((x == y).all() for x, y in zip(a.reset(), b.reset(), strict=True))
    for kw in ({"visibility": 1.5}, {"hazards": 48}, {"size": 2}, {"horizon": 0}, {"frame": "polar"}):
        with pytest.raises(ValueError):
            HiddenHazard(**kw)
