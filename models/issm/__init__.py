"""Interventional state-space models (Nejatbakhsh et al., ICML 2025): the method.

- :mod:`.model`: the iSSM and its SSM baseline (dynamics with the do-clamp, MLP emission, bidirectional-LSTM
  recognition, the ELBO), in PyTorch; :mod:`.lit`: the LightningModule and the fit.
- :mod:`.simulate`: the seeded dynamic attractor and linear system with hard interventions.
- :mod:`.metrics`: unaligned latent correlation, aligned R^2, reconstruction, eigenvalue distance, MSE.
- :mod:`.experiment`: the data sets and fits of the reproduction; :mod:`.evaluation`: scores and summary.
- :mod:`.api`: ``fit_issm`` and :class:`~.api.FittedISSM` (the user entry); :mod:`.cli`: ``icml25 issm``.
"""

from .api import FittedISSM, fit_issm

__all__ = ["FittedISSM", "fit_issm"]
