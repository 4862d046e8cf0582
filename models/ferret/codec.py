"""Ferret's block-wise projection and reconstruction (the uplink codec), for any torch model.

For each block l (a parameter tensor, d_l entries) of a client's update Delta = w_old - w_new:

- K_l = max(floor(|Delta_l| / max_l' |Delta_l'| * K), 2): blocks that moved more get more bases;
- the client draws K_l of the K candidate indices without replacement from its client seed;
- gamma_k = <Delta_l, v_k> / (K_l rho_l) for each chosen basis v_k (:mod:`.bases`: truncated N(0, 1) regenerated
  from (round seed, index, block), rho_l = E[v_i^2]), so that sum_k gamma_k v_k is an unbiased estimate of Delta_l;
- the uplink is the sum_l K_l coordinates and the client seed (the server redraws the chosen indices from it).

The server sums coordinates per (block, index) with weights w_i (1 / n_selected: aggregation is linear in
coordinate space because every client shares the round's candidates), regenerates each used basis once and
reconstructs Delta~_l = sum_k c_k v_k, O(K_l d_l) per block and no inverse of V^T V (the paper's "inversion-free").

``scaling="code"`` is the official code's projection: gamma_k = <Delta_l, v_k> d_l / K_l (no rho: the mean
reconstruction is about Delta / 3, which its server step of 10 then overshoots), and each seed's reconstructed
vector c_k v_k clipped to norm ``clip`` (10) before it is summed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml25.random import rng

from .bases import rho, truncated_chunks

SCALINGS = ("paper", "code")


@dataclass(frozen=True)
class Message:
    """What one client sends: its seed and K_l coordinates per block (the indices are redrawn from the seed)."""

    client_seed: int
    coords: tuple[np.ndarray, ...]

    @property
    def scalars(self) -> int:
        """Uplink scalars: sum_l K_l coordinates plus the client seed."""
        return sum(len(c) for c in self.coords) + 1

    @property
    def ks(self) -> list[int]:
        return [len(c) for c in self.coords]


def k_rule(norms: Sequence[float], K: int) -> list[int]:
    """K_l = max(floor(|Delta_l| / max |Delta_l'| K), 2), at most K (2 each when nothing moved)."""
    top = max(norms) if len(norms) else 0.0
    if not top > 0:
        return [min(2, K)] * len(norms)
    return [min(K, max(int(math.floor(n / top * K)), 2)) for n in norms]


def choose(client_seed: int, ks: Sequence[int], K: int) -> list[np.ndarray]:
    """The candidate indices of each block: K_l of range(K) without replacement, from the client seed."""
    g = rng(int(client_seed), "ferret-choice")
    return [np.sort(g.choice(K, size=k, replace=False)) for k in ks]


class FerretCodec:
    """Encode a client's update into a :class:`Message`; decode (average) messages back into an update.

    ``model`` is an ``nn.Module`` (its trainable parameters, in order, are the blocks), or a sequence of shapes.
    ``encode(delta, round_seed, client_seed)`` takes the update as tensors in block order or a mapping from the
    model's parameter names (on any device: the bases are generated on the CPU, where the update is projected);
    ``decode(messages, round_seed)`` returns the weighted (default: mean) reconstructed update, one CPU tensor per
    block in the blocks' shapes (move it to the model's device to apply it).
    """

    def __init__(
        self,
        model: torch.nn.Module | Sequence[Sequence[int] | int],
        K: int = 64,
        scaling: str = "paper",
        clip: float = 10.0,
        dtype: torch.dtype = torch.float32,
    ):
        if int(K) < 2:
            raise ValueError(f"K = {K}: Ferret needs at least 2 candidate seeds per block")
        if scaling not in SCALINGS:
            raise ValueError(f"scaling {scaling!r}: expected one of {', '.join(SCALINGS)}")
        if isinstance(model, torch.nn.Module):
            named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
            self.names: list[str] | None = [n for n, _ in named]
            self.shapes = [tuple(p.shape) for _, p in named]
        else:
            self.names = None
            self.shapes = [(s,) if isinstance(s, int) else tuple(s) for s in model]
        if not self.shapes:
            raise ValueError("the model has no trainable parameters")
        self.sizes = [int(np.prod(s)) if len(s) else 1 for s in self.shapes]
        self.K, self.scaling, self.clip, self.dtype = int(K), scaling, float(clip), dtype
        self.rhos = [rho(d) for d in self.sizes]

    @property
    def dim(self) -> int:
        return sum(self.sizes)

    def flat(self, delta: Sequence[torch.Tensor] | Mapping[str, torch.Tensor]) -> list[torch.Tensor]:
        """The update's blocks as flat tensors, in block order."""
        if isinstance(delta, Mapping):
            if self.names is None:
                raise ValueError("a mapping needs a codec built from a model (parameter names)")
            missing = [n for n in self.names if n not in delta]
            if missing:
                raise ValueError(f"the update has no block {missing[0]!r}")
            delta = [delta[n] for n in self.names]
        blocks = list(delta)
        if len(blocks) != len(self.sizes):
            raise ValueError(f"the update has {len(blocks)} blocks, the model {len(self.sizes)}")
        out = []
        for i, (b, d) in enumerate(zip(blocks, self.sizes, strict=True)):
            if b.numel() != d:
                raise ValueError(f"block {i}: {b.numel()} entries, expected {d}")
            out.append(b.detach().reshape(-1).to("cpu", self.dtype))
        return out

    def scale(self, block: int, k: int) -> float:
        """The coordinate's factor: 1 / (K_l rho_l) (paper) or d_l / K_l (code)."""
        if self.scaling == "paper":
            return 1.0 / (k * self.rhos[block])
        return self.sizes[block] / k

    def encode(
        self,
        delta: Sequence[torch.Tensor] | Mapping[str, torch.Tensor],
        round_seed: int,
        client_seed: int,
        ks: Sequence[int] | None = None,
    ) -> Message:
        """Project ``delta`` on the K_l bases of each block chosen by ``client_seed`` among the round's K
        candidates (``ks`` overrides the K_l rule)."""
        flats = self.flat(delta)
        if ks is None:
            ks = k_rule([float(f.norm()) for f in flats], self.K)
        coords = []
        for block, (f, idx) in enumerate(zip(flats, choose(client_seed, ks, self.K), strict=True)):
            proj = torch.cat([V @ f for _, V in truncated_chunks(round_seed, idx, block, len(f), self.dtype)])
            coords.append(proj.double().numpy() * self.scale(block, len(idx)))
        return Message(int(client_seed), tuple(coords))

    def aggregate(
        self, messages: Sequence[Message], weights: Sequence[float] | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per block, the used candidate indices and the weighted sum of their coordinates (the server's seed
        pool; weights default to 1 / len(messages))."""
        if not messages:
            raise ValueError("no messages to decode")
        if weights is None:
            weights = [1.0 / len(messages)] * len(messages)
        if len(weights) != len(messages):
            raise ValueError(f"{len(weights)} weights for {len(messages)} messages")
        pool = [np.zeros(self.K) for _ in self.sizes]
        used = [np.zeros(self.K, dtype=bool) for _ in self.sizes]
        for m, w in zip(messages, weights, strict=True):
            if len(m.coords) != len(self.sizes):
                raise ValueError(f"a message with {len(m.coords)} blocks; the model has {len(self.sizes)}")
            for block, idx in enumerate(choose(m.client_seed, m.ks, self.K)):
                np.add.at(pool[block], idx, w * m.coords[block])
                used[block][idx] = True
        return [(np.flatnonzero(u), p[u]) for p, u in zip(pool, used, strict=True)]

    def reconstruct(
        self, block: int, indices: np.ndarray, coords: np.ndarray, round_seed: int
    ) -> torch.Tensor:
        """sum_k c_k v_k for one block (flat), each term clipped to norm ``clip`` under the code's scaling."""
        d = self.sizes[block]
        out = torch.zeros(d, dtype=self.dtype)
        c = torch.as_tensor(coords, dtype=self.dtype)
        for start, V in truncated_chunks(round_seed, indices, block, d, self.dtype):
            ck = c[start : start + len(V)]
            if self.scaling == "code":
                norms = ck.abs() * V.norm(dim=1)
                ck = ck * torch.clamp(self.clip / norms.clamp_min(1e-30), max=1.0)
            out += ck @ V
        return out

    def decode(
        self, messages: Sequence[Message], round_seed: int, weights: Sequence[float] | None = None
    ) -> list[torch.Tensor]:
        """The weighted reconstructed update, one tensor per block in the blocks' shapes (each used basis is
        regenerated once, whatever the number of clients)."""
        return [
            self.reconstruct(block, idx, c, round_seed).reshape(shape)
            for block, ((idx, c), shape) in enumerate(
                zip(self.aggregate(messages, weights), self.shapes, strict=True)
            )
        ]

    def named(self, blocks: Iterable[torch.Tensor]) -> dict[str, torch.Tensor]:
        """Blocks in order -> a mapping from the model's parameter names."""
        if self.names is None:
            raise ValueError("a codec built from shapes has no parameter names")
        return dict(zip(self.names, blocks, strict=True))
