"""ferret: the method's own properties, each able to fail for a broken implementation.

- Bases: regenerated bit-identically in a second process (another PYTHONHASHSEED, other global seeds) and in this
  one whatever the global torch / NumPy seeds, without advancing either global RNG; a basis depends only on
  (round seed, index, block), not on the other indices asked for; every entry lies in +-1/sqrt(d) and the law is
  N(0, 1) truncated there (KS); the zeroth-order directions are N(0, 1) and regenerate too.
- rho(d) = E[v_i^2] is the truncated normal's variance (scipy), matches 10^6 draws within 4 standard errors where
  the approximation 1/(3d) does not, and 3 d rho -> 1 as 1 - 2 / (15 d).
- The codec at d = 16, K_l = 4: the mean of 800 reconstructions is Delta (a chi-square test with the exact
  covariance of the estimator, derived below), its mean squared error is the closed form; the code's scaling is
  d rho (about 1/3) times the paper's, so its mean is d rho Delta and the same test rejects it; decoding with the
  wrong round seed gives a reconstruction uncorrelated with Delta.
- The K_l rule's known answers; decoding is linear in the messages and respects the weights; encoding is linear in
  Delta for fixed K_l; the candidate choice is K_l distinct sorted indices of range(K), redrawn from the seed.
- Uplink counters from the rows of short runs: FedAvg and FedZO d, Ferret sum_l K_l + 1 (the K_l of each client's
  true update), the zeroth-order baseline steps + 1; the recon_error column is the decoded mean's relative error.
- Common random numbers: FedAvg and Ferret start from the same weights, and FedAvg's first round is exactly the
  mean of the updates Ferret's clients encoded (same selection and minibatches).
- The Dirichlet partition: a partition with >= min_rows per client, reproducible from the generator, more skewed
  for small alpha; impossible settings are a UserError naming the value. Codec errors are ValueErrors naming it.
"""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sps

from tests.helpers import ROOT

# ------------------------------------------------------------------------------------------------ bases
_REGEN = """
import hashlib, sys
import numpy as np, torch
torch.manual_seed(int(sys.argv[1])); np.random.seed(int(sys.argv[1]))
from models.ferret.bases import gaussian_directions, truncated_bases
h = hashlib.sha256()
h.update(truncated_bases(123456789, [0, 7, 63], 2, 100, torch.float64).numpy().tobytes())
h.update(truncated_bases(2**40 + 3, [5], 0, 1, torch.float32).numpy().tobytes())
h.update(gaussian_directions(99, [0, 3, 4], 50, torch.float64).numpy().tobytes())
print(h.hexdigest())
"""


def _regen_hash() -> str:
    import torch

    from models.ferret.bases import gaussian_directions, truncated_bases

    h = hashlib.sha256()
    h.update(truncated_bases(123456789, [0, 7, 63], 2, 100, torch.float64).numpy().tobytes())
    h.update(truncated_bases(2**40 + 3, [5], 0, 1, torch.float32).numpy().tobytes())
    h.update(gaussian_directions(99, [0, 3, 4], 50, torch.float64).numpy().tobytes())
    return h.hexdigest()


@pytest.fixture(scope="module", autouse=True)
def second_process(request):
    """The regeneration script in another interpreter (another PYTHONHASHSEED and global seeds), started when this
    module starts so that its torch import (~2.5 s) overlaps the tests before the one that reads it (only when
    that test is selected)."""
    wanted = any(
        item.name == "test_bases_regenerate_bit_identically_in_a_second_process"
        for item in request.session.items
    )
    if not wanted:
        yield None
        return
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    python = os.path.abspath(sys.executable)  # relative when run as PATH=.venv/bin:$PATH python -m pytest
    proc = subprocess.Popen(
        [python, "-c", _REGEN, "3"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def test_bases_ignore_and_leave_alone_the_global_rngs():
    import torch

    from models.ferret.bases import gaussian_directions, truncated_bases

    torch.manual_seed(0)
    np.random.seed(0)
    a = truncated_bases(5, range(8), 1, 33)
    za = gaussian_directions(5, range(4), 20)
    torch.manual_seed(1)
    np.random.seed(1)
    torch_state, np_state = torch.get_rng_state(), np.random.get_state()
    b = truncated_bases(5, range(8), 1, 33)
    zb = gaussian_directions(5, range(4), 20)
    assert torch.equal(a, b) and torch.equal(za, zb)
    # generation does not advance either global generator
    assert torch.equal(torch.get_rng_state(), torch_state)
    after = np.random.get_state()
    assert np.array_equal(after[1], np_state[1]) and after[2] == np_state[2]


def test_a_basis_depends_only_on_round_seed_index_and_block():
    import torch

    from models.ferret.bases import truncated_bases

    full = truncated_bases(11, range(10), 3, 40)
    assert torch.equal(truncated_bases(11, [5], 3, 40)[0], full[5])  # the server regenerates a subset
    assert torch.equal(truncated_bases(11, [9, 2], 3, 40), full[[9, 2]])
    others = [truncated_bases(12, [5], 3, 40)[0], truncated_bases(11, [5], 2, 40)[0], full[4]]
    for other in others:  # another round seed, block or index: another (uncorrelated) basis
        assert not torch.equal(other, full[5])
        assert abs(float(torch.corrcoef(torch.stack([other, full[5]]))[0, 1])) < 0.6


@pytest.mark.parametrize("d", [1, 4, 100, 2410])
def test_bases_lie_within_one_over_sqrt_d_and_fill_it(d):
    import torch

    from models.ferret.bases import truncated_bases

    a = 1.0 / math.sqrt(d)
    n = max(4000 // d, 20)
    v = truncated_bases(3, range(n), 0, d, torch.float64)
    assert v.shape == (n, d) and v.dtype == torch.float64
    assert float(v.abs().max()) <= a * (1 + 1e-12)
    assert float(v.abs().max()) > 0.99 * a  # the whole interval is used, not a narrower one
    v32 = truncated_bases(3, range(n), 0, d)
    assert v32.dtype == torch.float32 and float(v32.abs().max()) <= float(np.float32(a))


def test_bases_follow_the_truncated_normal_and_directions_the_normal():
    import torch

    from models.ferret.bases import gaussian_directions, truncated_bases

    v = truncated_bases(8, range(8000), 1, 1, torch.float64).numpy().ravel()  # d = 1: a = 1
    assert sps.kstest(v, sps.truncnorm(-1, 1).cdf).pvalue > 1e-3
    assert sps.kstest(v, sps.uniform(-1, 2).cdf).pvalue < 1e-6  # not merely uniform on [-a, a]
    v4 = truncated_bases(8, range(2000), 1, 4, torch.float64).numpy()
    assert sps.kstest(v4.ravel(), sps.truncnorm(-0.5, 0.5).cdf).pvalue > 1e-3
    assert np.abs(np.corrcoef(v4.T) - np.eye(4)).max() < 0.08  # independent coordinates
    z = gaussian_directions(8, range(500), 40, torch.float64).numpy()
    assert sps.kstest(z.ravel(), "norm").pvalue > 1e-3
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1) < 0.03


def test_rho_is_the_truncated_normal_variance():
    from models.ferret.bases import rho

    for d in (1, 2, 5, 16, 64, 2410):
        a = 1.0 / math.sqrt(d)
        assert rho(d) == pytest.approx(sps.truncnorm(-a, a).var(), rel=1e-9), d
        assert rho(d) < 1.0 / (3 * d)  # less spread than the uniform on [-a, a]
    assert rho(1) == pytest.approx(0.29112, abs=1e-5)  # Var of N(0, 1) truncated to [-1, 1]
    for bad in (0, -3):
        with pytest.raises(ValueError, match=f"block size {bad}"):
            rho(bad)


def test_rho_against_a_million_draws():
    import torch

    from models.ferret.bases import rho, truncated_bases

    def draws(d: int, n: int) -> tuple[float, float]:
        sq = truncated_bases(2024, range(n), 0, d, torch.float64).numpy().ravel() ** 2
        return sq.mean(), sq.std() / math.sqrt(sq.size)

    mean, se = draws(64, 15_625)  # 10^6 draws: rho to 0.1% (one standard error)
    assert abs(mean - rho(64)) < 4 * se, (mean, rho(64), se)
    # at d = 2 the approximation 1/(3d) is 6.7% too large: 20,000 draws tell it from rho (> 10 standard errors)
    mean, se = draws(2, 10_000)
    assert abs(mean - rho(2)) < 4 * se, (mean, rho(2), se)
    assert abs(mean - 1 / 6) > 8 * se, (mean, se)


def test_rho_approaches_one_over_three_d():
    from models.ferret.bases import rho

    assert abs(3 * 10**6 * rho(10**6) - 1) < 1e-6
    for d in (100, 10_000):  # 1 - 3 d rho = 2 / (15 d) + O(1 / d^2)
        assert (1 - 3 * d * rho(d)) * d == pytest.approx(2 / 15, rel=0.02), d


# ------------------------------------------------------------------------------------------------ the codec
def _moments(d: int) -> tuple[float, float]:
    """rho = E[v_i^2] and m4 = E[v_i^4] = 3 rho - 2 a^3 phi(a) / (2 Phi(a) - 1) of N(0, 1) truncated to +-a."""
    from models.ferret.bases import rho

    a = 1.0 / math.sqrt(d)
    r = rho(d)
    return r, 3 * r - 2 * a**3 * sps.norm.pdf(a) / math.erf(a / math.sqrt(2))


def _covariance(delta: np.ndarray, k: int) -> np.ndarray:
    """Cov of one reconstruction R = (1 / (k rho)) sum_j v_j v_j^T Delta (k independent bases): with
    X = v v^T Delta / rho, E[X_i X_j] = 2 Delta_i Delta_j (i != j), E[X_i^2] = Delta_i^2 m4 / rho^2 + |Delta|^2 -
    Delta_i^2, so Cov(R) = (diag(|Delta|^2 + Delta_i^2 (m4 / rho^2 - 3)) + Delta Delta^T) / k."""
    r, m4 = _moments(len(delta))
    return (np.diag(delta @ delta + delta**2 * (m4 / r**2 - 3)) + np.outer(delta, delta)) / k


def _chi2(mean: np.ndarray, target: np.ndarray, cov: np.ndarray, reps: int) -> float:
    e = mean - target
    return float(reps * e @ np.linalg.solve(cov, e))


@pytest.fixture(scope="module")
def reconstructions():
    """800 single-client reconstructions of one Delta (d = 16, K = K_l = 4), a fresh round and client seed
    each; the first 400 messages also decoded with a wrong round seed, the first 5 also encoded and decoded under
    the code's scaling (clip off)."""
    import torch

    from models.ferret.codec import FerretCodec

    d, K, reps = 16, 4, 800
    delta = np.random.default_rng(5).standard_normal(d) * 0.1
    paper = FerretCodec([d], K=K)
    code = FerretCodec([d], K=K, scaling="code", clip=math.inf)
    dt = [torch.as_tensor(delta, dtype=torch.float32)]
    recon, wrong, code_pairs = [], [], []
    for r in range(reps):
        msg = paper.encode(dt, 1000 + r, 5000 + r)
        assert msg.ks == [K]  # a single block gets K_l = K
        recon.append(paper.decode([msg], 1000 + r)[0].double().numpy())
        if r < 400:
            wrong.append(paper.decode([msg], 999_999 - r)[0].double().numpy())
        if r < 5:
            c = code.encode(dt, 1000 + r, 5000 + r)
            code_pairs.append((recon[-1], code.decode([c], 1000 + r)[0].double().numpy()))
    return delta, K, np.array(recon), np.array(wrong), code_pairs


def test_reconstruction_is_unbiased_at_small_d(reconstructions):
    delta, K, recon, _, _ = reconstructions
    reps, d = recon.shape
    cov = _covariance(delta, K)
    bound = sps.chi2(d).ppf(1 - 1e-4)
    assert _chi2(recon.mean(0), delta, cov, reps) < bound
    # the mean squared error is the closed form trace(Cov) = |Delta|^2 (m4 / rho^2 + d - 2) / K
    mse = ((recon - delta) ** 2).sum(1).mean()
    assert mse == pytest.approx(np.trace(cov), rel=0.1)
    r, m4 = _moments(d)
    assert np.trace(cov) == pytest.approx(delta @ delta * (m4 / r**2 + d - 2) / K)
    # a stub 20% off (say 1 / (K_l rho) replaced by 0.8 / (K_l rho)) fails the same test
    assert _chi2(0.8 * recon.mean(0), delta, cov, reps) > bound


def test_code_scaling_is_d_rho_times_the_paper_scaling_so_its_mean_is_about_a_third(reconstructions):
    from models.ferret.bases import rho

    delta, K, recon, _, code_pairs = reconstructions
    reps, d = recon.shape
    for paper_r, code_r in code_pairs:  # same seeds: the code's projection is d rho times the paper's
        np.testing.assert_allclose(code_r, d * rho(d) * paper_r, rtol=1e-5, atol=1e-7)
    code_mean = d * rho(d) * recon.mean(0)
    cov = (d * rho(d)) ** 2 * _covariance(delta, K)
    bound = sps.chi2(d).ppf(1 - 1e-4)
    assert _chi2(code_mean, d * rho(d) * delta, cov, reps) < bound  # mean d rho Delta
    assert _chi2(code_mean, delta, cov, reps) > 100 * bound  # biased: not Delta
    slope = code_mean @ delta / (delta @ delta)
    assert slope == pytest.approx(1 / 3, abs=0.03) and d * rho(d) == pytest.approx(1 / 3, abs=0.005)


def test_a_wrong_round_seed_gives_a_reconstruction_uncorrelated_with_delta(reconstructions):
    delta, K, recon, wrong, _ = reconstructions
    n, d = wrong.shape
    right = recon[:n]
    # E <R, Delta> / |Delta|^2 is 1 with the client's round seed, 0 with any other (sd ~ 0.5 / sqrt(400))
    assert (right @ delta).mean() / (delta @ delta) == pytest.approx(1.0, abs=0.15)
    assert abs((wrong @ delta).mean() / (delta @ delta)) < 0.15
    corr = [np.corrcoef(w, delta)[0, 1] for w in wrong]
    assert abs(np.mean(corr)) < 0.05
    assert np.mean([np.corrcoef(r, delta)[0, 1] for r in right]) > 0.2
    bound = sps.chi2(d).ppf(1 - 1e-4)
    assert _chi2(wrong.mean(0), delta, _covariance(delta, K), n) > bound  # the unbiasedness test rejects it


def test_k_rule_known_answers():
    from models.ferret.codec import k_rule

    assert k_rule([4.0, 2.0, 1.0, 0.0], 64) == [64, 32, 16, 2]
    assert k_rule([1.0, 0.02], 64) == [64, 2]  # floor(1.28) = 1 -> at least 2
    assert k_rule([3.0, 2.9], 10) == [10, 9]  # floor(9.67): floor, not round
    assert k_rule([0.5, 0.49999], 4) == [4, 3]
    assert k_rule([0.0, 0.0, 0.0], 64) == [2, 2, 2]  # nothing moved
    assert k_rule([5.0, 1.0, 3.0], 2) == [2, 2, 2]
    assert k_rule([], 8) == []
    norms = [0.3, 1.7, 0.01, 0.9]
    assert k_rule([1e6 * n for n in norms], 50) == k_rule(norms, 50) == [8, 50, 2, 26]  # scale-free
    for ks in (k_rule(norms, K) for K in (2, 3, 17, 200)):
        assert all(2 <= k for k in ks)
    assert max(k_rule(norms, 17)) == 17


def test_encode_uses_the_k_rule_and_counts_its_scalars():
    import torch

    from models.ferret.codec import FerretCodec, k_rule

    shapes = [(6, 5), (5,), (3, 6), ()]
    codec = FerretCodec(shapes, K=32)
    g = torch.Generator().manual_seed(0)
    delta = [
        torch.randn(s, generator=g) * scale for s, scale in zip(shapes, (1.0, 0.1, 0.5, 3.0), strict=True)
    ]
    msg = codec.encode(delta, 7, 8)
    assert msg.ks == k_rule([float(b.norm()) for b in delta], 32)
    assert msg.scalars == sum(msg.ks) + 1 and msg.client_seed == 8
    forced = codec.encode(delta, 7, 8, ks=[3, 2, 5, 2])
    assert forced.ks == [3, 2, 5, 2] and forced.scalars == 13
    assert [tuple(b.shape) for b in codec.decode([msg], 7)] == shapes


def test_choose_draws_distinct_sorted_candidates_from_the_seed():
    from models.ferret.codec import choose

    picks = choose(42, [64, 2, 10], 64)
    assert [len(p) for p in picks] == [64, 2, 10]
    assert np.array_equal(picks[0], np.arange(64))
    for p in picks:
        assert np.array_equal(p, np.unique(p)) and p.min() >= 0 and p.max() < 64
    again = choose(42, [64, 2, 10], 64)
    assert all(np.array_equal(a, b) for a, b in zip(picks, again, strict=True))
    others = [choose(s, [10], 64)[0] for s in range(43, 53)]
    assert any(not np.array_equal(o, picks[2]) for o in others)


def test_decoding_is_linear_in_the_messages_and_respects_weights():
    import torch

    from models.ferret.codec import FerretCodec

    shapes = [(4, 3), (5,), ()]
    codec = FerretCodec(shapes, K=8)
    g = torch.Generator().manual_seed(1)
    deltas = [[torch.randn(s, generator=g) for s in shapes] for _ in range(3)]
    msgs = [codec.encode(d, 77, 100 + i) for i, d in enumerate(deltas)]
    singles = [codec.decode([m], 77, weights=[1.0]) for m in msgs]

    def combo(w):
        return [sum(wi * s[b] for wi, s in zip(w, singles, strict=True)) for b in range(len(shapes))]

    for weights in (None, [0.2, 0.5, 0.3], [1.0, 0.0, 0.0], [2.0, -1.0, 0.5]):
        got = codec.decode(msgs, 77, weights=weights)
        want = combo([1 / 3] * 3 if weights is None else weights)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    # the weights are not ignored: two different weightings differ
    a, b = codec.decode(msgs, 77, weights=[1.0, 0.0, 0.0]), codec.decode(msgs, 77, weights=[0.0, 1.0, 0.0])
    assert not torch.allclose(a[0], b[0])
    # the message order does not matter
    for x, y in zip(codec.decode(msgs[::-1], 77), codec.decode(msgs, 77), strict=True):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-5, atol=1e-6)


def test_encoding_is_linear_in_delta_for_fixed_ks():
    import torch

    from models.ferret.codec import FerretCodec

    codec = FerretCodec([(3, 7), (4,)], K=16)
    g = torch.Generator().manual_seed(2)
    d1 = [torch.randn(3, 7, generator=g), torch.randn(4, generator=g)]
    d2 = [torch.randn(3, 7, generator=g), torch.randn(4, generator=g)]
    ks = [9, 3]
    m1, m2 = codec.encode(d1, 5, 6, ks=ks), codec.encode(d2, 5, 6, ks=ks)
    m = codec.encode([2 * a - 3 * b for a, b in zip(d1, d2, strict=True)], 5, 6, ks=ks)
    for c, c1, c2 in zip(m.coords, m1.coords, m2.coords, strict=True):
        np.testing.assert_allclose(c, 2 * c1 - 3 * c2, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda F: F([4], K=1), "K = 1"),
        (lambda F: F([4], K=0), "K = 0"),
        (lambda F: F([4], scaling="official"), "scaling 'official'"),
        (lambda F: F([]), "no trainable parameters"),
    ],
    ids=["K-1", "K-0", "scaling", "empty"],
)
def test_codec_refuses_bad_settings(make, message):
    from models.ferret.codec import FerretCodec

    with pytest.raises(ValueError, match=message):
        make(FerretCodec)


def test_codec_refuses_updates_and_messages_that_do_not_fit():
    import torch

    from models.ferret.codec import FerretCodec

    codec = FerretCodec([(2, 3), (4,)], K=4)
    with pytest.raises(ValueError, match="3 blocks, the model 2"):
        codec.encode([torch.zeros(2, 3), torch.zeros(4), torch.zeros(1)], 0, 0)
    with pytest.raises(ValueError, match="block 1: 5 entries, expected 4"):
        codec.encode([torch.zeros(2, 3), torch.zeros(5)], 0, 0)
    with pytest.raises(ValueError, match="mapping needs a codec built from a model"):
        codec.encode({"w": torch.zeros(2, 3)}, 0, 0)
    other = FerretCodec([(2, 3)], K=4).encode([torch.ones(2, 3)], 0, 0)
    with pytest.raises(ValueError, match="a message with 1 blocks; the model has 2"):
        codec.decode([other], 0)
    with pytest.raises(ValueError, match="no messages"):
        codec.decode([], 0)
    ok = codec.encode([torch.ones(2, 3), torch.ones(4)], 0, 0)
    with pytest.raises(ValueError, match="2 weights for 1 messages"):
        codec.decode([ok], 0, weights=[0.5, 0.5])
    named = FerretCodec(torch.nn.Linear(3, 2), K=4)
    with pytest.raises(ValueError, match="no block 'bias'"):
        named.encode({"weight": torch.zeros(2, 3)}, 0, 0)


# ------------------------------------------------------------------------------------------------ runs
def _tiny_data(seed: int = 0):
    from models.ferret.data import FedData

    g = np.random.default_rng(seed)
    x = g.standard_normal((140, 5)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    return FedData(x[:120], y[:120], np.arange(120) % 4, x[120:], y[120:], 3)


def _recording_codec():
    """A FerretCodec subclass that records the initial weights of each run and every message it encodes."""
    import torch

    from models.ferret.codec import FerretCodec

    class Recording(FerretCodec):
        starts: list[dict] = []
        encoded: list[tuple[list, object]] = []

        def __init__(self, model, *args, **kwargs):
            super().__init__(model, *args, **kwargs)
            Recording.starts.append({k: v.detach().clone() for k, v in model.state_dict().items()})

        def encode(self, delta, round_seed, client_seed, ks=None):
            msg = super().encode(delta, round_seed, client_seed, ks)
            Recording.encoded.append(([torch.as_tensor(b).clone() for b in delta], msg, round_seed))
            return msg

    return Recording


TINY = {"rounds": 2, "per_round": 2, "local_steps": 2, "batch": 8, "zo_steps": 3, "zo_pool": 8, "hidden": 4}
TINY_D = 5 * 4 + 4 + 4 * 3 + 3  # 39 parameters in 4 blocks


def test_uplink_counters_of_every_method():
    import torch

    from models.ferret.codec import FerretCodec, k_rule
    from models.ferret.federated import Config, method, run

    data, cfg = _tiny_data(), Config(**TINY)
    Recording = _recording_codec()
    uplinks, errors = {}, {}
    for name in ("fedavg", "ferret", "zo", "fedzo"):
        rows, net = run(data, method(name, K=8), cfg, seed=0, codec_cls=Recording)
        assert [r["round"] for r in rows] == [1, 2]
        assert sum(p.numel() for p in net.parameters()) == TINY_D
        uplinks[name] = [r["uplink"] for r in rows]
        errors[name] = [r["recon_error"] for r in rows]
    assert uplinks["fedavg"] == [TINY_D, TINY_D] and uplinks["fedzo"] == [TINY_D, TINY_D]
    assert uplinks["zo"] == [TINY["zo_steps"] + 1] * 2
    for name in ("fedavg", "zo", "fedzo"):
        assert all(math.isnan(e) for e in errors[name]), name
    # Ferret: per client sum_l K_l + 1 with K_l the rule on its own update's block norms; the row is the mean
    enc = Recording.encoded
    assert len(enc) == TINY["rounds"] * TINY["per_round"]
    for r in range(TINY["rounds"]):
        round_msgs = enc[r * 2 : r * 2 + 2]
        for delta, msg, _ in round_msgs:
            assert msg.ks == k_rule([float(b.norm()) for b in delta], 8)
            assert msg.scalars == sum(msg.ks) + 1 <= 4 * 8 + 1
        assert uplinks["ferret"][r] == pytest.approx(np.mean([m.scalars for _, m, _ in round_msgs]))
        # recon_error: the decoded mean against the clients' true mean update
        codec = FerretCodec([(4, 5), (4,), (3, 4), (3,)], K=8)
        got = torch.cat(
            [b.reshape(-1) for b in codec.decode([m for _, m, _ in round_msgs], round_msgs[0][2])]
        )
        true = torch.cat(
            [torch.stack(bs).mean(0).reshape(-1) for bs in zip(*(d for d, _, _ in round_msgs), strict=True)]
        )
        assert errors["ferret"][r] == pytest.approx(float((got - true).norm() / true.norm()), rel=1e-4)
    assert uplinks["ferret"][0] < TINY_D
    assert enc[0][2] != enc[2][2]  # fresh seeds: a new round seed each round


def test_fedavg_and_ferret_share_start_selection_and_minibatches():
    import torch

    from models.ferret.federated import Config, method, run

    data, cfg = _tiny_data(1), Config(**{**TINY, "rounds": 1, "per_round": 3})
    Recording = _recording_codec()
    _, fedavg_net = run(data, method("fedavg"), cfg, seed=3, codec_cls=Recording)
    run(data, method("ferret", K=8), cfg, seed=3, codec_cls=Recording)
    start_fedavg, start_ferret = Recording.starts
    assert all(torch.equal(start_fedavg[k], start_ferret[k]) for k in start_fedavg)
    # FedAvg's one round (slr 1) is its start minus the mean of the updates Ferret's clients encoded
    deltas = [d for d, _, _ in Recording.encoded]
    assert len(deltas) == 3
    for (name, p), *blocks in zip(fedavg_net.named_parameters(), *deltas, strict=True):
        want = start_fedavg[name] - torch.stack(blocks).mean(0)
        np.testing.assert_allclose(p.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # another seed starts elsewhere
    run(data, method("fedavg"), cfg, seed=4, codec_cls=Recording)
    assert not torch.equal(Recording.starts[-1]["0.weight"], start_fedavg["0.weight"])


# ------------------------------------------------------------------------------------------------ partition
def _labels(classes: int = 10, per_class: int = 100) -> np.ndarray:
    return np.repeat(np.arange(classes), per_class)


def test_dirichlet_partition_owns_every_row_once_with_min_rows():
    from models.ferret.data import dirichlet_partition

    y = _labels()
    owner = dirichlet_partition(y, 20, 0.5, np.random.default_rng(0), min_rows=10)
    assert owner.shape == y.shape and owner.dtype.kind == "i"
    assert owner.min() >= 0 and owner.max() < 20  # one owner per row, in range
    counts = np.bincount(owner, minlength=20)
    assert counts.sum() == len(y) and counts.min() >= 10
    again = dirichlet_partition(y, 20, 0.5, np.random.default_rng(0), min_rows=10)
    assert np.array_equal(owner, again)
    other = dirichlet_partition(y, 20, 0.5, np.random.default_rng(1), min_rows=10)
    assert not np.array_equal(owner, other)


def _skew(owner: np.ndarray, y: np.ndarray, clients: int) -> float:
    """Mean over clients of the share of its rows in its largest class (1 / classes when i.i.d.)."""
    table = np.zeros((clients, y.max() + 1))
    np.add.at(table, (owner, y), 1)
    return float((table.max(1) / table.sum(1)).mean())


def test_small_alpha_gives_more_label_skew():
    from models.ferret.data import dirichlet_partition

    y = _labels()
    skews = {
        alpha: np.mean(
            [_skew(dirichlet_partition(y, 10, alpha, np.random.default_rng(s), 5), y, 10) for s in range(3)]
        )
        for alpha in (0.05, 1.0, 100.0)
    }
    assert skews[0.05] > 0.6 > skews[1.0] > skews[100.0]
    assert skews[100.0] < 0.2  # close to i.i.d. (0.1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"clients": 20, "alpha": 0.5, "min_rows": 10, "n": 150}, "clients 20: 150 training rows"),
        ({"clients": 4, "alpha": 0.0, "min_rows": 1, "n": 100}, "alpha 0.0"),
        ({"clients": 4, "alpha": -1.0, "min_rows": 1, "n": 100}, "alpha -1.0"),
        ({"clients": 0, "alpha": 0.5, "min_rows": 1, "n": 100}, "clients 0"),
        (
            {"clients": 10, "alpha": 0.001, "min_rows": 9, "n": 100},
            "alpha 0.001, clients 10: no Dirichlet split",
        ),
    ],
    ids=["too-few-rows", "alpha-0", "alpha-negative", "no-clients", "no-draw-fits"],
)
def test_impossible_partitions_are_user_errors_naming_the_value(kwargs, message):
    from icml25.errors import UserError
    from models.ferret.data import dirichlet_partition

    kwargs = dict(kwargs)
    y = _labels(5, kwargs.pop("n") // 5)
    with pytest.raises(UserError, match=message):
        dirichlet_partition(y, g=np.random.default_rng(0), tries=20, **kwargs)


# ------------------------------------------------------------------------ bases, again: in a second process
# last in the module, so that the process started with the module has imported torch by now
def test_bases_regenerate_bit_identically_in_a_second_process(second_process):
    import torch

    torch.manual_seed(7)
    np.random.seed(7)
    here = _regen_hash()
    out, err = second_process.communicate(timeout=120)
    assert second_process.returncode == 0, err
    assert out.strip() == here
