"""GHOST's algorithmic pieces: the partition, GCN propagation, the FGW term, the criterion and retention.

torch and the models that import it are imported inside the tests (collection imports neither torch nor
Lightning)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models.ghost.config import GhostConfig


@pytest.fixture(scope="module")
def sbm():
    from models.ghost.graph import make_sbm

    return make_sbm(400, 4, 16, 0.05, 0.005, 1.0, seed=3)


def test_every_node_in_exactly_one_client_and_least_samples_holds(sbm):
    from models.ghost.partition import dirichlet_partition

    y = sbm.y.numpy()
    for seed in range(5):
        parts = dirichlet_partition(y, 10, 0.05, 5, np.random.default_rng(seed))
        everything = np.concatenate(parts)
        assert sorted(everything.tolist()) == list(range(len(y)))  # a partition: no node twice, none lost
        assert min(len(p) for p in parts) >= 5


def label_entropy(y, parts):
    """Mean over clients of the entropy (nats) of the client's label distribution."""
    out = []
    for p in parts:
        f = np.bincount(y[p], minlength=y.max() + 1) / len(p)
        f = f[f > 0]
        out.append(-(f * np.log(f)).sum())
    return float(np.mean(out))


def test_label_skew_grows_as_alpha_shrinks(sbm):
    from models.ghost.partition import dirichlet_partition

    y = sbm.y.numpy()
    ent = {
        a: np.mean(
            [label_entropy(y, dirichlet_partition(y, 10, a, 5, np.random.default_rng(s))) for s in range(6)]
        )
        for a in (0.05, 1.0, 100.0)
    }
    assert ent[0.05] < ent[1.0] < ent[100.0]
    assert ent[100.0] > 0.9 * np.log(4)  # nearly IID: every client sees every class about equally
    assert ent[0.05] < 0.5 * np.log(4)


def test_impossible_partition_raises_naming_the_numbers(sbm):
    from models.ghost.partition import PartitionError, dirichlet_partition

    with pytest.raises(PartitionError, match="10 clients x 50 nodes each exceeds the 400 nodes"):
        dirichlet_partition(sbm.y.numpy(), 10, 0.05, 50, np.random.default_rng(0))
    with pytest.raises(PartitionError, match="alpha=0.001"):
        dirichlet_partition(sbm.y.numpy(), 10, 0.001, 39, np.random.default_rng(0), max_tries=3)


def test_split_sizes_follow_the_official_rounding():
    from models.ghost.partition import split_nodes

    labels = split_nodes(17, (0.2, 0.4, 0.4), np.random.default_rng(0))
    assert np.bincount(labels, minlength=3).tolist() == [3, 6, 8]  # int(3.4), int(6.8), the rest


def test_server_test_graph_keeps_cross_client_edges_the_clients_lose(sbm):
    from models.ghost import api
    from models.ghost.partition import make_partition

    fed = api.federate(sbm, make_partition(sbm, 10, 0.05, 5, seed=1))
    owner = fed.partition.client
    e = sbm.edge_index.numpy()
    cross = owner[e[0]] != owner[e[1]]
    assert sum(c.graph.edge_index.shape[1] for c in fed.clients) == int((~cross).sum())
    t = fed.test_nodes.numpy()
    te = fed.test_graph.edge_index.numpy()
    assert (owner[t[te[0]]] != owner[t[te[1]]]).any()
    assert fed.test_graph.num_nodes == int((fed.partition.split == 2).sum())


def test_gcn_propagation_equals_pyg_gcnconv():
    import torch
    from torch_geometric.nn import GCNConv

    from models.ghost.graph import make_graph, normalized_adjacency
    from models.ghost.nets import GCNLayer

    torch.manual_seed(0)
    g = make_graph(
        torch.tensor([[0, 1, 1, 2, 3, 4, 0], [1, 2, 3, 3, 4, 0, 2]]), torch.randn(6, 5), torch.zeros(6)
    )
    ours = GCNLayer(5, 3)
    with torch.no_grad():
        ours.bias.normal_()
    ref = GCNConv(5, 3)
    ref.lin.weight.data.copy_(ours.lin.weight.data)
    ref.bias.data.copy_(ours.bias.data)
    a_hat = normalized_adjacency(g.edge_index, g.num_nodes)
    torch.testing.assert_close(ours(g.x, a_hat), ref(g.x, g.edge_index), rtol=1e-5, atol=1e-6)
    dense = a_hat.to_dense()
    torch.testing.assert_close(dense, dense.T)  # D^-1/2 (A + I) D^-1/2 is symmetric
    assert dense[5, 5] == 1.0  # the isolated node keeps only its self-loop


def test_fgw_gradient_reaches_only_the_generated_features_and_is_the_envelope_one():
    import ot
    import torch

    from models.ghost.losses import fgw_loss

    torch.manual_seed(0)
    n, m, d = 6, 5, 4
    c1 = (torch.rand(n, n) < 0.4).float()
    c1 = ((c1 + c1.T) > 0).float().requires_grad_(True)
    c2 = torch.eye(m).requires_grad_(True)
    x_real = torch.randn(n, d, requires_grad=True)
    x_gen = torch.randn(m, d, requires_grad=True)
    fgw_loss(c1, c2, x_real, x_gen, alpha=0.5).backward()
    assert x_real.grad is None and c1.grad is None and c2.grad is None
    assert x_gen.grad is not None and x_gen.grad.abs().sum() > 0
    # dL/dx_hat_j = (1 - alpha) sum_i T_ij 2 (x_hat_j - x_i), T the optimal plan
    M = (torch.cdist(x_real.detach().double(), x_gen.detach().double()) ** 2).numpy()
    T = ot.gromov.fused_gromov_wasserstein(
        M,
        c1.detach().double().numpy(),
        c2.detach().double().numpy(),
        np.full(n, 1 / n),
        np.full(m, 1 / m),
        loss_fun="square_loss",
        alpha=0.5,
    )
    T = torch.as_tensor(T, dtype=torch.float32)
    expected = 0.5 * 2 * (T.sum(0)[:, None] * x_gen.detach() - T.T @ x_real.detach())
    torch.testing.assert_close(x_gen.grad, expected, rtol=1e-4, atol=1e-5)


def test_fgw_of_a_graph_with_itself_is_zero():
    import torch

    from models.ghost.losses import fgw_loss

    torch.manual_seed(1)
    c = (torch.rand(7, 7) < 0.5).float()
    c = ((c + c.T) > 0).float()
    x = torch.randn(7, 3)
    assert float(fgw_loss(c, c, x, x.clone())) == pytest.approx(0.0, abs=1e-8)
    assert float(fgw_loss(c, torch.eye(7), x, x + 1.0)) > 0.0


def test_retention_penalty_is_zero_at_the_snapshot_and_positive_away():
    import torch

    from models.ghost.losses import retention_penalty
    from models.ghost.nets import GCN

    torch.manual_seed(0)
    model = GCN(4, 3, 2)
    snap = {n: p.detach().clone() for n, p in model.named_parameters()}
    omega = {n: torch.randn_like(p) for n, p in model.named_parameters()}
    assert retention_penalty(model, [omega], [snap]).item() == 0.0
    with torch.no_grad():
        model.conv1.bias.add_(0.5)
    expected = float((omega["conv1.bias"].abs() * 0.25).sum())
    assert retention_penalty(model, [omega], [snap]).detach().item() == pytest.approx(expected, rel=1e-6)
    assert float(retention_penalty(model, [], [])) == 0.0


def test_vectorised_criterion_equals_the_edge_loop():
    import torch

    from models.ghost.graph import knn_graph, normalized_adjacency
    from models.ghost.losses import criterion, topology_loss
    from models.ghost.nets import GCN

    torch.manual_seed(0)
    x = torch.randn(8, 5)
    edges = knn_graph(x, k=3)
    model = GCN(5, 4, 3)
    a_hat = normalized_adjacency(edges, 8)
    loops = torch.arange(8)
    all_edges = torch.cat([edges, torch.stack([loops, loops])], dim=1)
    w = torch.ones(all_edges.shape[1])
    h = torch.relu(model.conv1(x, a_hat))
    W = model.conv1.lin.weight
    loop = sum(((h[i] @ W) @ torch.tanh(h[j] @ W)) ** 2 for i, j in all_edges.T.tolist()).detach()
    torch.testing.assert_close(topology_loss(model, x, a_hat, all_edges, w), loop)
    omega, norm, topo = criterion(model, x, a_hat, all_edges, w, zero_grad=True)
    assert topo == pytest.approx(loop.item(), rel=1e-5)
    assert set(omega) == {"conv1.lin.weight", "conv1.bias"}  # L_topo never touches conv2
    assert norm == pytest.approx(sum(float(g.norm()) for g in omega.values()), rel=1e-6)
    assert all(p.grad is None for p in model.parameters())


def test_knn_graph_is_symmetric_without_self_loops():
    import torch

    from models.ghost.graph import knn_graph

    torch.manual_seed(0)
    e = knn_graph(torch.randn(30, 6), k=5)
    pairs = set(map(tuple, e.T.tolist()))
    assert all((j, i) in pairs for i, j in pairs)
    assert all(i != j for i, j in pairs)
    deg = torch.bincount(e[0], minlength=30)
    assert int(deg.min()) >= 4  # top-5 includes the node itself


def test_server_label_draws():
    import torch

    from models.ghost.lit import balanced_labels, proportional_labels

    y = balanced_labels(10, 4)
    assert torch.bincount(y, minlength=4).tolist() == [2, 2, 2, 4]
    y = proportional_labels(10, torch.tensor([0, 7, 0, 3]))
    assert torch.bincount(y, minlength=4).tolist() == [0, 7, 0, 3]
    y = proportional_labels(7, torch.tensor([1, 1, 0, 1]))
    assert sorted(torch.bincount(y, minlength=4).tolist()) == [0, 2, 2, 3]


@pytest.mark.slow  # 4 generators x 40 epochs: about 8 s alone on 2 cores (with Lightning's import)
def test_trained_proxies_generate_their_classes_and_untrained_ones_do_not(sbm):
    from models.ghost import api
    from models.ghost.partition import make_partition

    fed = api.federate(sbm, make_partition(sbm, 4, 0.5, 5, seed=0))
    cfg = GhostConfig(client_epochs=40, hidden=16)
    untrained = [api.Generator(4, 16) for _ in fed.clients]
    trained, history = api.train_proxies(fed, cfg, seed=0)
    assert history[-1]["loss_feat"] < history[0]["loss_feat"]
    ok = [r["closest"] for r in api.proxy_fidelity(trained, fed, samples=100, min_train=5)]
    bad = [r["closest"] for r in api.proxy_fidelity(untrained, fed, samples=100, min_train=5)]
    assert len(ok) >= 6 and np.mean(ok) >= 0.9
    assert np.mean(bad) < 0.6


def test_api_end_to_end_on_a_pyg_style_graph():
    from models.ghost import api
    from models.ghost.config import SWITCHES, flip
    from models.ghost.graph import make_sbm

    g = make_sbm(300, 3, 12, 0.06, 0.004, 0.8, seed=5)
    fed = api.partition_graph(g.edge_index, g.x.numpy(), g.y.tolist(), num_clients=4, alpha=0.1, seed=2)
    cfg = GhostConfig(client_epochs=30, hidden=32, repeats=2, server_steps=5)
    result = api.train_ghost(fed, cfg, seed=0)
    acc = api.evaluate(result.model, fed)
    assert 0.0 <= acc <= 1.0
    assert sorted(result.order) == [0, 1, 2, 3]
    assert len(result.server_history) == 4 * 2 * 5
    ratio = [s["retention"] / s["nll"] for s in result.server_history if s["block"] > 0]
    assert max(ratio) < 1e-4  # lambda_r * 1e-11: retention is negligible in the official code
    every = cfg
    for sw in SWITCHES:
        every = flip(every, sw.key)
    alt = api.train_ghost(fed, every, seed=0)  # the former "paper" mode: all five flipped
    assert api.evaluate(alt.model, fed) > 1 / 3  # better than chance on an easy graph
    per = api.per_client_accuracy(result.model, fed)
    assert len(per) == 4


def test_same_seed_same_models(sbm):
    import torch

    from models.ghost import api
    from models.ghost.partition import make_partition

    fed = api.federate(sbm, make_partition(sbm, 3, 0.5, 5, seed=0))
    cfg = GhostConfig(client_epochs=3, hidden=8, repeats=1, server_steps=2)
    a, b = api.train_ghost(fed, cfg, seed=4), api.train_ghost(fed, cfg, seed=4)
    for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values(), strict=True):
        assert torch.equal(x, y)
    for ga, gb in zip(a.generators, b.generators, strict=True):
        assert all(
            torch.equal(x, y) for x, y in zip(ga.state_dict().values(), gb.state_dict().values(), strict=True)
        )


def test_proxy_fidelity_does_not_depend_on_the_global_rng(sbm):
    import torch

    from models.ghost import api
    from models.ghost.partition import make_partition

    fed = api.federate(sbm, make_partition(sbm, 3, 0.5, 5, seed=0))
    gens = [api.Generator(4, 16) for _ in fed.clients]
    first = api.proxy_fidelity(gens, fed, samples=50, min_train=2)
    torch.rand(7)  # move the global generator: dropout must not see it
    state = torch.get_rng_state()
    assert api.proxy_fidelity(gens, fed, samples=50, min_train=2) == first
    assert torch.equal(torch.get_rng_state(), state)  # and the caller's RNG is left as it was


def test_switches_flip_one_thing_each_and_back():
    from models.ghost.config import SWITCHES, flip, variants

    code = GhostConfig()
    assert all(sw.is_code(code) for sw in SWITCHES)  # the defaults are the official code's behaviour
    assert code.effective_lambdas == (1e-11, 1e-11)
    for sw in SWITCHES:
        once = flip(code, sw.key)
        changed = {
            f for f in dataclasses.fields(GhostConfig) if getattr(once, f.name) != getattr(code, f.name)
        }
        assert {f.name for f in changed} == set(sw.code)
        assert flip(once, sw.key) == code
    v = variants(code)
    assert list(v) == [
        "default",
        *(f"flip_{sw.key}" for sw in SWITCHES),
        "flip_all",
        "flip_all_but_server_labels",
        "noret",
    ]
    every = v["flip_all"]
    assert (every.fgw_structure, every.self_loop_weight, every.stale_omega, every.server_labels) == (
        "knn",
        1.0,
        False,
        "client_proportions",
    )
    assert every.effective_lambdas == (1.0, 1.0)
    assert v["flip_all_but_server_labels"] == dataclasses.replace(every, server_labels="balanced")
    assert v["noret"].lambda_r == 0.0 and list(variants(dataclasses.replace(code, ablation=False))) == [
        "default"
    ]


def test_fgw_plan_equals_pots_conditional_gradient():
    import ot
    import torch

    from models.ghost.losses import fgw_loss, fgw_plan

    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(1, 25))
        x = rng.normal(size=(n, 5))
        xh = x + rng.normal(size=(n, 5)) * rng.choice([0.1, 1.0, 3.0])
        c1 = np.triu((rng.random((n, n)) < 0.3).astype(float), 1)
        c1 = c1 + c1.T
        c2 = np.eye(n) if trial % 2 else np.maximum(c1, np.eye(n))
        m = ((x[:, None] - xh[None]) ** 2).sum(-1)
        p = np.full(n, 1.0 / n)
        ref, log = ot.gromov.fused_gromov_wasserstein(
            m,
            c1,
            c2,
            p,
            p,
            loss_fun="square_loss",
            alpha=0.5,
            log=True,
            max_iter=50,
            tol_rel=1e-6,
            tol_abs=0.0,
        )
        plan, value = fgw_plan(m, c1, c2, 0.5, 50, 1e-6)
        np.testing.assert_allclose(plan, ref, atol=1e-10)
        assert value == pytest.approx(float(log["fgw_dist"]), rel=1e-9, abs=1e-12)
        got = fgw_loss(torch.tensor(c1), torch.tensor(c2), torch.tensor(x), torch.tensor(xh), 0.5, 50, 1e-6)
        assert float(got) == pytest.approx(float(log["fgw_dist"]), rel=1e-6)


def test_generator_bank_is_the_generators_side_by_side():
    import torch

    from models.ghost.nets import Generator, GeneratorBank

    torch.manual_seed(0)
    gens = [Generator(4, 6, noise_dim=8, dropout=0.2) for _ in range(3)]
    bank = GeneratorBank(gens).eval()
    z, y = torch.randn(3, 5, 8), torch.randint(0, 4, (3, 5))
    out = bank(z, y)
    for b, g in enumerate(gens):
        torch.testing.assert_close(out[b], g.eval()(z[b], y[b]))
    for g, back in zip(gens, bank.generators(), strict=True):
        assert all(
            torch.equal(a, c)
            for a, c in zip(g.state_dict().values(), back.state_dict().values(), strict=True)
        )
    out.sum().backward()  # each generator's rows reach only its own parameters
    loss = bank(z[:1].expand(3, -1, -1), y[:1].expand(3, -1))[0].sum()
    bank.zero_grad()
    loss.backward()
    assert bank.weights[0].grad[1:].abs().sum() == 0 and bank.weights[0].grad[0].abs().sum() > 0


def test_stacked_retention_equals_the_loop():
    import torch

    from models.ghost.losses import Retention, retention_penalty
    from models.ghost.nets import GCN

    torch.manual_seed(0)
    model = GCN(4, 3, 2)
    acc, omegas, snaps = Retention(), [], []
    for i in range(3):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.1 * torch.randn_like(p))
        names = ["conv1.lin.weight", "conv1.bias"] if i == 0 else [n for n, _ in model.named_parameters()]
        om = {n: torch.randn_like(p) for n, p in model.named_parameters() if n in names}  # conv2 from block 1
        snap = {n: p.detach().clone() for n, p in model.named_parameters()}
        acc.append(om, snap)
        omegas.append(om)
        snaps.append(snap)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3)
    torch.testing.assert_close(acc.penalty(model), retention_penalty(model, omegas, snaps))
    assert len(acc) == 3


def test_server_variants_see_the_same_proxy_graphs(sbm):
    """Two server variants with the same settings train the same model (the draws and dropout masks come from
    the block's and the step's seed, not from the order of the variants)."""
    import torch

    from models.ghost import api
    from models.ghost.nets import Generator
    from models.ghost.partition import make_partition

    fed = api.federate(sbm, make_partition(sbm, 3, 0.5, 5, seed=0))
    cfg = GhostConfig(hidden=8, repeats=2, server_steps=2)
    torch.manual_seed(0)
    gens = {"identity": [Generator(4, 16) for _ in fed.clients]}
    alt = dataclasses.replace(cfg, self_loop_weight=1.0)
    models, order, hist = api.train_servers(fed, gens, {"a": cfg, "b": alt, "c": cfg}, seed=1)
    for x, y in zip(models["a"].state_dict().values(), models["c"].state_dict().values(), strict=True):
        assert torch.equal(x, y)
    assert not torch.equal(models["a"].conv1.lin.weight, models["b"].conv1.lin.weight)
    assert [h["client"] for h in hist["a"]] == [order[i // 4] for i in range(3 * 4)]
