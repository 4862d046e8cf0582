"""The user entry: ASD on any denoiser with its DDPM schedule, and the CLI's models.

    import numpy as np
    from models.autospeculative import asd_sample

    def denoiser(x_t, timesteps):          # NumPy in, NumPy out: (B, *shape), (B,) ints -> (B, *shape)
        return my_model(x_t, timesteps)    # an x0 (or, with prediction="eps", a noise) prediction

    samples, stats = asd_sample(denoiser, alphas_cumprod, K=256, L=256, n=16, seed=0, shape=(3, 32, 32))

A diffusers UNet fits as ``lambda x, ts: unet(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(ts))
.sample.numpy()`` with its scheduler's ``alphas_cumprod`` and ``prediction="eps"`` (documented, not run here: no
checkpoint can be downloaded). The K + 1 timesteps are evenly spaced over the schedule, noisiest first; chains
start from N(0, t_0 I) in SL coordinates (pure noise). Bad input raises :class:`~icml25.errors.UserError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from icml25.errors import UserError

from .denoisers import NETWORK_KIND, Mixture, from_prediction
from .samplers import FROZEN, Result, asd, sequential
from .sl import cosine_grid, from_sl, grid_from_alphas_cumprod

TRAINED = Path("data/autospeculative/trained/main/x0net.safetensors")


def check(K: int, L: int, n: int) -> None:
    if K < 2:
        raise UserError(f"K = {K}: need at least 2 steps")
    if not 1 <= L <= K:
        raise UserError(f"L = {L}: the window must lie in [1, K = {K}]")
    if n < 1:
        raise UserError(f"n = {n}: need at least 1 sample")


def _stats(res: Result) -> dict:
    return {
        "calls": res.calls,
        "evaluations": res.evaluations,
        "rounds": res.rounds,
        "judged": res.judged,
        "accepted": res.accepted,
    }


def asd_sample(
    denoiser: Callable[[np.ndarray, np.ndarray], np.ndarray],
    alphas_cumprod: Sequence[float] | np.ndarray,
    K: int,
    L: int,
    n: int,
    seed: int = 0,
    prediction: str = "x0",
    *,
    shape: Sequence[int],
    frozen_mean: str = "stale",
) -> tuple[np.ndarray, dict]:
    """n samples of shape ``shape`` by ASD with window L over K steps of the schedule; returns (samples (n,
    *shape), stats: per chain ``calls``, ``evaluations``, ``rounds``; per step ``judged`` and ``accepted``)."""
    check(K, L, n)
    if prediction not in ("x0", "eps"):
        raise UserError(f"prediction = {prediction!r}: must be 'x0' or 'eps'")
    if frozen_mean not in FROZEN:
        raise UserError(f"frozen_mean = {frozen_mean!r}: must be one of {', '.join(FROZEN)}")
    shape = tuple(int(s) for s in shape)
    if not shape or min(shape) < 1:
        raise UserError(f"shape = {shape}: need positive sizes")
    try:
        t, steps = grid_from_alphas_cumprod(np.asarray(alphas_cumprod, np.float64), K)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    d = int(np.prod(shape))

    def m(y: np.ndarray, tt: np.ndarray) -> np.ndarray:
        ts = steps[np.clip(np.searchsorted(t, tt), 0, K)]
        x = from_sl(y, tt).reshape(len(y), *shape)
        out = denoiser(x, ts)
        out = out.detach().cpu().numpy() if hasattr(out, "detach") else np.asarray(out)
        return from_prediction(out.reshape(len(y), d).astype(np.float64), y, tt, prediction)

    rng = np.random.default_rng(seed)
    y0 = np.sqrt(t[0]) * rng.standard_normal((n, d))
    res = asd(m, t, y0, L, rng, frozen_mean=frozen_mean)
    return res.samples.reshape(n, *shape), _stats(res)


def model(name: str):
    """(denoiser, start(n, t0, rng), dim) of ``gmm``, ``digits`` (the pipeline's trained network) or a
    ``.safetensors`` checkpoint the train stage wrote."""
    if name == "gmm":
        mix = Mixture.circle()
        return mix, mix.start, mix.dim
    if name == "digits" or name.endswith(".safetensors"):
        from models.common.weights import load_weights

        path = TRAINED if name == "digits" else Path(name)
        if name == "digits" and not path.is_file():
            raise UserError(
                f"{path}: no trained digits network here; run `dvc repro train@autospeculative` first"
            )
        tensors, meta = load_weights(
            path, NETWORK_KIND
        )  # a foreign or missing file fails before Lightning loads
        from .network import NetDenoiser, build

        net = build(tensors, meta, path)
        return NetDenoiser(net), lambda n, t0, rng: np.sqrt(t0) * rng.standard_normal((n, net.dim)), net.dim
    raise UserError(f"--model {name!r}: must be gmm, digits or a .safetensors checkpoint")


def sample(
    loaded: tuple,
    K: int,
    L: int,
    n: int,
    seed: int = 0,
    check_exact: bool = False,
    frozen_mean: str = "stale",
):
    """The CLI's run on ``loaded`` (what :func:`model` returns): ASD on the cosine grid with K steps; with
    ``check_exact`` also the sequential sampler from an independent stream and the energy-distance permutation
    test (999 permutations). Returns a dict of arrays and numbers."""
    from .stats import permutation_test

    check(K, L, n)
    m, start, _ = loaded
    t = cosine_grid(K)
    rng = np.random.default_rng([seed, 0])
    res = asd(m, t, start(n, float(t[0]), rng), L, rng, frozen_mean=frozen_mean)
    out = {"samples": res.samples, **_stats(res)}
    if check_exact:
        rng_seq = np.random.default_rng([seed, 1])
        seq = sequential(m, t, start(n, float(t[0]), rng_seq), rng_seq)
        energy, p = permutation_test(res.samples, seq.samples, 999, seed=seed)
        out |= {"sequential": seq.samples, "energy": energy, "p": p}
    return out
