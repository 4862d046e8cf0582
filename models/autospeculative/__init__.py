"""Autospeculative decoding (ASD) for DDPMs (Hu, Das, Sadigh and Anari, ICML 2025).

- :mod:`.sl`: SL coordinates of a DDPM (t = abar / (1 - abar), y = sqrt(t (1 + t)) x) and time grids.
- :mod:`.samplers`: the K-step sequential sampler and ASD (draft, verify in one batched call, accept or
  reflect), vectorised over chains; the stubs the claims are tested against.
- :mod:`.denoisers`: the exact Gaussian-mixture denoiser; network predictions (x0 or eps) read as m(y, t).
- :mod:`.network`: the x0-predicting MLP on the digits (Lightning; imports torch, so not imported here).
- :mod:`.stats`: the energy distance and its permutation test. :mod:`.experiment`: arms, tests, claims' numbers.
- :mod:`.api`: ``asd_sample`` (the user entry); :mod:`.cli`: ``icml25 autospeculative sample``.
"""

from .api import asd_sample

__all__ = ["asd_sample"]
