"""The max player: which source to annotate next.

Every sampler keeps, per source k, the number of labels n_k and the sum S_k of the losses observed at collection
time (the bandit feedback: l(theta_t; z_t) under the model of round t, never re-evaluated later), and answers
``select()`` (the source of the next round) and ``update(k, loss)`` (the feedback of the round just played).
Round t counts from 1: before the t-th ``select()`` there have been t - 1 updates.

- :class:`UCBSampler`: warm start (each source once, in order: the first source with n_k = 0), then

      UCB_k(t) = S_k / n_k + sqrt(c ln t / n_k),   k_t = argmax_k UCB_k(t),   c = 2,

  ties to the lowest index (``numpy.argmax``: the first maximum).
- :class:`GreedySampler`: the same without the bonus (c = 0): argmax S_k / n_k, same warm start and tie rule.
- :class:`UniformSampler`: k_t uniform on {0..K-1}, no warm start (the random-sampling baseline).
- :class:`OracleSampler`: argmax_k of the true risk L_k(theta_t) of the current model (a callable), ties to the
  lowest index; the reference a sampler with full information would play.
- :class:`EntropySampler`: active learning. Each round it takes the next draw of every source's stream as an
  unlabeled candidate (unlabeled draws are free, labels are the budget), picks the source whose candidate has the
  highest predictive entropy under the current model (ties to the lowest index), and that candidate is the one
  annotated (:meth:`EntropySampler.annotate`). Ours: the spec says only "the source whose random candidate has
  the highest predictive entropy"; taking the candidates from the same per-source streams keeps the draws common
  to every method (candidate t of source k is that stream's t-th draw).
- :func:`uniform_stub_sampler`: a :class:`UCBSampler` whose ``select`` is uniform at random: the stub that must
  fail every claim when it replaces UCB-OGD's sampler on the same streams.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class Sampler:
    """The statistics every sampler keeps (n_k, S_k, the round counter) and the feedback rule.

    ``update(k, loss)`` requires loss in [0, 1] (the UCB radius assumes it; the loops clip before calling)."""

    def __init__(self, n_sources: int) -> None:
        if int(n_sources) < 1:
            raise ValueError(f"n_sources must be >= 1, got {n_sources}")
        self.n_sources = int(n_sources)
        self.counts = np.zeros(self.n_sources, dtype=np.int64)
        self.sums = np.zeros(self.n_sources)
        self.t = 0  # updates so far; the round being chosen is t + 1

    def select(self) -> int:
        raise NotImplementedError

    def update(self, k: int, loss: float) -> None:
        if not 0 <= k < self.n_sources:
            raise ValueError(f"source {k} out of range 0..{self.n_sources - 1}")
        if not 0.0 <= loss <= 1.0:
            raise ValueError(f"loss {loss} outside [0, 1]: clip it first")
        self.counts[k] += 1
        self.sums[k] += loss
        self.t += 1

    @property
    def means(self) -> np.ndarray:
        """S_k / n_k (NaN for a source never sampled)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.sums / self.counts

    def allocation(self) -> np.ndarray:
        """n_k / sum n (the share of labels per source)."""
        return self.counts / max(self.t, 1)


class UCBSampler(Sampler):
    """UCB over sources with the losses observed at collection time (module docstring).

    ``bonus`` is c in sqrt(c ln t / n_k) (2 in the paper's UCB1 form; 0 gives the greedy sampler). It drops into
    any annotation loop: ``k = s.select()``, annotate a sample of source k, ``s.update(k, loss)``."""

    def __init__(self, n_sources: int, bonus: float = 2.0) -> None:
        super().__init__(n_sources)
        if bonus < 0:
            raise ValueError(f"bonus must be >= 0, got {bonus}")
        self.bonus = float(bonus)

    def index(self) -> np.ndarray:
        """UCB_k(t) for the round about to be chosen (t = updates + 1); +inf for a source never sampled."""
        t = self.t + 1
        with np.errstate(invalid="ignore", divide="ignore"):
            ucb = self.sums / self.counts + np.sqrt(self.bonus * math.log(t) / self.counts)
        ucb[self.counts == 0] = np.inf
        return ucb

    def select(self) -> int:
        if self.t < self.n_sources:  # warm start: the first source not yet sampled, in order
            unseen = np.flatnonzero(self.counts == 0)
            if unseen.size:
                return int(unseen[0])
        return int(np.argmax(self.index()))


class GreedySampler(UCBSampler):
    """argmax_k S_k / n_k: UCB without the exploration bonus (same warm start, same tie rule)."""

    def __init__(self, n_sources: int) -> None:
        super().__init__(n_sources, bonus=0.0)


class UniformSampler(Sampler):
    """k_t uniform on {0..K-1} from ``rng`` (no warm start)."""

    def __init__(self, n_sources: int, rng: np.random.Generator) -> None:
        super().__init__(n_sources)
        self.rng = rng

    def select(self) -> int:
        return int(self.rng.integers(self.n_sources))


class OracleSampler(Sampler):
    """argmax_k L_k(theta_t): ``risks()`` returns the true risk of every source under the current model."""

    def __init__(self, n_sources: int, risks: Callable[[], np.ndarray]) -> None:
        super().__init__(n_sources)
        self.risks = risks

    def select(self) -> int:
        return int(np.argmax(self.risks()))


class EntropySampler(Sampler):
    """Entropy active learning over sources (module docstring).

    ``take(k)`` consumes the next draw of source k's stream, ``entropy(candidates)`` returns the predictive
    entropy of each candidate under the current model; :meth:`annotate` returns the chosen candidate (the draw
    function of the round loop)."""

    def __init__(
        self,
        n_sources: int,
        take: Callable[[int], Any],
        entropy: Callable[[Sequence[Any]], np.ndarray],
    ) -> None:
        super().__init__(n_sources)
        self.take = take
        self.entropy = entropy
        self._pending: tuple[int, Any] | None = None

    def select(self) -> int:
        candidates = [self.take(k) for k in range(self.n_sources)]
        k = int(np.argmax(self.entropy(candidates)))
        self._pending = (k, candidates[k])
        return k

    def annotate(self, k: int) -> Any:
        if self._pending is None or self._pending[0] != k:
            raise RuntimeError("annotate(k) must follow select() and name the selected source")
        z, self._pending = self._pending[1], None
        return z


class _UniformStub(UCBSampler):
    def __init__(self, n_sources: int, rng: np.random.Generator) -> None:
        super().__init__(n_sources)
        self.rng = rng

    def select(self) -> int:
        return int(self.rng.integers(self.n_sources))


def uniform_stub_sampler(n_sources: int, rng: np.random.Generator) -> UCBSampler:
    """A :class:`UCBSampler` (same statistics and interface) whose ``select`` is uniform at random: the stub that
    replaces UCB-OGD's sampler in the tests that must see every claim fail."""
    return _UniformStub(n_sources, rng)
