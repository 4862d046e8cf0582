"""Hyper (ICML 2025): hyperparameter-robust exploration, tabular.

- :mod:`.mdp`: tabular MDPs as arrays; the issue's grid and terminal-trap grid; gymnasium toy-text tables.
- :mod:`.agents`: Curiosity, Decouple, Hyper and the bonus-free baseline as one batch of Q-tables; greedy
  evaluation; the broken variants as ``<agent>:<flaw>``.
- :mod:`.evaluation`: success and return per agent and beta, and the claims' numbers.
- :mod:`.api`: ``sweep`` (the user entry); :mod:`.cli`: ``icml25 hyper sweep``.
"""

from .agents import AGENTS, Run
from .api import sweep

__all__ = ["AGENTS", "Run", "sweep"]
