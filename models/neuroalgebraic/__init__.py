"""Neuroalgebraic geometry (Marchetti, Shahverdi, Mereta, Trager and Kohn, ICML 2025 position paper): its
dictionary as computations.

- :mod:`.neuromanifold`: polynomial MLPs (widths, activation z^k), their parameter, symmetry and ambient counts,
  the expected dimension and the closed forms (Alexander-Hirschowitz; determinantal varieties).
- :mod:`.rank`: the Jacobian's rank in float64 (torch.func, largest log-gap) and exactly over GF(2^31 - 1).
- :mod:`.descent`: gradient descent on the sum-of-squares model and its signed control (singular endpoints).
- :mod:`.experiment`: the sweeps and the claims' numbers; :mod:`.cli`: ``icml25 neuroalgebraic dim``.
"""

from .neuromanifold import Architecture, Dimension, neuromanifold

__all__ = ["Architecture", "Dimension", "neuromanifold"]
