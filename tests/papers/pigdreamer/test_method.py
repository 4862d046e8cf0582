"""The agents' own properties: GAE and the Lagrange step against hand values, the Monte-Carlo targets and the
normalised error, sampling, the actor's blindness to the map, the critics' use of it, and stacking (an agent
trained in a stack is the agent trained alone)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import lazy

agent = lazy("models.pigdreamer.agent")  # imports torch: not while collecting
ppo = lazy("models.pigdreamer.ppo")
SMALL = {"envs": 8, "rollout": 40, "epochs": 1, "minibatches": 2}


def test_gae_against_hand_values():
    # one environment, three steps, the episode ends after the second: V = (1, 2, 3), bootstrap 4
    v = np.array([[1.0], [2.0], [3.0]])
    r = np.array([[1.0], [0.0], [2.0]])
    d = np.array([[0.0], [1.0], [0.0]])
    g, lam = 0.5, 0.5
    adv, ret = agent.gae(v, r, d, np.array([4.0]), g, lam)
    a2 = 2.0 + g * 4.0 - 3.0  # 1.0
    a1 = 0.0 - 2.0  # terminal: no bootstrap, no carry
    a0 = (1.0 + g * 2.0 - 1.0) + g * lam * a1  # 1.0 - 0.5
    assert adv[:, 0] == pytest.approx([a0, a1, a2])
    assert ret[:, 0] == pytest.approx([a0 + 1, a1 + 2, a2 + 3])


def test_lagrange_step_moves_on_the_excess_cost_and_stays_non_negative():
    lam = agent.lagrange_step(np.array([0.0, 1.0, 0.05]), np.array([1.5, 0.5, 0.0]), 0.5, 0.1)
    assert lam == pytest.approx([0.1, 1.0, 0.0])


def test_discounted_to_go_stops_at_the_episode_end():
    x = np.array([[1.0], [0.0], [1.0], [5.0]])
    live = np.array([[True], [True], [True], [False]])
    assert ppo.discounted_to_go(x, live, 0.5)[:, 0] == pytest.approx([1.25, 0.5, 1.0, 0.0])


def test_normalised_error_is_zero_for_the_target_and_one_for_its_mean():
    g = np.random.default_rng(0)
    target = g.random((20, 1, 30))
    live = np.ones_like(target, bool)
    assert ppo.normalised_error(target, target, live)[0] == pytest.approx(0.0)
    assert ppo.normalised_error(np.full_like(target, target.mean()), target, live)[0] == pytest.approx(1.0)


def test_sampling_follows_the_softmax():
    import torch

    logits = torch.log(torch.tensor([[[0.1, 0.2, 0.3, 0.4]] * 20_000]))
    a = agent.sample(logits, [np.random.default_rng(0)])
    assert np.bincount(a[0], minlength=4) / a.size == pytest.approx([0.1, 0.2, 0.3, 0.4], abs=0.01)


def _net(*specs: agent.AgentSpec) -> agent.StackedAgents:
    return agent.StackedAgents(list(specs), 13, 169, 16, 1.0)


def _inputs(T: int = 5, n: int = 3, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    obs, priv = torch.rand(T, 1, n, 13, generator=g), torch.rand(T, 1, n, 169, generator=g)
    prev = torch.randint(0, 4, (T, 1, n), generator=g)
    first = torch.zeros(T, 1, n, dtype=torch.bool)
    first[0] = True
    return obs, priv, prev, first


def test_the_actor_never_sees_the_map_and_only_privileged_critics_do():
    import torch

    obs, priv, prev, first = _inputs()
    other = torch.rand_like(priv)
    for variant, critic_sees in (("A", False), ("B", True), ("C", True), ("U", False)):
        net = _net(agent.AgentSpec(variant, 0))
        outs = []
        for p in (priv, other):
            hs, _ = net.encode(obs, p, prev, first, net.initial_state(3))
            outs.append(net.heads(hs, obs, p))
        assert torch.equal(outs[0]["logits"], outs[1]["logits"]), variant
        assert torch.equal(outs[0]["v_c"], outs[1]["v_c"]) != critic_sees, variant
    leaky = _net(agent.AgentSpec("C", 0, actor_map=True))  # the stub: its encoder reads the map
    hs = [leaky.encode(obs, p, prev, first, leaky.initial_state(3))[0] for p in (priv, other)]
    assert not torch.equal(leaky.heads(hs[0], obs, priv)["logits"], leaky.heads(hs[1], obs, other)["logits"])


def test_an_episode_start_resets_the_history():
    import torch

    net = _net(agent.AgentSpec("A", 0))
    obs, priv, prev, first = _inputs(T=4)
    first[2] = True  # a new episode at step 2: steps 2-3 must not depend on steps 0-1
    a, _ = net.encode(obs, priv, prev, first, net.initial_state(3))
    obs2 = obs.clone()
    obs2[:2] = torch.rand_like(obs2[:2])
    b, _ = net.encode(obs2, priv, prev, first, torch.rand(1, 3, 16))
    assert torch.allclose(a[2:], b[2:])
    assert not torch.allclose(a[:2], b[:2])


def test_an_agent_trained_in_a_stack_is_the_agent_trained_alone():
    import torch

    alone = ppo.train([agent.AgentSpec("C", 4)], 2, agent.EnvConfig(), agent.PPOConfig(**SMALL))
    stack = ppo.train(
        [agent.AgentSpec("A", 9), agent.AgentSpec("C", 4), agent.AgentSpec("B", 1)],
        2,
        agent.EnvConfig(),
        agent.PPOConfig(**SMALL),
    )
    for name, t in alone.net.state_dict().items():
        assert torch.allclose(t[0], stack.net.state_dict()[name][1], atol=1e-5), name
    assert alone.history[-1]["cost"][0] == pytest.approx(stack.history[-1]["cost"][1])


def test_the_lagrange_multiplier_rises_while_the_cost_is_over_the_limit_and_n_holds_it_at_zero():
    m = ppo.train(
        [agent.AgentSpec("C", 0), agent.AgentSpec("N", 0)], 3, agent.EnvConfig(), agent.PPOConfig(**SMALL)
    )  # an untrained policy's cost is ~5
    lam = np.array([h["lambda"] for h in m.history])
    assert (np.diff(lam[:, 0]) > 0).all() and lam[-1, 0] > 0
    assert (lam[:, 1] == 0).all()


def test_evaluation_counts_each_episode_once_and_matches_hand_sums():
    net = _net(agent.AgentSpec("A", 0))
    res = ppo.evaluate(net, agent.EnvConfig(), 50, 3, 0.99, leak_states=100)
    assert 0.0 <= res["success"][0] <= 1.0 and res["cost"][0] >= 0
    assert 1.0 <= res["length"][0] <= 40.0
    # an episode's return is +1 at the goal (if reached) minus 0.01 a step
    assert res["return"][0] == pytest.approx(res["success"][0] - 0.01 * res["length"][0], abs=1e-6)
    assert res["leak"][0] == 0.0
