"""star: the method's own properties, each against a hand computation or a reference.

The rotation trick (forward value = the codeword; lambda R orthogonal up to lambda, mapping r^ to q^; the input
gradient lambda R' g against the dense matrix; two points of one Voronoi cell get different gradients, unlike
STE; the STE fallback at r^ = -q^ and r = 0, counted by the quantizer; agreement with vector-quantize-pytorch's
``rotate_to`` and each broken variant's departure from it), the quantizer's constructor checks and codebook
initialisation, perplexity, a short training run of both estimators from one seed (and the frozen-codebook
stub), the causal skill transformer's causality (k_1 blind to later tokens, k_2 reading k_1; independent heads
blind to both; the offset head), the stage-2 token sequences, and the synthetic skill world (nominal motions,
gripper legality, demo layout, nominal chunks reaching the goal). torch is imported inside the tests only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.star import world
from models.star.world import GRASP, RELEASE, Task, World, make_tasks, nominal


def _pairs(n: int = 40, m: int = 16, dtype=None, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    dtype = dtype or torch.float64
    r = torch.randn(n, m, generator=g, dtype=torch.float64)
    q = torch.randn(n, m, generator=g, dtype=torch.float64) * 0.5
    return r.to(dtype), q.to(dtype), torch.randn(n, m, generator=g, dtype=torch.float64).to(dtype)


def _grad(fn, r, upstream):
    """(value, d <value, upstream> / d r) of fn(r)."""
    import torch

    x = r.clone().requires_grad_(True)
    out = fn(x)
    (g,) = torch.autograd.grad((out * upstream).sum(), x)
    return out.detach(), g


# ------------------------------------------------------------------------------------- the rotation trick
def test_rotation_trick_forward_value_is_the_codeword():
    import torch

    from models.star.quantizer import rotation_trick

    r, q, _ = _pairs()
    out, fb = rotation_trick(r, q)
    assert not fb.any()
    assert float((out - q).abs().max()) < 1e-12  # float64
    r32, q32 = r.float(), q.float()
    out32, _ = rotation_trick(r32, q32)
    torch.testing.assert_close(out32, q32, rtol=1e-6, atol=1e-6)
    # and it is not r (the value really changed): a stub returning r would fail above
    assert float((r - q).abs().max()) > 0.5


def test_rarsq_forward_value_is_the_sum_of_its_codewords():
    import torch

    from models.star.quantizer import RaRSQ

    torch.manual_seed(0)
    for rotation in (True, False):
        rq = RaRSQ(16, 32, 3, rotation=rotation)
        z = torch.randn(5, 7, 16) * 0.2
        out, codes, loss = rq(z)
        assert out.shape == z.shape and codes.shape == (5, 7, 3) and loss.shape == ()
        assert codes.min() >= 0 and codes.max() < 32
        torch.testing.assert_close(out, rq.lookup(codes), rtol=1e-6, atol=1e-6)
        # the codes are the greedy residual nearest neighbours
        r = z.reshape(-1, 16)
        flat = codes.reshape(-1, 3)
        for d in range(3):
            dist = torch.cdist(r, rq.codebooks[d].detach())
            assert torch.equal(dist.argmin(-1), flat[:, d])
            r = r - rq.codebooks[d].detach()[flat[:, d]]
        # the loss is beta * sum_d mean((r_{d-1} - q_d)^2)
        r, want = z.reshape(-1, 16), 0.0
        for d in range(3):
            q = rq.codebooks[d].detach()[flat[:, d]]
            want += 0.25 * float(((r - q) ** 2).mean())
            r = r - q
        assert float(loss.detach()) == pytest.approx(want, rel=1e-5)


def test_dense_rotation_is_lambda_times_an_orthogonal_map_taking_r_hat_to_q_hat():
    import torch

    from models.star.quantizer import dense_rotation

    r, q, _ = _pairs(10)
    eye = torch.eye(16, dtype=torch.float64)
    for i in range(10):
        lam = q[i].norm() / r[i].norm()
        R = dense_rotation(r[i], q[i]) / lam
        assert float((R.T @ R - eye).abs().max()) < 1e-12
        assert float((R @ (r[i] / r[i].norm()) - q[i] / q[i].norm()).abs().max()) < 1e-12
        assert float(torch.linalg.det(R)) == pytest.approx(1.0, abs=1e-10)  # a rotation, not a reflection
        assert not torch.allclose(R, eye)


def test_input_gradient_is_lambda_R_transpose_g_not_the_ste_gradient():
    import torch

    from models.star.quantizer import dense_rotation, rotation_trick, straight_through

    r, q, up = _pairs()
    _, g_rot = _grad(lambda x: rotation_trick(x, q)[0], r, up)
    want = torch.stack([dense_rotation(r[i], q[i]).T @ up[i] for i in range(len(r))])
    assert float((g_rot - want).abs().max()) < 1e-12
    value, g_ste = _grad(lambda x: straight_through(x, q), r, up)
    assert float((value - q).abs().max()) < 1e-12  # STE has the same forward value
    assert float((g_ste - up).abs().max()) == 0.0  # its gradient is g itself
    assert float((g_rot - g_ste).abs().max()) > 0.1
    # lambda R' preserves the direction structure: |lambda R' g| = lambda |g|
    lam = q.norm(dim=-1) / r.norm(dim=-1)
    torch.testing.assert_close(g_rot.norm(dim=-1), lam * up.norm(dim=-1), rtol=1e-12, atol=1e-12)


def _cell(rotation: bool):
    """Two points of one Voronoi cell of a depth-1 quantizer and their input gradients for one upstream g."""
    import torch

    from models.star.quantizer import RaRSQ

    torch.manual_seed(3)
    rq = RaRSQ(8, 16, 1, rotation=rotation)
    e = rq.codebooks.detach()[0, 5]
    g = torch.Generator().manual_seed(1)
    z = e[None] + 0.01 * torch.randn(2, 8, generator=g)
    up = torch.randn(8, generator=g).expand(2, 8)
    zz = z.clone().requires_grad_(True)
    out, codes, _ = rq(zz)
    (grad,) = torch.autograd.grad((out * up).sum(), zz)
    return codes[:, 0], grad, up


def test_two_points_of_one_cell_get_different_gradients_under_rarsq_and_equal_ones_under_ste():
    import torch

    codes, grad, up = _cell(rotation=True)
    assert codes.tolist() == [5, 5]
    assert float((grad[0] - grad[1]).abs().max()) > 1e-2
    codes, grad, up = _cell(rotation=False)
    assert codes.tolist() == [5, 5]
    assert torch.equal(grad[0], grad[1]) and torch.equal(grad[0], up[0])


def test_antiparallel_and_zero_residuals_fall_back_to_ste():
    import torch

    from models.star.quantizer import rotation_trick

    _, q, up = _pairs(4)
    r = torch.stack([-2.0 * q[0], torch.zeros(16, dtype=torch.float64), -0.3 * q[2], 0.7 * q[3] + 0.2])
    value, grad = _grad(lambda x: rotation_trick(x, q)[0], r, up)
    _, fb = rotation_trick(r, q)
    assert fb.tolist() == [True, True, True, False]
    assert float((value - q).abs().max()) < 1e-12
    assert torch.equal(grad[:3], up[:3])  # STE: the upstream gradient itself
    assert torch.isfinite(grad).all() and not torch.allclose(grad[3], up[3])


def test_rarsq_counts_its_fallbacks():
    import torch

    from models.star.quantizer import RaRSQ

    for depths, want in ((1, 2), (2, 4)):
        rq = RaRSQ(4, 2, depths)
        book = torch.tensor([[0.1, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 10.0]])
        with torch.no_grad():
            rq.codebooks.copy_(book.expand(depths, 2, 4))
        # -0.05 e0 (antiparallel to its nearest codeword e0), 0, and a generic point; depth 2 sees the
        # residuals -0.15 e0, -e0 (antiparallel again) and (0, 0.1, 0, 0) (orthogonal to e0)
        z = torch.tensor([[-0.05, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.1, 0.1, 0.0, 0.0]])
        up = torch.tensor([[1.0, 2.0, 3.0, 4.0]]).expand(3, 4)
        zz = z.clone().requires_grad_(True)
        out, codes, _ = rq(zz)
        assert rq.last_fallbacks == want, (depths, rq.last_fallbacks)
        assert (codes == 0).all()
        torch.testing.assert_close(out, rq.lookup(codes))
        (grad,) = torch.autograd.grad((out * up).sum(), zz)
        assert torch.equal(grad[:2], depths * up[:2])  # every depth passes g straight through
        assert not torch.allclose(grad[2], depths * up[2])
        rq(torch.tensor([[0.3, 0.2, 0.1, 0.0]]))
        assert rq.last_fallbacks == 0  # reset by every forward
        ste = RaRSQ(4, 2, depths, rotation=False)
        ste(z)
        assert ste.last_fallbacks == 0


def test_rotation_trick_agrees_with_the_reference_rotate_to():
    from vector_quantize_pytorch.vector_quantize_pytorch import rotate_to

    from models.star.quantizer import rotation_trick

    r, q, up = _pairs(60)
    mine, g_mine = _grad(lambda x: rotation_trick(x, q)[0], r, up)
    ref, g_ref = _grad(lambda x: rotate_to(x, q), r, up)
    assert float((mine - ref).abs().max()) < 1e-12
    assert float((g_mine - g_ref).abs().max()) < 1e-12
    # scale=False only matches when |q| = |r|
    same = q / q.norm(dim=-1, keepdim=True) * r.norm(dim=-1, keepdim=True)
    unscaled, _ = _grad(lambda x: rotation_trick(x, same, scale=False)[0], r, up)
    assert float((unscaled - same).abs().max()) < 1e-12
    unscaled, _ = _grad(lambda x: rotation_trick(x, q, scale=False)[0], r, up)
    assert float((unscaled - q).abs().max()) > 0.1


@pytest.fixture(scope="module")
def untrained():
    """A small untrained SkillAE and random standardised chunks."""
    import torch

    from models.star.skills import SkillAE, SkillConfig

    torch.manual_seed(0)
    model = SkillAE(SkillConfig()).eval()
    x = np.random.default_rng(0).standard_normal((64, 24)).astype(np.float32)
    return model, x


def test_peer_and_forward_gaps_of_the_method(untrained):
    from models.star.evaluation import fallbacks, forward_gap, peer_gap

    model, x = untrained
    gap = peer_gap(model, x)
    assert gap["max"] <= 1e-10, gap
    assert forward_gap(model, x) <= 1e-6
    assert fallbacks(model, x) == 0


@pytest.mark.parametrize(
    ("switch", "value_breaks"),
    [({"scale": False}, True), ({"normalize_w": False}, True), ({"detach": False}, False)],
)
def test_each_broken_rotation_fails_its_check(untrained, switch, value_breaks):
    from models.star.evaluation import forward_gap, peer_gap

    model, x = untrained
    gap = peer_gap(model, x, **switch)
    assert gap["max"] > 1e-3, (switch, gap)
    if value_breaks:
        assert forward_gap(model, x, **switch) > 1e-3
        assert gap["value"] > 1e-3
    else:  # detach=False keeps the value and changes only the gradient
        assert forward_gap(model, x, **switch) <= 1e-6
        assert gap["value"] <= 1e-10 and gap["gradient"] > 1e-3


# ------------------------------------------------------------------------------ the quantizer's contract
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"depths": 0}, "depths = 0"),
        ({"depths": -1}, "depths = -1"),
        ({"codebook_size": 1}, "codebook_size = 1"),
        ({"codebook_size": 0}, "codebook_size = 0"),
        ({"init": "uniform"}, "init = 'uniform'"),
    ],
)
def test_rarsq_refuses_bad_sizes(kwargs, match):
    from models.star.quantizer import RaRSQ

    args = {"dim": 16, "codebook_size": 32, "depths": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        RaRSQ(**args)


def test_rarsq_refuses_an_input_of_the_wrong_width():
    import torch

    from models.star.quantizer import RaRSQ

    with pytest.raises(ValueError, match="last dimension is 8"):
        RaRSQ(16, 32, 2)(torch.zeros(3, 8))


def test_kaiming_init_lies_within_its_bound_and_fills_it():
    import torch

    from models.star.quantizer import RaRSQ

    torch.manual_seed(0)
    book = RaRSQ(16, 32, 2).codebooks.detach()
    bound = math.sqrt(6 / (32 * 16))
    assert bound == pytest.approx(0.108, abs=5e-4)
    assert float(book.abs().max()) <= bound
    assert float(book.abs().max()) > 0.95 * bound and float(book.min()) < -0.95 * bound
    assert float(book.std()) == pytest.approx(bound / math.sqrt(3), rel=0.1)  # uniform, not concentrated
    # the reference library's kaiming-uniform over a (1, K, m) tensor has the same bound
    ref = torch.empty(1, 32, 16)
    torch.nn.init.kaiming_uniform_(ref)
    assert float(ref.abs().max()) <= bound and float(ref.abs().max()) > 0.95 * bound


def test_one_seed_gives_one_initialisation_for_both_estimators():
    import torch

    from models.star.quantizer import RaRSQ

    books = []
    for rotation in (True, False, True):
        torch.manual_seed(7)
        books.append(RaRSQ(16, 32, 2, rotation=rotation).codebooks.detach())
    assert torch.equal(books[0], books[1]) and torch.equal(books[0], books[2])
    torch.manual_seed(8)
    assert not torch.equal(books[0], RaRSQ(16, 32, 2).codebooks.detach())


def test_normal_init_has_sd_init_sd():
    import torch

    from models.star.quantizer import RaRSQ

    torch.manual_seed(0)
    for sd in (0.25, 1.0):
        book = RaRSQ(32, 64, 4, init="normal", init_sd=sd).codebooks.detach()  # 8192 draws
        assert float(book.std()) == pytest.approx(sd, rel=0.03)
        assert abs(float(book.mean())) < 4 * sd / math.sqrt(book.numel())
        assert float(book.abs().max()) > 3 * sd  # not the uniform init


def test_learn_codebook_false_freezes_the_codebooks():
    from models.star.quantizer import RaRSQ

    assert RaRSQ(4, 2, 1).codebooks.requires_grad
    assert not RaRSQ(4, 2, 1, learn_codebook=False).codebooks.requires_grad


# ----------------------------------------------------------------------------------------- perplexity
def test_perplexity_of_known_distributions():
    from models.star.quantizer import perplexity

    assert perplexity(list(range(32)) * 3, 32) == (pytest.approx(32.0), 32)
    assert perplexity([4] * 50, 32) == (pytest.approx(1.0), 1)
    ppl, active = perplexity([0, 0, 1, 1, 2, 2, 3, 3], 32)
    assert ppl == pytest.approx(4.0) and active == 4
    ppl, active = perplexity([0, 0, 0, 1], 8)  # p = (3/4, 1/4)
    assert ppl == pytest.approx(math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))) and active == 2


# ------------------------------------------------------------------------------------- a short training run
@pytest.fixture(scope="module")
def chunks():
    """Standardised world chunks (n, 8 * 3)."""
    from models.star.policy import Standardiser

    rng = np.random.default_rng(0)
    tasks = make_tasks(rng, 4)
    data = world.demos(tasks, 8, rng, 8, 0.01, 0.2)
    c, _ = world.windows(data["actions"], data["demo_offset"], 8)
    x = Standardiser.fit(c).forward(c)
    assert abs(float(x.mean())) < 1e-5 and float(x.std()) == pytest.approx(1.0, rel=0.05)
    return x


def test_both_estimators_learn_from_one_seed(chunks):
    from models.star.skills import SkillConfig, fit_skills, usage

    runs = {}
    for est in ("rotation", "ste"):
        model, history = fit_skills(chunks, SkillConfig(estimator=est), 150, seed=0, batch=128)
        assert len(history) == 150
        runs[est] = (model, [h["mse"] for h in history])
    for est, (model, mse) in runs.items():
        assert np.mean(mse[-10:]) < 0.6 * np.mean(mse[:5]), (est, mse[:5], mse[-10:])
        assert usage(model, chunks)["mse"] < 0.6, est
    rot, ste = runs["rotation"][1], runs["ste"][1]
    # one initialisation and one first minibatch: the first forward is the same (q~ = q in value)
    assert rot[0] == pytest.approx(ste[0], rel=1e-6)
    assert rot[-1] != ste[-1]  # the gradients differ, so the runs part


def test_frozen_codebook_stays_at_its_initialisation(chunks):
    import torch

    from models.star.skills import SkillAE, SkillConfig, fit_skills

    for learn in (False, True):
        cfg = SkillConfig(learn_codebook=learn)
        model, _ = fit_skills(chunks, cfg, 10, seed=0, batch=64)
        torch.manual_seed(0)
        init = SkillAE(cfg).quantizer.codebooks.detach()
        same = torch.equal(model.quantizer.codebooks.detach(), init)
        assert same == (not learn)


# ----------------------------------------------------------------------------- the causal skill transformer
def _cst(**changes):
    import torch

    from models.star.cst import CausalSkillTransformer, CSTConfig

    torch.manual_seed(0)
    return CausalSkillTransformer(CSTConfig(tasks=3, **changes)).eval()


def _cst_inputs():
    import torch

    g = torch.Generator().manual_seed(0)
    n = 4
    task = torch.tensor([0, 1, 2, 1])
    state = torch.randn(n, 3, generator=g)
    ctx = torch.tensor([0, 2, 4, 8])
    seq = torch.randint(0, 64, (n, 12), generator=g)
    return task, state, seq, ctx


def test_k1_logits_ignore_the_next_chunk_and_the_padding():
    import torch

    policy = _cst()
    task, state, seq, ctx = _cst_inputs()
    with torch.no_grad():
        logits, off = policy(task, state, seq, ctx)
        assert logits.shape == (4, 2, 32) and off.shape == (4, 24)
        later = seq.clone()
        for i, c in enumerate(ctx.tolist()):
            later[i, c:] = (later[i, c:] + 17) % 64  # k_1, k_2 and the padding
        logits_later, _ = policy(task, state, later, ctx)
        assert torch.equal(logits[:, 0], logits_later[:, 0])
        assert not torch.allclose(logits[:, 1], logits_later[:, 1])
        # k_1's own token alone changes the depth-2 logits (k_2 is read at k_1's token)
        k1 = seq.clone()
        rows = torch.arange(4)
        k1[rows, ctx] = (k1[rows, ctx] + 5) % 64
        logits_k1, _ = policy(task, state, k1, ctx)
        assert torch.equal(logits[:, 0], logits_k1[:, 0])
        assert ((logits[:, 1] - logits_k1[:, 1]).abs().amax(-1) > 1e-4).all()
        # but the history does change k_1's logits (where there is history)
        hist = seq.clone()
        hist[1:, 0] = (hist[1:, 0] + 3) % 64
        logits_h, _ = policy(task, state, hist, ctx)
        assert ((logits[1:, 0] - logits_h[1:, 0]).abs().amax(-1) > 1e-4).all()


def test_independent_heads_read_the_context_only():
    import torch

    policy = _cst(autoregressive=False)
    task, state, seq, ctx = _cst_inputs()
    rows = torch.arange(4)
    with torch.no_grad():
        logits, off = policy(task, state, seq, ctx)
        k1 = seq.clone()
        k1[rows, ctx] = (k1[rows, ctx] + 5) % 64
        logits_k1, off_k1 = policy(task, state, k1, ctx)
    assert torch.equal(logits, logits_k1) and torch.equal(off, off_k1)
    other_state = state + 1.0
    with torch.no_grad():
        logits_s, _ = policy(task, other_state, seq, ctx)
    assert ((logits - logits_s).abs().amax(-1) > 1e-4).all()


def test_the_offset_head_exists_only_with_offset():
    import torch

    task, state, seq, ctx = _cst_inputs()
    with_head, without = _cst(), _cst(offset=False)
    assert with_head.offset is not None and without.offset is None
    with torch.no_grad():
        _, off = with_head(task, state, seq, ctx)
        _, zero = without(task, state, seq, ctx)
    assert zero.shape == (4, 24) and torch.equal(zero, torch.zeros(4, 24))
    assert float(off.abs().max()) > 1e-3
    # autoregressive: the offset is read at k_D's token, so it sees the whole next chunk's codes
    k2 = seq.clone()
    rows = torch.arange(4)
    k2[rows, ctx + 1] = (k2[rows, ctx + 1] + 9) % 64
    with torch.no_grad():
        _, off2 = with_head(task, state, k2, ctx)
    assert ((off - off2).abs().amax(-1) > 1e-5).all()


def test_act_decodes_greedily_depth_by_depth():
    import torch

    policy = _cst()
    task, state, seq, ctx = _cst_inputs()
    codes, off = policy.act(task, state, seq, ctx)
    assert codes.shape == (4, 2)
    rows = torch.arange(4)
    with torch.no_grad():
        logits, _ = policy(task, state, seq, ctx)
        assert torch.equal(codes[:, 0], logits[:, 0].argmax(-1))
        filled = seq.clone()
        filled[rows, ctx] = codes[:, 0]
        logits2, _ = policy(task, state, filled, ctx)
        assert torch.equal(codes[:, 1], logits2[:, 1].argmax(-1))
        filled[rows, ctx + 1] = 32 + codes[:, 1]
        _, want_off = policy(task, state, filled, ctx)
    torch.testing.assert_close(off, want_off)


def test_sequences_put_the_history_before_the_own_codes():
    from models.star.cst import sequences

    D, K, M = 2, 5, 4
    # demo 7: chunks 0, 1, 2; demo 3: chunks 0, 1; in shuffled order
    demo = np.array([7, 3, 7, 3, 7])
    index = np.array([2, 1, 0, 0, 1])
    codes = np.array([[4, 0], [1, 1], [2, 3], [0, 4], [3, 2]])
    seq, ctx = sequences(codes, index, demo, D, K, M)
    assert seq.shape == (5, D * M) and ctx.tolist() == [4, 2, 0, 0, 2]

    def tok(c):
        return [c[0], K + c[1]]

    want = {
        0: tok([2, 3]) + tok([3, 2]) + tok([4, 0]),  # demo 7 chunk 2: chunks 0, 1, then itself
        1: tok([0, 4]) + tok([1, 1]),
        2: tok([2, 3]),
        3: tok([0, 4]),
        4: tok([2, 3]) + tok([3, 2]),
    }
    for i, w in want.items():
        assert seq[i, : len(w)].tolist() == w, i
        assert (seq[i, len(w) :] == 0).all()
    assert seq.max() < D * K


# ------------------------------------------------------------------------------------------------ the world
@pytest.mark.parametrize("bell", [False, True])
def test_nominal_motions_have_path_length_point_eight(bell):
    for p in range(6):
        m = nominal(p, 8, bell)
        assert m.shape == (8, 2)
        assert np.linalg.norm(m, axis=1).sum() == pytest.approx(0.8, abs=1e-12), p
    for p in range(4):
        assert np.linalg.norm(nominal(p, 8, bell).sum(0)) == pytest.approx(0.8, abs=1e-12)
    np.testing.assert_allclose(nominal(0, 8, bell).sum(0), [0.8, 0.0], atol=1e-12)
    np.testing.assert_allclose(nominal(1, 8, bell).sum(0), [0.0, 0.8], atol=1e-12)
    for p in (GRASP, RELEASE):
        assert np.array_equal(nominal(p, 8), np.zeros((8, 2)))


def test_bell_and_constant_profiles_differ_in_shape_only():
    flat, bell = nominal(0, 8, False), nominal(0, 8, True)
    assert np.allclose(flat[:, 0], 0.1)
    assert bell[:, 0].max() > 0.15 and bell[0, 0] < 0.05 and bell[:, 0].argmax() in (3, 4)
    np.testing.assert_allclose(bell[:, 0], bell[::-1, 0], atol=1e-12)  # symmetric
    left, right = nominal(4, 8).sum(0), nominal(5, 8).sum(0)
    assert left[0] > 0 and left[1] > 0 and right[1] < 0
    np.testing.assert_allclose(left, [right[0], -right[1]], atol=1e-12)
    radius = 0.8 / (np.pi / 2)
    assert np.linalg.norm(left) == pytest.approx(math.sqrt(2) * radius, rel=0.01)  # a quarter-circle chord


def test_task_gripper_and_make_tasks_never_grasp_closed_or_release_open():
    assert Task((0, 1)).gripper == -1.0
    assert Task((GRASP, 0)).gripper == 1.0
    assert Task((GRASP, 2, RELEASE, 3)).gripper == -1.0
    tasks = make_tasks(np.random.default_rng(0), 200, (4, 6))
    assert len(set(tasks)) == 200
    used = set()
    for t in tasks:
        assert 4 <= len(t.primitives) <= 6
        g = -1.0
        for p in t.primitives:
            assert not (p == GRASP and g > 0) and not (p == RELEASE and g < 0), t
            g = 1.0 if p == GRASP else -1.0 if p == RELEASE else g
            used.add(p)
        assert t.gripper == g
    assert used == set(range(8))
    a = make_tasks(np.random.default_rng(5), 6)
    assert a == make_tasks(np.random.default_rng(5), 6) and a != make_tasks(np.random.default_rng(6), 6)


def test_demos_layout_is_consistent():
    rng = np.random.default_rng(1)
    tasks = make_tasks(rng, 3)
    H = 8
    d = world.demos(tasks, 4, rng, H, 0.0, 0.2)
    n = 12
    offsets = d["demo_offset"]
    assert offsets.shape == (n + 1,) and offsets[0] == 0 and offsets[-1] == len(d["actions"])
    assert d["actions"].shape[1] == 3 and d["demo_start"].shape == (n, 2)
    assert d["demo_task"].tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert np.abs(d["demo_start"]).max() <= 0.2
    lengths = np.array([len(tasks[t].primitives) for t in d["demo_task"]])
    assert np.array_equal(np.diff(offsets), lengths * H)  # steps = primitives x H
    assert len(d["prim_demo"]) == len(d["prim_index"]) == len(d["prim_state"]) == lengths.sum()
    assert np.array_equal(np.bincount(d["prim_demo"]), lengths)
    for i in range(n):
        rows = np.nonzero(d["prim_demo"] == i)[0]
        assert d["prim_index"][rows].tolist() == list(range(lengths[i]))
        states = d["prim_state"][rows]
        np.testing.assert_allclose(states[0], [*d["demo_start"][i], -1.0], atol=1e-6)
        a = d["actions"][offsets[i] : offsets[i + 1]].reshape(lengths[i], H, 3)
        for j in range(1, lengths[i]):  # the state before a primitive = the previous state + its motion
            np.testing.assert_allclose(states[j, :2], states[j - 1, :2] + a[j - 1, :, :2].sum(0), atol=1e-5)
            assert states[j, 2] == np.sign(a[j - 1, -1, 2])
        assert set(np.unique(a[:, :, 2])) <= {-1.0, 1.0}  # noise 0: exact commands


def _nominal_chunks(task: Task, H: int = 8) -> list[np.ndarray]:
    chunks, g = [], -1.0
    for p in task.primitives:
        g = 1.0 if p == GRASP else -1.0 if p == RELEASE else g
        chunks.append(np.concatenate([nominal(p, H), np.full((H, 1), g)], 1))
    return chunks


def test_nominal_chunks_reach_the_goal_and_wrong_ones_do_not():
    tasks = [Task((0, 4, GRASP, 1, RELEASE)), Task((GRASP, 5, 2, 3)), Task((1, 1, 0, 4))]
    starts = np.array([[0.1, -0.2], [0.0, 0.0], [-0.15, 0.05]])
    ids = np.array([0, 1, 2])
    w = World(tasks, ids, starts)
    np.testing.assert_allclose(w.state(), [[0.1, -0.2, -1], [0, 0, -1], [-0.15, 0.05, -1]], atol=1e-7)
    plans = [_nominal_chunks(t) for t in tasks]
    for j in range(max(len(p) for p in plans)):
        active = np.array([j < len(p) for p in plans])
        acts = np.stack([p[j] if j < len(p) else np.full((8, 3), 9.0) for p in plans])
        w.execute(acts, active=active)
    assert np.abs(w.pos - w.goal).max() < 1e-9
    assert w.success(1e-6).tolist() == [True, True, True]
    assert w.grip.tolist() == [-1.0, 1.0, -1.0]
    # a wrong motion chunk (left instead of up), or a grasp that does not close: both fail
    wrong_motion = _nominal_chunks(Task((0, 4, GRASP, 2, RELEASE)))
    no_grasp = _nominal_chunks(Task((GRASP, 5, 2, 3)))
    no_grasp[0][:, 2] = -1.0
    no_grasp[1:] = [np.concatenate([c[:, :2], np.full((8, 1), -1.0)], 1) for c in no_grasp[1:]]
    w = World(tasks, np.array([0, 1]), starts[:2])
    for j in range(5):
        acts = np.stack([wrong_motion[j], no_grasp[j] if j < 4 else np.zeros((8, 3))])
        w.execute(acts, active=np.array([True, j < 4]))
    assert w.success(0.1).tolist() == [False, False]
    assert np.linalg.norm(w.pos[1] - w.goal[1]) < 1e-9  # the position is right, the gripper is not


def test_noise_free_demos_succeed_in_the_world():
    rng = np.random.default_rng(2)
    tasks = make_tasks(rng, 5)
    d = world.demos(tasks, 2, rng, 8, 0.0, 0.2)
    n = len(d["demo_task"])
    w = World(tasks, d["demo_task"], d["demo_start"])
    for i in range(n):
        a = d["actions"][d["demo_offset"][i] : d["demo_offset"][i + 1]]
        single = World(tasks, d["demo_task"][i : i + 1], d["demo_start"][i : i + 1])
        for chunk in a.reshape(-1, 8, 3):
            single.execute(chunk[None])
        assert single.success(1e-5).tolist() == [True], i
    assert w.horizon.tolist() == [len(tasks[t].primitives) for t in d["demo_task"]]


@pytest.mark.parametrize("H", [4, 8, 10])
def test_noise_free_demos_of_another_horizon_reach_the_goal(H):
    tasks = [Task((0, 1, 4), H), Task((GRASP, 2, 5, RELEASE), H)]
    d = world.demos(tasks, 1, np.random.default_rng(0), H, 0.0, 0.2)
    w = World(tasks, d["demo_task"], d["demo_start"])
    lengths = np.diff(d["demo_offset"])
    assert lengths.tolist() == [3 * H, 4 * H]
    for i in range(2):
        a = d["actions"][d["demo_offset"][i] : d["demo_offset"][i + 1]]
        other = np.zeros_like(a)
        w.execute(np.stack([a, other] if i == 0 else [other, a]), active=np.arange(2) == i)
    assert w.success(0.1).tolist() == [True, True], (w.pos, w.goal)
