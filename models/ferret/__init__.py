"""Ferret: federated full-parameter tuning with shared randomness (Shu et al., ICML 2025): the method.

- :mod:`.bases`: the truncated-normal bases regenerated from (round seed, index, block) and rho = E[v_i^2];
- :mod:`.codec`: :class:`FerretCodec`, the block-wise projection (gamma = <Delta_l, v> / (K_l rho_l)) and the
  server's reconstruction in coordinate space;
- :mod:`.data`: the digits, a user's table or Dolly-style records, and the Dirichlet client split;
- :mod:`.federated`: the rounds of FedAvg, Ferret, the FedKSeed-style zeroth-order baseline and FedZO (one
  Lightning module whose step is one round);
- :mod:`.experiment`: the reconstruction-bias check and the claims' numbers; :mod:`.api`: :func:`simulate`.
"""

from .codec import FerretCodec, Message

__all__ = ["FerretCodec", "Message", "simulate"]


def __getattr__(name: str):
    if name == "simulate":
        from .api import simulate

        return simulate
    raise AttributeError(name)
