"""The synthetic token language of the CPU reproduction: a known reward R*, its exact value functions and the trap.

Responses are ``length`` = T tokens from a vocabulary of ``tokens`` = V symbols, after one of ``prompts`` prompts.
Prompt p has its own seeded bigram grammar (ours: Dirichlet(``alpha``) rows),

    pi*(y | p) = q_p(y_1) prod_{t >= 2} M_p(y_{t-1}, y_t),

which is the distribution the base LM is fitted to. The reward, for every prompt but the trap, is small per-token
values plus a non-additive bonus,

    R*(p, y) = sum_t u(y_t) + b * [exists i < j: y_i = a, y_j = c],

(``u`` in [0, value_scale], the bonus b = ``bonus`` when token a is later followed by token c). The trap prompt
(the last one; Theorems 1-3 of the paper) starts with A or B (probability 1/2 each); after A one continuation X
(LM probability ``trap_x``, not the most likely: another token has ``trap_top``) gives R* = 1 and every other 0;
after B every continuation gives 0.6.

Exact scorers (:func:`exact_scores`), each the value of every one-token extension s + x of a prefix s:

- ``max``: V_max(s) = max over completions of R* (the max-consistent fixed point V(s) = max_x V(s + x) that
  FaRMA's max loss targets; Theorem 3: a prefix of the optimal sequence scores highest);
- ``ref``: V_ref(s) = E_{pi*}[R* | s] (controlled decoding's target: the value under the base LM);
- ``mean``: max replaced by the uniform mean over tokens (a broken V_max for the tests).

Away from the trap they come from a dynamic programme over the state (last token, a seen, bonus paid);
:func:`pargs_prefers_a` is PARGS's population choice on the trap, P(a response through A beats one through B
under BT(beta)) > 1/2 (Theorem 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

KINDS = ("max", "ref", "mean")


@dataclass(frozen=True)
class Language:
    first: np.ndarray  # (P, V): q_p(y_1)
    trans: np.ndarray  # (P, T - 1, V, V): M_p at positions 2..T (position-dependent only on the trap)
    values: np.ndarray  # (V,): u
    bonus: float
    a: int  # the bonus's first token
    c: int  # ... later followed by this one
    trap: int  # the trap prompt
    A: int
    B: int
    X: int
    trap_b: float = 0.6
    _tables: dict = field(default_factory=dict, compare=False, repr=False)  # _future's, per (prompt, kind)

    @property
    def prompts(self) -> int:
        return self.first.shape[0]

    @property
    def tokens(self) -> int:
        return self.first.shape[1]

    @property
    def length(self) -> int:
        return self.trans.shape[1] + 1

    def arrays(self) -> dict[str, np.ndarray]:
        scalars = {k: getattr(self, k) for k in ("bonus", "a", "c", "trap", "A", "B", "X", "trap_b")}
        return {"first": self.first, "trans": self.trans, "values": self.values} | {
            k: np.asarray(v) for k, v in scalars.items()
        }

    @classmethod
    def from_arrays(cls, arrays) -> Language:
        ints = ("a", "c", "trap", "A", "B", "X")
        kw = {k: int(arrays[k]) for k in ints} | {k: float(arrays[k]) for k in ("bonus", "trap_b")}
        return cls(
            first=np.asarray(arrays["first"], np.float64),
            trans=np.asarray(arrays["trans"], np.float64),
            values=np.asarray(arrays["values"], np.float64),
            **kw,
        )

    # ---------------------------------------------------------------- sampling and the reward
    def sample(self, prompts: np.ndarray, g: np.random.Generator) -> np.ndarray:
        """One response per prompt, (n, T) int64, from pi*."""
        n, T = len(prompts), self.length
        y = np.empty((n, T), np.int64)
        y[:, 0] = _draw(self.first[prompts], g)
        for t in range(1, T):
            y[:, t] = _draw(self.trans[prompts, t - 1, y[:, t - 1]], g)
        return y

    def reward(self, prompts: np.ndarray, y: np.ndarray) -> np.ndarray:
        """R*(p, y) for full responses y (n, T)."""
        prompts, y = np.asarray(prompts), np.asarray(y)
        r = self.values[y].sum(1)
        seen = np.cumsum(y == self.a, axis=1) > 0
        later = np.zeros(len(y), bool)
        later |= ((y[:, 1:] == self.c) & seen[:, :-1]).any(1)
        r = r + self.bonus * later
        trap = prompts == self.trap
        first, second = y[:, 0], y[:, 1]
        rt = np.where(
            first == self.B, self.trap_b, np.where((first == self.A) & (second == self.X), 1.0, 0.0)
        )
        return np.where(trap, rt, r)

    def log_prob(self, prompts: np.ndarray, y: np.ndarray) -> np.ndarray:
        """log pi*(y | p) of full responses."""
        lp = np.log(self.first[prompts, y[:, 0]])
        for t in range(1, self.length):
            lp += np.log(self.trans[prompts, t - 1, y[:, t - 1], y[:, t]])
        return lp

    # ---------------------------------------------------------------- exact value functions
    def _future(self, p: int, kind: str) -> np.ndarray:
        """F[n, last, seen_a, paid]: the value of the tokens still to come after n tokens (n = 1..T; F[T] = 0),
        for a non-trap prompt, by ``kind`` (max, ref or mean over the next token); computed once per language."""
        if (p, kind) in self._tables:
            return self._tables[p, kind]
        V, T = self.tokens, self.length
        F = np.zeros((T + 1, V, 2, 2))
        x = np.arange(V)
        for n in range(T - 1, 0, -1):
            for sa in (0, 1):
                for paid in (0, 1):
                    gain = self.values + self.bonus * ((x == self.c) & bool(sa) & (not paid))
                    sa2 = np.where(x == self.a, 1, sa)
                    paid2 = np.where((x == self.c) & bool(sa), 1, paid)
                    nxt = gain + F[n + 1, x, sa2, paid2]  # (V,) one value per next token
                    if kind == "max":
                        F[n, :, sa, paid] = nxt.max()
                    elif kind == "mean":
                        F[n, :, sa, paid] = nxt.mean()
                    else:
                        F[n, :, sa, paid] = self.trans[p, n - 1] @ nxt
        self._tables[p, kind] = F
        return F

    def exact_scores(self, kind: str, prompts: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        """(n, V): the ``kind`` value of prefix + x for every next token x, for prefixes (n, t) with t < T of
        the same length (t = 0 allowed)."""
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r}: expected one of {KINDS}")
        prompts, prefix = np.asarray(prompts), np.asarray(prefix).reshape(len(prompts), -1)
        V, t = self.tokens, prefix.shape[1]
        out = np.empty((len(prompts), V))
        x = np.arange(V)
        for p in np.unique(prompts):
            rows = prompts == p
            pre = prefix[rows]
            if p == self.trap:
                out[rows] = self._trap_scores(kind, pre)
                continue
            F = self._future(int(p), kind)
            acc = self.values[pre].sum(1) if t else np.zeros(len(pre))
            seen = (pre == self.a).any(1) if t else np.zeros(len(pre), bool)
            paid = (
                ((pre[:, 1:] == self.c) & (np.cumsum(pre == self.a, 1)[:, :-1] > 0)).any(1)
                if t > 1
                else np.zeros(len(pre), bool)
            )
            acc = acc + self.bonus * paid
            gain = self.values[None, :] + self.bonus * (
                (x[None, :] == self.c) & seen[:, None] & ~paid[:, None]
            )
            sa2 = np.where(x[None, :] == self.a, 1, seen[:, None].astype(int))
            paid2 = (paid[:, None] | ((x[None, :] == self.c) & seen[:, None])).astype(int)
            out[rows] = acc[:, None] + gain + F[t + 1, np.broadcast_to(x, sa2.shape), sa2, paid2]
        return out

    def _trap_scores(self, kind: str, pre: np.ndarray) -> np.ndarray:
        V, t = self.tokens, pre.shape[1]
        out = np.zeros((len(pre), V))
        if t == 0:  # the value of the first token: A's depends on the scorer
            after_a = {"max": 1.0, "ref": float(self.trans[self.trap, 0, self.A, self.X]), "mean": 1.0 / V}[
                kind
            ]
            out[:, self.A] = after_a
            out[:, self.B] = self.trap_b
            return out
        if t == 1:  # the second token settles R*
            out[pre[:, 0] == self.B] = self.trap_b
            on_a = pre[:, 0] == self.A
            out[on_a, self.X] = 1.0
            return out
        full = np.concatenate([pre[:, :2], np.zeros((len(pre), self.length - 2), np.int64)], 1)
        out[:] = self.reward(np.full(len(pre), self.trap), full)[:, None]
        return out

    def pargs_prefers_a(self, beta: float) -> float:
        """P(a trap response through A beats one through B) under BT(beta): PARGS's population preference for A
        over B as first token (Theorem 1: below 1/2 although A leads to the best response)."""
        px = float(self.trans[self.trap, 0, self.A, self.X])
        return px * _sigmoid(beta * (1.0 - self.trap_b)) + (1 - px) * _sigmoid(-beta * self.trap_b)


def _sigmoid(z: float) -> float:
    return float(1.0 / (1.0 + np.exp(-z)))


def _draw(probs: np.ndarray, g: np.random.Generator) -> np.ndarray:
    """One index per row of a (n, V) probability table (inverse CDF)."""
    cdf = np.cumsum(probs, axis=1)
    u = g.random(len(probs))[:, None] * cdf[:, -1:]
    return np.minimum((u > cdf).sum(1), probs.shape[1] - 1)


def make_language(
    g: np.random.Generator,
    *,
    tokens: int = 16,
    length: int = 6,
    prompts: int = 8,
    alpha: float = 1.0,
    value_scale: float = 0.1,
    bonus: float = 1.0,
    trap_x: float = 0.1,
    trap_top: float = 0.4,
) -> Language:
    """A seeded language: Dirichlet(alpha) first-token and bigram rows per prompt, per-token values
    u ~ U[0, value_scale], the bonus tokens (a, c) and the trap's A, B, X drawn from the vocabulary; the trap is
    the last prompt."""
    if tokens < 6 or length < 2 or prompts < 1:  # a, c, A, B, X and the trap's top token are distinct
        raise ValueError(f"tokens {tokens}, length {length}, prompts {prompts}: need >= 6, >= 2, >= 1")
    if not (0 < trap_x < trap_top and trap_x + trap_top < 1):
        raise ValueError(f"trap_x {trap_x}, trap_top {trap_top}: need 0 < x < top and x + top < 1")
    V, T = tokens, length
    first = g.dirichlet(np.full(V, alpha), size=prompts)
    rows = g.dirichlet(np.full(V, alpha), size=(prompts, V))  # (P, V, V)
    trans = np.repeat(rows[:, None], T - 1, axis=1).copy()
    values = g.uniform(0, value_scale, V)
    a, c, A, B, X, top = (int(v) for v in g.permutation(V)[:6])
    trap = prompts - 1
    first[trap] = 0.0
    first[trap, [A, B]] = 0.5
    rest = g.dirichlet(np.full(V - 2, 1.0)) * (1 - trap_x - trap_top)
    row = np.zeros(V)
    row[X], row[top] = trap_x, trap_top
    row[[v for v in range(V) if v not in (X, top)]] = rest
    if row.argmax() == X:  # never the most likely
        raise AssertionError("X must not be the most likely continuation")
    trans[trap, 0, A] = row
    return Language(first, trans, values, float(bonus), a, c, trap, A, B, X)


class GrammarLM:
    """pi* itself as a language model: ``(prompts, y) -> (B, n + 1, V)`` log-probabilities (the exact base LM;
    tests and calibration use it in place of a trained network)."""

    def __init__(self, lang: Language):
        import torch

        self.lang = lang
        self.first = torch.as_tensor(np.log(np.maximum(lang.first, 1e-30)), dtype=torch.float32)
        self.trans = torch.as_tensor(np.log(np.maximum(lang.trans, 1e-30)), dtype=torch.float32)

    def __call__(self, prompts, y):
        import torch

        out = [self.first[prompts]]
        for t in range(y.shape[1]):
            if t + 1 < self.lang.length:
                out.append(self.trans[prompts, t, y[:, t]])
            else:
                out.append(torch.zeros_like(out[0]))
        return torch.stack(out, dim=1)
