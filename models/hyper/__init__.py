"""Hyper (ICML 2025): hyperparameter-robust exploration, tabular, and a deep (DQN + RND) variant.

- :mod:`.mdp`: tabular MDPs as arrays; the issue's grid and terminal-trap grid; gymnasium toy-text tables.
- :mod:`.agents`: Curiosity, Decouple, Hyper and the bonus-free baseline as one batch of Q-tables; greedy
  evaluation; the broken variants as ``<agent>:<flaw>``.
- :mod:`.deep`: the same agents as DQN-style learners with target networks and an RND bonus divided by its
  running std, every run in one Lightning module (``deep_sweep``; imports torch, so not imported here).
- :mod:`.evaluation`: success and return per agent and beta, and the claims' numbers.
- :mod:`.api`: ``sweep`` (the user entry); :mod:`.cli`: ``icml25 hyper sweep``.
"""

from .agents import AGENTS, Run
from .api import sweep

__all__ = ["AGENTS", "Run", "sweep"]
