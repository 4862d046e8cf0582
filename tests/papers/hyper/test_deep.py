"""hyper, the deep variant (models/hyper/deep.py): the batched ensemble against a plain per-run MLP and the one-hot
shortcut against the matrix product; Welford's running std against NumPy; the TD targets (no bonus in Q_mu's,
beta e / sigma in Q_pi's, none past a terminal); one run's data never reaching another run's gradients; h per
agent; Q_mu acting for t < h and Q_pi after; which network the greedy evaluation reads; determinism and
independence of the batch; bad configurations. torch is imported inside the tests only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.hyper.agents import Run, runs_of
from models.hyper.mdp import grid

DISTRACTOR = 0.01 * (1 - 0.98**60) / (1 - 0.98)  # 0.351: step down onto the distractor and stay


def _module(agents=("hyper", "decouple", "curiosity", "baseline"), betas=(1.0,), seeds=1, mdp=None, **kw):
    from models.hyper.deep import DeepConfig, DeepSweep

    cfg = DeepConfig(**{"steps": 64, "every": 64, "warmup": 8, "hidden": 8, "rnd_dim": 4, "batch": 8, **kw})
    runs = runs_of(list(agents), list(betas), seeds) if isinstance(agents, tuple) else agents
    return DeepSweep(mdp or grid(), runs, cfg)


def _prefer(m, pi_action: int, mu_action: int) -> None:
    """Make every run's Q_pi prefer ``pi_action`` and Q_mu ``mu_action`` everywhere (last layer: zero weights,
    a bias of 10 on the preferred action)."""
    import torch

    R = len(m.runs)
    with torch.no_grad():
        m.q.weights[-1].zero_()
        m.q.biases[-1].zero_()
        m.q.biases[-1][:R, 0, pi_action] = 10.0
        m.q.biases[-1][R:, 0, mu_action] = 10.0


def _fill(m, seed: int = 0) -> None:
    """Random transitions in every run's replay buffer (and the bonus statistics updated from them)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    R, n, S, A = len(m.runs), m.cfg.steps, m.mdp.states, m.mdp.actions
    m.buf_s[:] = torch.randint(0, S, (R, n), generator=g)
    m.buf_a[:] = torch.randint(0, A, (R, n), generator=g)
    m.buf_r[:] = torch.rand(R, n, generator=g)
    m.buf_s2[:] = torch.randint(0, S, (R, n), generator=g)
    m.buf_done[:] = (torch.rand(R, n, generator=g) < 0.2).float()
    m.buf_e[:] = torch.rand(R, n, generator=g) * 3
    for k in range(n):
        m.stats.update(m.buf_e[:, k])


# ------------------------------------------------------------------------------------------- the networks
def test_ensemble_slice_is_a_plain_mlp_and_the_one_hot_shortcut_is_the_product():
    import torch

    from models.hyper.deep import Ensemble

    gens = lambda: [torch.Generator().manual_seed(s) for s in (3, 4, 5)]  # noqa: E731
    dense, index = Ensemble([7, 5, 2], gens()), Ensemble([7, 5, 2], gens(), index=True)
    for a, b in zip(dense.parameters(), index.parameters(), strict=True):
        assert torch.equal(a, b)
    s = torch.tensor([[0, 6, 3], [1, 1, 2], [5, 4, 0]])
    x = torch.eye(7)[s]
    torch.testing.assert_close(index(s), dense(x))
    for r in range(3):  # run r is nn.Linear -> ReLU -> nn.Linear with the r-th slices
        w1, b1, w2, b2 = dense.weights[0][r], dense.biases[0][r], dense.weights[1][r], dense.biases[1][r]
        plain = torch.relu(x[r] @ w1 + b1) @ w2 + b2
        torch.testing.assert_close(dense(x)[r], plain)
        assert float(w1.detach().abs().max()) <= 1 / math.sqrt(7)


def test_running_std_is_numpys_sample_std_per_run():
    import torch

    from models.hyper.deep import RunningStd

    x = np.random.default_rng(0).gamma(2.0, size=(50, 3)) * np.array([1.0, 10.0, 0.1])
    stats = RunningStd(3)
    assert torch.equal(stats.std, torch.ones(3))  # nothing seen: divide by one
    for row in x:
        stats.update(torch.as_tensor(row, dtype=torch.float32))
    np.testing.assert_allclose(stats.std.numpy(), x.astype(np.float32).std(0, ddof=1), rtol=1e-5)


def test_observations_one_hot_and_grid_coordinates():
    from models.hyper.deep import observations
    from models.hyper.mdp import from_gymnasium

    g = grid()
    assert observations(g).shape == (121, 121)
    xy = observations(g, "xy").numpy()
    assert xy.shape == (121, 2) and xy.min() == 0.0 and xy.max() == 1.0
    np.testing.assert_allclose(xy[5 * 11 + 1], [0.5, 0.1])  # the start (5, 1)
    with pytest.raises(ValueError, match="square grid"):
        observations(from_gymnasium("Taxi-v4"), "xy")


# ------------------------------------------------------------------------------------------- the targets
def test_q_mu_target_has_no_bonus_and_q_pi_target_adds_beta_e_over_sigma():
    import torch

    m = _module(betas=(3.0,))
    _fill(m)
    R = len(m.runs)
    with torch.no_grad():  # the same target network for both learners: their targets differ by the bonus only
        for w in (*m.q_target.weights, *m.q_target.biases):
            w[R:] = w[:R]
    i = torch.arange(16).expand(R, 16)
    r, s2, done, e = (b.gather(1, i) for b in (m.buf_r, m.buf_s2, m.buf_done, m.buf_e))
    y_pi, y_mu = m.targets(r, s2, done, e)
    beta = torch.tensor([0.0 if x.agent == "baseline" else 3.0 for x in m.runs])[:, None]
    torch.testing.assert_close(y_pi - y_mu, beta * e / m.stats.std[:, None])
    _, next_mu = m.q_values(s2, target=True)
    torch.testing.assert_close(y_mu, r + 0.98 * (1 - done) * next_mu.amax(-1))
    terminal = done.bool()
    assert terminal.any()
    torch.testing.assert_close(y_mu[terminal], r[terminal])  # no bootstrap past a terminal transition


def test_one_runs_data_never_reaches_another_runs_gradients():
    import torch

    def grads(m) -> list[torch.Tensor]:
        m.zero_grad()
        m.loss(m.cfg.steps - 1, u).backward()
        return [p.grad.clone() for p in (*m.q.parameters(), *m.rnd_pred.parameters())]

    u = torch.rand(4, 8, generator=torch.Generator().manual_seed(2))
    a, b = _module(), _module()
    _fill(a), _fill(b)
    b.buf_r[1] += 5.0  # run 1 (decouple) sees other rewards
    b.buf_s2[1] = (b.buf_s2[1] + 1) % 121
    ga, gb = grads(a), grads(b)
    R = 4
    for x, y in zip(ga, gb, strict=True):
        rows = [0, 2, 3] if len(x) == R else [0, 2, 3, R, R + 2, R + 3]  # q holds Q_pi then Q_mu
        torch.testing.assert_close(x[rows], y[rows], rtol=0, atol=0)
    assert not torch.equal(ga[-1][1], gb[-1][1])  # run 1's own gradients did move


# ------------------------------------------------------------------------------------------- acting
@pytest.mark.parametrize("p_rep", [1.0, 0.0])
def test_h_per_agent(p_rep):
    import torch

    m = _module(p_rep=p_rep)  # hyper, decouple, curiosity, baseline
    geo = torch.tensor([7, 7, 7, 7])
    h = m._h(torch.tensor([0.5, 0.5, 0.5, 0.5], dtype=torch.float64), geo).tolist()
    assert h == [7 if p_rep == 1 else 0, 0, 0, 60]
    assert m._h(torch.zeros(4, dtype=torch.float64), torch.tensor([500] * 4)).tolist()[0] == (
        60 if p_rep else 0
    )


def test_q_mu_acts_for_t_below_h_and_q_pi_after(monkeypatch):
    import torch

    m = _module(epsilon=0.0, warmup=0)
    _prefer(m, pi_action=0, mu_action=3)  # Q_pi: up, Q_mu: right
    monkeypatch.setattr(m, "_update", lambda k, u: 0.0)  # acting only
    m.on_train_start()
    m._state["h"] = torch.tensor([2, 0, 0, 60])
    for k in range(4):
        m.training_step(torch.tensor(k), k)
    acts = m.buf_a[:, :4].tolist()
    assert acts[0] == [3, 3, 0, 0]  # hyper: Q_mu for t < 2, then Q_pi
    assert acts[1] == acts[2] == [0, 0, 0, 0]  # decouple and curiosity: Q_pi acts
    assert acts[3] == [3, 3, 3, 3]  # the baseline: Q_mu acts
    assert m.buf_s2[0, :4].tolist() == [6 * 11 + 1, 7 * 11 + 1, 7 * 11 + 2, 7 * 11 + 3]


def test_greedy_evaluation_reads_q_pi_for_curiosity_and_q_mu_otherwise():
    m = _module()
    # Q_pi: right (walks into the east wall); Q_mu: down onto the distractor
    _prefer(m, pi_action=3, mu_action=1)
    succ, ret = m.greedy_episode()
    assert not succ.any()
    np.testing.assert_allclose(ret, [DISTRACTOR, DISTRACTOR, 0.0, DISTRACTOR], rtol=1e-6)


# ------------------------------------------------------------------------------------------- whole runs
def _train(runs, master=0, **kw):
    from icml25.training import make_trainer
    from models.hyper.deep import DeepConfig, DeepSweep

    cfg = DeepConfig(**{"steps": 40, "every": 20, "warmup": 10, "hidden": 8, "rnd_dim": 4, "batch": 8, **kw})
    m = DeepSweep(grid(), runs, cfg, master)
    make_trainer(max_steps=-1, seed=master, max_epochs=1).fit(m)
    return m


def test_same_master_same_weights_and_rows_and_a_run_does_not_depend_on_the_batch():
    import torch

    one = [Run("hyper", 1.0, 0)]
    many = [Run("hyper", 1.0, 0), Run("decouple", 10.0, 1), Run("curiosity", 0.1, 2)]
    a, b, c = _train(many), _train(many), _train(one)
    for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.equal(x, y)
    assert a.rows == b.rows and len(a.rows) == 6 and {r["step"] for r in a.rows} == {20, 40}
    assert a.buf_a[0].tolist() == c.buf_a[0].tolist()  # run 0 alone takes the same actions
    torch.testing.assert_close(a.q.weights[0][0], c.q.weights[0][0], rtol=1e-5, atol=1e-6)
    other = _train(many, master=1)
    assert not torch.equal(other.q.weights[0], a.q.weights[0])


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"obs": "pixels"}, "obs = 'pixels'"),
        ({"steps": 0}, "steps = 0"),
        ({"p": 0.0}, "p in"),
    ],
)
def test_bad_configurations_raise_naming_the_value(kw, match):
    from models.hyper.deep import DeepConfig

    with pytest.raises(ValueError, match=match):
        DeepConfig(**kw)


def test_broken_variants_are_refused():
    from models.hyper.deep import DeepConfig, deep_sweep

    with pytest.raises(ValueError, match="hyper:eval_pi"):
        deep_sweep(grid(), [Run("hyper:eval_pi", 1.0, 0)], DeepConfig(steps=4))
