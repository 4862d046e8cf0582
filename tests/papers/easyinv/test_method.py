"""easyinv: the method's own properties, each against an independent computation.

``next_step`` against diffusers' ``DDIMInverseScheduler`` (and the reconstruction against ``DDIMScheduler``), the
round trip with the exact eps of Gaussian data, the window's open boundaries, eta = 1 and an empty window being
DDIM inversion bit for bit, the broken variants (stubs) changing what they should, the notebook order against a
hand loop of the official code, fixed-point inversion, bf16 rounding, PSNR / SSIM hand values, the Python entry
(with a diffusers UNet) and its errors, the eps-MLP's training and its save/load round trip.

torch (and everything importing it) is imported inside the tests only."""

from __future__ import annotations

import math

import numpy as np
import pytest

# The window steps of the SD-1.4 window (0.05, 0.2) at N = 50: the open interval 2.5 < i < 12.5.
SD14_STEPS = list(range(3, 13))


def _eps_nonlinear(z, t):
    """A fixed, non-linear stand-in for the network (eps on the mixed latent then differs from eps on the raw)."""
    import torch

    return 0.8 * torch.tanh(1.3 * z + t / 1000.0)


def _gaussian_eps(ac, mu: float, s: float):
    """The exact eps of data x0 ~ N(mu, s^2 I): E[n | z] for z = sqrt(a) x0 + sqrt(1 - a) n."""

    def eps(z, t):
        a = ac[t]
        return (1 - a) ** 0.5 * (z - a**0.5 * mu) / (a * s * s + 1 - a)

    return eps


def _images(n: int = 4, seed: int = 0):
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 1, 8, 8, generator=g) * 2 - 1


def _ddim_by_hand(eps, x, ac, steps):
    """Plain DDIM inversion written out from next_step (no window, no mixing)."""
    from models.easyinv import ddim

    z = x
    for t in ddim.timesteps(steps):
        z = ddim.next_step(eps(z, t), t, z, ac, steps)
    return z


# ---------------------------------------------------------------------------------- against diffusers
def _diffusers_schedulers(steps: int):
    from diffusers.schedulers.scheduling_ddim import DDIMScheduler
    from diffusers.schedulers.scheduling_ddim_inverse import DDIMInverseScheduler

    sched = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    inverse = DDIMInverseScheduler.from_config(sched.config)
    sched.set_timesteps(steps)
    inverse.set_timesteps(steps)
    return sched, inverse


def test_next_step_matches_diffusers_ddim_inverse_scheduler_step_by_step():
    """diffusers 0.42.1's inverse scheduler ("leading" spacing, steps_offset 1) visits t = 1, 21, ..., 981 and its
    ``step(eps, t, z)`` goes from alpha_bar[t - 20] (alpha_bar[0] for t = 1, set_alpha_to_one=False) to
    alpha_bar[t]: the very convention of the official ``next_step``, with no off-by-one. So every step is
    compared at the same t, and the whole inversion loop too."""
    import torch

    from models.easyinv import ddim

    _, inverse = _diffusers_schedulers(50)
    ac = ddim.alphas_cumprod()
    assert torch.equal(inverse.alphas_cumprod, ac)  # the same scaled-linear schedule, float32
    assert inverse.timesteps.tolist() == ddim.timesteps(50) == list(range(1, 1000, 20))
    assert float(inverse.initial_alpha_cumprod) == float(ac[0])

    def eps(z, t):
        return 0.1 * z + 0.01 * int(t) / 1000

    z0 = torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(0))
    z_ours, z_theirs = z0.clone(), z0.clone()
    for i, t in enumerate(inverse.timesteps):
        # one step from the same input: the two formulas agree
        e = eps(z_theirs, t)
        one = ddim.next_step(e, int(t), z_theirs, ac, 50)
        z_theirs = inverse.step(e, t, z_theirs).prev_sample
        assert torch.allclose(one, z_theirs, rtol=0, atol=1e-6), i
        # the two loops, each on its own trajectory
        z_ours = ddim.next_step(eps(z_ours, int(t)), int(t), z_ours, ac, 50)
        assert torch.allclose(z_ours, z_theirs, rtol=0, atol=1e-6), i
    # and ddim.invert (eta = 1) is that loop
    inv = ddim.invert(eps, z0, ac, 50, eta=1.0)
    assert torch.allclose(inv.z_T, z_theirs, rtol=0, atol=1e-6)
    assert float((inv.z_T - z0).abs().max()) > 0.1  # the loop moved the latent: the comparison is not vacuous


def test_reconstruct_matches_diffusers_ddim_scheduler():
    import torch

    from models.easyinv import ddim

    sched, _ = _diffusers_schedulers(50)
    ac = ddim.alphas_cumprod()
    assert sched.timesteps.tolist() == ddim.timesteps(50)[::-1]

    def eps(z, t):
        return 0.1 * z + 0.01 * int(t) / 1000

    z = torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(1))
    ours, calls = ddim.reconstruct(eps, z, ac, 50)
    for t in sched.timesteps:
        z = sched.step(eps(z, t), t, z, eta=0.0).prev_sample
    assert calls == 50
    assert torch.allclose(ours, z, rtol=0, atol=1e-6)


# ------------------------------------------------------------------------ exact eps of Gaussian data
def test_exact_gaussian_eps_round_trip_error_falls_with_n():
    """With the exact eps of N(0.3, 0.5^2), DDIM inversion then DDIM reconstruction returns x0 up to the
    first-order discretisation error: measured max |x_rec - x0| over 16 draws 0.44 (N = 10), 0.086 (N = 50),
    0.021 (N = 200), i.e. ~1/N. Asserted: strictly falling, below 0.04 at N = 200 (~2x margin), and at least
    10x smaller at 200 than at 10 (measured 21x)."""
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    mu, s = 0.3, 0.5
    eps = _gaussian_eps(ac, mu, s)
    x = mu + s * torch.randn(16, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    errors = []
    for steps in (10, 50, 200):
        inv = ddim.invert(eps, x, ac, steps, eta=1.0)
        rec, calls = ddim.reconstruct(eps, inv.z_T, ac, steps)
        assert inv.calls == calls == steps
        errors.append(float((rec - x).abs().max()))
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 0.04, errors
    assert errors[0] / errors[2] > 10, errors
    # z_T is (close to) a standard normal sample: the inversion really maps the data to noise
    z = ddim.invert(eps, x, ac, 200, eta=1.0).z_T
    assert abs(float(z.mean())) < 0.1 and abs(float(z.std()) - 1) < 0.1


def test_the_gaussian_eps_is_the_posterior_mean_of_the_noise():
    """The formula the previous test relies on, checked by Monte Carlo regression at one t."""
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    mu, s, t = 0.3, 0.5, 401
    g = torch.Generator().manual_seed(0)
    x0 = mu + s * torch.randn(200_000, generator=g)
    n = torch.randn(200_000, generator=g)
    a = ac[t]
    z = a**0.5 * x0 + (1 - a) ** 0.5 * n
    slope = float(((z - z.mean()) * (n - n.mean())).mean() / z.var())
    want = _gaussian_eps(ac, mu, s)(torch.tensor([1.0, 0.0]), t)
    assert slope == pytest.approx(float(want[0] - want[1]), rel=0.02)
    assert float(n.mean() + slope * (0 - z.mean())) == pytest.approx(float(want[1]), abs=0.01)


# ------------------------------------------------------------------------------------ the window
def test_window_open_boundaries():
    from models.easyinv import ddim

    assert [i for i in range(50) if ddim.in_window(i, 50, 0.05, 0.2)] == SD14_STEPS
    assert [i for i in range(50) if ddim.in_window(i, 50, 0.85, 0.1)] == [43, 44, 45, 46, 47]
    assert [i for i in range(10) if ddim.in_window(i, 10, 0.05, 0.2)] == [1, 2]
    # i = 0 never (there is no previous latent), even when the interval covers it
    for s, length in ((0.05, 0.2), (0.0, 1.0), (-0.1, 0.5), (0.0, 0.5)):
        assert not ddim.in_window(0, 50, s, length)
    assert ddim.in_window(1, 50, -0.1, 0.5)
    # open at both ends: boundaries that fall on integers (exactly, in binary) are excluded
    assert [i for i in range(20) if ddim.in_window(i, 20, 0.25, 0.25)] == [6, 7, 8, 9]
    assert [i for i in range(8) if ddim.in_window(i, 8, 0.125, 0.5)] == [2, 3, 4]


def test_window_is_the_official_condition():
    """in_window is utilsV14.invert's ``(s + l) N > i > s N and i > 0``, floating point included: with s = 0.1,
    l = 0.2 and N = 20 the upper bound is 0.30000000000000004 * 20 = 6.000000000000001, so i = 6 is inside in
    the official code and here alike."""
    from models.easyinv import ddim

    for steps in (10, 20, 25, 50, 100):
        for s in (0.0, 0.05, 0.1, 0.2, 0.3, 0.85):
            for length in (0.0, 0.1, 0.2, 0.3):
                official = [i for i in range(steps) if (s + length) * steps > i > s * steps and i > 0]
                assert [i for i in range(steps) if ddim.in_window(i, steps, s, length)] == official
    assert ddim.in_window(6, 20, 0.1, 0.2)
    assert not any(ddim.in_window(i, 50, 0.05, 0.0) for i in range(50))  # an empty window


# ------------------------------------------------------------------------ eta = 1, empty window, stubs
def test_eta_one_and_an_empty_window_are_ddim_inversion_bit_for_bit():
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    x = _images()
    hand = _ddim_by_hand(_eps_nonlinear, x, ac, 50)
    base = ddim.invert(_eps_nonlinear, x, ac, 50, eta=1.0, window=(0.05, 0.2))
    assert torch.equal(base.z_T, hand)
    assert not any(base.mixed) and base.calls == 50
    empty = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5, window=(0.05, 0.0))
    assert torch.equal(empty.z_T, hand) and not any(empty.mixed)
    # while a real window with eta < 1 moves z_T
    easy = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5, window=(0.05, 0.2))
    assert float((easy.z_T - hand).abs().max()) > 1e-3
    assert [i for i, m in enumerate(easy.mixed) if m] == SD14_STEPS and easy.calls == 50


def test_stub_mix_regardless_mixes_at_eta_one():
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    x = _images()
    base = ddim.invert(_eps_nonlinear, x, ac, 50, eta=1.0)
    stub = ddim.invert(_eps_nonlinear, x, ac, 50, eta=1.0, mix_regardless=True)
    assert float((stub.z_T - base.z_T).abs().max()) > 1e-3
    assert [i for i, m in enumerate(stub.mixed) if m] == SD14_STEPS
    i = SD14_STEPS[0]
    assert torch.equal(stub.inputs[i], 0.5 * stub.raw[i] + 0.5 * stub.inputs[i - 1])
    for j in range(i + 1):  # identical up to the window's first un-mixed latent
        assert torch.equal(stub.raw[j], base.raw[j])
    # with eta < 1 the stub does what the method does anyway
    easy = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5)
    assert torch.equal(ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5, mix_regardless=True).z_T, easy.z_T)


def test_stub_eps_on_mixed_predicts_on_the_mixed_latent():
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    x = _images()
    ts = ddim.timesteps(50)
    easy = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5)
    stub = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5, eps_on_mixed=True)
    assert stub.calls == 50
    assert float((stub.z_T - easy.z_T).abs().max()) > 1e-4  # measured 5.8e-4
    for i in SD14_STEPS:
        assert torch.equal(stub.eps[i], _eps_nonlinear(stub.inputs[i], ts[i]))
        assert not torch.allclose(stub.eps[i], _eps_nonlinear(stub.raw[i], ts[i]))
        assert torch.equal(easy.eps[i], _eps_nonlinear(easy.raw[i], ts[i]))


def test_stub_repredict_costs_the_window_steps_in_extra_calls():
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    x = _images()
    easy = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5)
    stub = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5, repredict=True)
    assert easy.calls == 50 and stub.calls == 50 + len(SD14_STEPS)
    assert float((stub.z_T - easy.z_T).abs().max()) > 1e-4  # measured 5.8e-4
    # the re-prediction is eps on the mixed latent: the same trajectory as eps_on_mixed
    on_mixed = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.5, eps_on_mixed=True)
    assert torch.equal(stub.z_T, on_mixed.z_T)
    sdxl = ddim.invert(_eps_nonlinear, x, ac, 50, eta=0.8, window=(0.85, 0.1), repredict=True)
    assert sdxl.calls == 55


# ------------------------------------------------------------------------------------ the order
def test_notebook_order_mixes_the_input_and_predicts_eps_on_the_raw_latent():
    """Each window step against the definition, and the whole inversion against a hand loop written from the
    official utilsV14.invert (eps on the un-mixed latents; mix with last_latent; last_latent = the mixed latent;
    next_step on the mixed latent)."""
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    x, eta, ts = _images(), 0.5, ddim.timesteps(50)
    inv = ddim.invert(_eps_nonlinear, x, ac, 50, eta=eta, window=(0.05, 0.2))
    assert len(inv.inputs) == len(inv.raw) == len(inv.eps) == 50
    for i, t in enumerate(ts):
        assert torch.equal(inv.eps[i], _eps_nonlinear(inv.raw[i], t)), i
        if i in SD14_STEPS:
            assert inv.mixed[i]
            assert torch.equal(inv.inputs[i], eta * inv.raw[i] + (1 - eta) * inv.inputs[i - 1]), i
            assert not torch.equal(inv.inputs[i], inv.raw[i])
        else:
            assert not inv.mixed[i] and torch.equal(inv.inputs[i], inv.raw[i]), i
        z_next = inv.raw[i + 1] if i + 1 < 50 else inv.z_T
        assert torch.equal(z_next, ddim.next_step(inv.eps[i], t, inv.inputs[i], ac, 50)), i

    latents, last = x, None
    for i, t in enumerate(ts):
        noise = _eps_nonlinear(latents, t)
        if 12.5 > i > 2.5 and i > 0:
            latents = eta * latents + (1 - eta) * last
        last = latents
        latents = ddim.next_step(noise, t, latents, ac, 50)
    assert torch.equal(inv.z_T, latents)


def test_after_step_order_mixes_the_output_instead():
    """example.py's 4-line form: z_{i+1} = eta next_step(eps(z_i), t, z_i) + (1 - eta) z_i in the window."""
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    x, eta, ts = _images(), 0.5, ddim.timesteps(50)
    notebook = ddim.invert(_eps_nonlinear, x, ac, 50, eta=eta)
    after = ddim.invert(_eps_nonlinear, x, ac, 50, eta=eta, order="after_step")
    assert float((after.z_T - notebook.z_T).abs().max()) > 1e-3
    assert not any(after.mixed) and after.calls == 50
    z = x
    for i, t in enumerate(ts):
        assert torch.equal(after.inputs[i], z), i
        z_next = ddim.next_step(_eps_nonlinear(z, t), t, z, ac, 50)
        if i in SD14_STEPS:
            z_next = eta * z_next + (1 - eta) * z
        z = z_next
    assert torch.equal(after.z_T, z)
    with pytest.raises(ValueError, match="order must be one of"):
        ddim.invert(_eps_nonlinear, x, ac, 50, order="before")


# ---------------------------------------------------------------------------------- fixed point
def test_fixed_point_costs_one_plus_iters_per_step_and_is_at_least_as_accurate():
    import torch

    from models.easyinv import ddim

    ac = ddim.alphas_cumprod()
    mu, s = 0.3, 0.5
    eps = _gaussian_eps(ac, mu, s)
    x = mu + s * torch.randn(8, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    for steps, iters in ((10, 3), (20, 1), (50, 6)):
        plain = ddim.invert(eps, x, ac, steps, eta=1.0)
        fixed = ddim.invert(eps, x, ac, steps, eta=1.0, fixed_point_iters=iters)
        assert fixed.calls == (1 + iters) * steps
        err_plain = float((ddim.reconstruct(eps, plain.z_T, ac, steps)[0] - x).abs().max())
        err_fixed = float((ddim.reconstruct(eps, fixed.z_T, ac, steps)[0] - x).abs().max())
        assert err_fixed <= err_plain, (steps, err_fixed, err_plain)
    assert err_fixed < 0.1 * err_plain  # at N = 50 with 6 iterations: far more accurate (measured ~5000x)


# ---------------------------------------------------------------------------------------- bf16
def test_bf16_latents_are_representable_in_bfloat16_after_every_step():
    import torch

    from models.easyinv import ddim
    from models.easyinv.net import EpsMLP

    torch.manual_seed(0)
    model = EpsMLP(hidden=32).eval()
    ac = ddim.alphas_cumprod()
    x = _images()
    assert not torch.equal(x, x.bfloat16().float())  # the input itself is not: rounding has work to do

    def representable(z):
        return torch.equal(z, z.bfloat16().float())

    for kwargs in ({"eta": 0.5}, {"eta": 1.0, "fixed_point_iters": 2}, {"eta": 0.5, "order": "after_step"}):
        inv = ddim.invert(model, x, ac, 20, precision="bf16", **kwargs)
        assert all(representable(z) for z in inv.raw), kwargs  # every step's output (and the rounded x0)
        assert representable(inv.z_T), kwargs
        rec, _ = ddim.reconstruct(model, inv.z_T, ac, 20, precision="bf16")
        assert representable(rec)
        fp32 = ddim.invert(model, x, ac, 20, precision="fp32", **kwargs)
        assert not representable(fp32.z_T) and not torch.equal(fp32.z_T, inv.z_T)
    with pytest.raises(ValueError, match="precision must be one of"):
        ddim.invert(model, x, ac, 20, precision="fp16")


# ------------------------------------------------------------------------------------ metrics
def test_psnr_and_ssim_hand_values():
    import torch

    from models.easyinv import experiment

    x = _images(3)
    assert experiment.psnr(x, x).shape == (3,)
    assert torch.all(experiment.psnr(x, x) > 100)  # identical: MSE clamped at 1e-20, 10 log10(4e20) = 206
    assert experiment.psnr(x, x)[0].item() == pytest.approx(10 * math.log10(4 / 1e-20), rel=1e-5)
    assert torch.allclose(experiment.ssim(x, x), torch.ones(3), atol=1e-6)
    # a constant offset c: MSE = c^2, PSNR = 10 log10(4 / c^2) (range 2)
    for c in (0.1, 0.5):
        assert torch.allclose(
            experiment.psnr(x, x + c), torch.full((3,), 10 * math.log10(4 / c**2)), atol=1e-3
        )
    # SSIM of a constant offset: same variance, covariance = variance, only the means differ
    c1 = (0.01 * 2) ** 2
    mu = x.flatten(1).mean(1)
    want = (2 * mu * (mu + 0.5) + c1) / (mu**2 + (mu + 0.5) ** 2 + c1)
    assert torch.allclose(experiment.ssim(x, x + 0.5), want, atol=1e-5)
    # all-zero against all-0.5: PSNR 10 log10(4 / 0.25) = 12.04 dB; SSIM c1 / (0.25 + c1) = 0.0015974
    zero, half = torch.zeros(1, 1, 8, 8), torch.full((1, 1, 8, 8), 0.5)
    assert experiment.psnr(zero, half).item() == pytest.approx(10 * math.log10(16), abs=1e-4)
    assert experiment.ssim(zero, half).item() == pytest.approx(c1 / (0.25 + c1), rel=1e-4)
    # a negated image: covariance = -variance drives SSIM negative
    centred = x - x.mean(dim=(1, 2, 3), keepdim=True)
    assert experiment.ssim(centred, -centred).max().item() < 0


# ---------------------------------------------------------------------------------- the Python entry
@pytest.mark.slow  # importing diffusers' UNet stack costs ~3-5 s on 2 cores
def test_api_invert_with_a_diffusers_unet():
    import torch
    from diffusers.models.unets.unet_2d import UNet2DModel
    from diffusers.schedulers.scheduling_ddim import DDIMScheduler

    from models.easyinv import api, ddim

    torch.manual_seed(0)
    unet = UNet2DModel(
        sample_size=8,
        in_channels=1,
        out_channels=1,
        block_out_channels=(8, 16),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
    ).eval()
    x = _images(2)
    out = api.invert(unet, x, steps=10)
    assert out.z_T.shape == (2, 1, 8, 8) and out.calls == 10 and torch.isfinite(out.z_T).all()
    assert [i for i, m in enumerate(out.mixed) if m] == [1, 2]  # eta 0.5 and the SD-1.4 window by default
    assert not out.z_T.requires_grad
    # the same as calling the UNet by hand
    with torch.no_grad():
        hand = ddim.invert(
            lambda z, t: unet(z, torch.full((z.shape[0],), t)).sample, x, ddim.alphas_cumprod(), 10, 0.5
        )
    assert torch.equal(out.z_T, hand.z_T)
    rec, calls = api.reconstruct(unet, out.z_T, steps=10)
    assert rec.shape == x.shape and calls == 10
    # a diffusers scheduler in the place of alphas_cumprod: its schedule (the same one here)
    sched = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear")
    assert torch.equal(api.invert(unet, x, sched, steps=10).z_T, out.z_T)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"eta": 1.5}, "eta must be in [0, 1], got 1.5"),
        ({"eta": float("nan")}, "eta must be in [0, 1], got nan"),
        ({"window": (0.9, 0.2)}, "window (s, l) must lie in [0, 1] with s + l <= 1, got (0.9, 0.2)"),
        ({"window": (0.1,)}, "got (0.1,)"),
        ({"steps": 1}, "steps must be an integer >= 2 that divides 1000, got 1"),
        ({"steps": 3}, "steps must be an integer >= 2 that divides 1000, got 3"),
        ({"steps": 2.0}, "got 2.0"),
        ({"precision": "fp16"}, "precision must be one of fp32, bf16, got 'fp16'"),
        ({"fixed_point_iters": -1}, "fixed_point_iters must be >= 0, got -1"),
        ({"alphas_cumprod": [0.5] * 10}, "alphas_cumprod must hold 1000 values, got shape (10,)"),
    ],
)
def test_api_invert_bad_arguments_are_user_errors_naming_the_value(kwargs, message):
    from icml25.errors import UserError
    from models.easyinv import api

    calls = []

    def eps(z, t):
        calls.append(t)
        return z

    with pytest.raises(UserError) as info:
        api.invert(eps, np.zeros((1, 1, 8, 8), dtype=np.float32), **kwargs)
    assert message in str(info.value)
    assert not calls  # refused before any network call


def test_api_refuses_what_is_not_an_eps_model():
    from icml25.errors import UserError
    from models.easyinv import api

    with pytest.raises(UserError, match="eps must be a callable eps"):
        api.invert(42, np.zeros((1, 1, 8, 8)))


# ------------------------------------------------------------------------------------ the eps-MLP
def test_eps_mlp_trains_deterministically_and_round_trips_through_safetensors(tmp_path):
    """train_eps for 30 steps on random images: the loss falls on average (measured over seeds 0-4: the mean of
    the first 10 steps 0.94-0.95, of the last 10 0.75), the same seed gives the same run, another seed another;
    save_model / load_model keep the outputs bit for bit."""
    import torch

    from models.easyinv import experiment
    from models.easyinv.net import EpsMLP, train_eps

    x = torch.rand(64, 1, 8, 8, generator=torch.Generator().manual_seed(0)) * 2 - 1
    model, history = train_eps(x, 30, seed=0, hidden=64, lr=1e-2, batch=64)
    assert isinstance(model, EpsMLP) and len(history) == 30 and all(map(math.isfinite, history))
    assert np.mean(history[-10:]) < 0.9 * np.mean(history[:10]), history
    again, history2 = train_eps(x, 30, seed=0, hidden=64, lr=1e-2, batch=64)
    assert history2 == history
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True)
    )
    _, other = train_eps(x, 30, seed=1, hidden=64, lr=1e-2, batch=64)
    assert other != history

    path = tmp_path / "eps.safetensors"
    experiment.save_model(model, path)
    loaded = experiment.load_model(path)
    assert loaded.shape == (1, 8, 8) and loaded.net[0].out_features == 64 and not loaded.training
    z = torch.randn(5, 1, 8, 8, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        for t in (1, 481, torch.tensor([1, 21, 41, 61, 981])):
            assert torch.equal(loaded(z, t), model(z, t))
    assert not torch.equal(model(z, 1), model(z, 981))  # t matters


def test_load_model_refuses_weights_of_another_shape(tmp_path):
    import torch

    from icml25.errors import UserError
    from models.common.weights import save_weights
    from models.easyinv import experiment

    path = tmp_path / "bad.safetensors"
    save_weights(
        path, {"net.0.weight": torch.zeros(3, 3)}, {"kind": experiment.KIND, "shape": [1, 8, 8], "hidden": 8}
    )
    with pytest.raises(UserError, match="the weights do not match the eps model"):
        experiment.load_model(path)
