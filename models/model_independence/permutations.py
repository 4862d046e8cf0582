"""The permutation group Pi of the paper (App. D, Table 3) acting on weight dicts.

Pi = Pi_emb x prod_l Pi_mlp,l:

- pi_emb permutes the d residual coordinates everywhere they appear (embedding, attention inputs and output,
  layer norms, the columns of G_l and U_l, the rows of D_l, the columns of the LM head);
- pi_mlp,l permutes the h hidden units of block l (rows of G_l and U_l, columns of D_l), independently per
  block.

Every tensor name gets a *rule*: one entry per tensor dimension, either ``EMB`` (permuted by pi_emb), ``MLP``
(permuted by the block's pi_mlp,l) or ``None`` (left alone). A tensor without a rule raises: a tensor silently
left unpermuted would break PERMTEST's exactness (Thm 1) or the output-preservation of the transformation.
For these architectures every element of Pi is output-preserving (RMSNorm is permutation-equivariant and the
rotary embedding acts on the attention heads' dimensions, which Pi does not touch).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import torch
from torch import Tensor

from icml25.errors import UserError

from . import glu

EMB = "emb"
MLP = "mlp"
ARCHITECTURES = (glu.ARCHITECTURE, "llama")

_LAYER = re.compile(r"^model\.layers\.(\d+)\.(.+)$")

_GLU_TOP = {
    "model.embed_in.weight": (EMB, None),  # d x d_in: rows
    "model.embed_in.bias": (EMB,),
    "lm_head.weight": (None, EMB),  # C x d: columns
    "lm_head.bias": (None,),  # the class logits: untouched
}
_GLU_LAYER = {
    "mlp.gate_proj.weight": (MLP, EMB),
    "mlp.up_proj.weight": (MLP, EMB),
    "mlp.down_proj.weight": (EMB, MLP),
}
_LLAMA_TOP = {
    "model.embed_tokens.weight": (None, EMB),  # V x d: columns
    "model.norm.weight": (EMB,),
    "model.norm.bias": (EMB,),
    "lm_head.weight": (None, EMB),
    "lm_head.bias": (None,),
}
_LLAMA_LAYER = {
    "input_layernorm.weight": (EMB,),
    "post_attention_layernorm.weight": (EMB,),
    "self_attn.q_proj.weight": (None, EMB),
    "self_attn.k_proj.weight": (None, EMB),
    "self_attn.v_proj.weight": (None, EMB),
    "self_attn.o_proj.weight": (EMB, None),
    # biases of the attention projections (Qwen-like models) live on the heads' side: untouched
    "self_attn.q_proj.bias": (None,),
    "self_attn.k_proj.bias": (None,),
    "self_attn.v_proj.bias": (None,),
    "self_attn.o_proj.bias": (EMB,),
    "self_attn.q_norm.weight": (None,),  # per-head norms (Qwen3-like): head dimension, untouched
    "self_attn.k_norm.weight": (None,),
    "self_attn.rotary_emb.inv_freq": (None,),  # a buffer some old checkpoints store
    "mlp.gate_proj.weight": (MLP, EMB),
    "mlp.up_proj.weight": (MLP, EMB),
    "mlp.down_proj.weight": (EMB, MLP),
    "mlp.gate_proj.bias": (MLP,),
    "mlp.up_proj.bias": (MLP,),
    "mlp.down_proj.bias": (EMB,),
}
_RULES = {glu.ARCHITECTURE: (_GLU_TOP, _GLU_LAYER), "llama": (_LLAMA_TOP, _LLAMA_LAYER)}


def rule(name: str, arch: str, n_blocks: int) -> tuple[tuple[str | None, ...], int | None]:
    """(per-dimension roles, block index or None) for tensor ``name``; raises :class:`UserError` if none."""
    if arch not in _RULES:
        raise UserError(f"unknown architecture {arch!r}: expected one of {', '.join(ARCHITECTURES)}")
    top, per_layer = _RULES[arch]
    if name in top:
        return top[name], None
    m = _LAYER.match(name)
    if m and m.group(2) in per_layer:
        layer = int(m.group(1))
        if layer >= n_blocks:
            raise UserError(f"tensor {name} belongs to block {layer} but the model has {n_blocks} blocks")
        return per_layer[m.group(2)], layer
    raise UserError(
        f"no permutation rule for tensor {name!r} of a {arch} model: refusing to leave it unpermuted "
        "(the permutation group of App. D, Table 3 does not cover it)"
    )


def _dims(weights: Mapping[str, Tensor], arch: str, n_blocks: int) -> tuple[int, dict[int, int]]:
    """The residual width d and each block's hidden width h_l, read off the tensors (checked consistent)."""
    d: int | None = None
    hidden: dict[int, int] = {}
    for name, t in weights.items():
        roles, layer = rule(name, arch, n_blocks)
        if len(roles) != t.dim():
            raise UserError(f"tensor {name} has {t.dim()} dimensions, expected {len(roles)}")
        for axis, role in enumerate(roles):
            size = int(t.shape[axis])
            if role == EMB:
                if d is not None and d != size:
                    raise UserError(f"tensor {name} has residual width {size}, others {d}")
                d = size
            elif role == MLP:
                assert layer is not None
                if hidden.setdefault(layer, size) != size:
                    raise UserError(
                        f"tensor {name} has hidden width {size}, block {layer} has {hidden[layer]}"
                    )
    if d is None:
        raise UserError("no tensor carries the residual dimension: nothing to permute")
    return d, hidden


def apply_permutations(
    weights: Mapping[str, Tensor], arch: str, n_blocks: int, pi_emb: Tensor, pi_mlp: Mapping[int, Tensor]
) -> dict[str, Tensor]:
    """theta -> pi(theta): index every EMB axis by ``pi_emb`` and every MLP axis of block l by ``pi_mlp[l]``.

    For a matrix W with rule (MLP, EMB), the result is W[pi_mlp][:, pi_emb] = P_mlp W P_emb^T, i.e. new hidden
    unit i is old unit pi_mlp[i] and new residual coordinate j is old coordinate pi_emb[j].
    """
    out: dict[str, Tensor] = {}
    for name, t in weights.items():
        roles, layer = rule(name, arch, n_blocks)
        for axis, role in enumerate(roles):
            if role == EMB:
                t = t.index_select(axis, pi_emb)
            elif role == MLP:
                t = t.index_select(axis, pi_mlp[layer])
        out[name] = t
    return out


def random_group_element(
    weights: Mapping[str, Tensor], arch: str, n_blocks: int, rng: np.random.Generator
) -> dict[str, Tensor]:
    """pi(theta) for pi ~ Unif(Pi): an independent uniform pi_emb on the residual dimension and an independent
    uniform pi_mlp,l for each block l (App. D, Table 3). The input dict is not modified."""
    d, hidden = _dims(weights, arch, n_blocks)
    pi_emb = torch.from_numpy(rng.permutation(d))
    pi_mlp = {layer: torch.from_numpy(rng.permutation(h)) for layer, h in sorted(hidden.items())}
    return apply_permutations(weights, arch, n_blocks, pi_emb, pi_mlp)


def output_preserving_transform(
    weights: Mapping[str, Tensor], n_blocks: int, seed: int, scale: bool = True
) -> dict[str, Tensor]:
    """An adversarial copy of an icml25-glu model that computes exactly the same function.

    A uniform pi ~ Pi (residual and per-block hidden permutations) and, if ``scale``, per-hidden-unit factors
    c_i = s_i exp(z_i), z_i ~ N(0, 1), s_i = +-1 uniformly, applied as U_l <- diag(c) U_l, D_l <- D_l diag(1/c):
    D (silu(G r) * (diag(c) U r)) / c = D (silu(G r) * U r). The constrained test phi_U is fooled by it (its
    output is a fresh random matching), the unconstrained phi_MATCH is not.
    """
    rng = np.random.default_rng(seed)
    out = random_group_element(weights, glu.ARCHITECTURE, n_blocks, rng)
    if scale:
        for layer in range(n_blocks):
            up, down = out[glu.up_key(layer)], out[glu.down_key(layer)]
            h = up.shape[0]
            c = np.exp(rng.standard_normal(h)) * rng.choice([-1.0, 1.0], size=h)
            c_t = torch.from_numpy(c).to(up.dtype)
            out[glu.up_key(layer)] = up * c_t[:, None]
            out[glu.down_key(layer)] = down / c_t[None, :].to(down.dtype)
    return out
