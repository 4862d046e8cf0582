"""The independence test on two checkpoints, as one function.

    >>> from models.model_independence.api import independence_test
    >>> r = independence_test("ckpt/base", "ckpt/ft", stat="u")   # doctest: +SKIP
    >>> r.log10p, r.per_block                                       # doctest: +SKIP

Statistics (``stat``):

- "u": phi_U, matching of the up-projection weights (weights only; Eq. 2, Thm 2-3: exact p-values);
- "l2": PERMTEST (Alg. 1) with phi_l2 and T = ``permutations`` (weights only; p >= 1/(T+1));
- "h": phi_H, matching of the up_proj activations on shared inputs (Eq. 2);
- "match": phi_MATCH (Eq. 3), gate vs up matchings of the activations: robust to output-preserving
  permutations and rescalings of the hidden units (no exactness guarantee).

Inputs for "h" and "match": for icml25-glu checkpoints, the first ``n_inputs`` rows of scikit-learn's bundled
digits (scaled to [0, 1]); for Llama-architecture checkpoints, ``n_inputs`` sequences of ``seq_len`` random
token ids (seeded by ``seed``, the same for both models) run through each full model with transformers, the
gate_proj and up_proj outputs of every layer hooked (the paper's code also hooks up_proj outputs).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icml25.errors import UserError

from .checkpoints import LLAMA, STATS, Checkpoint, check_compatible, load_checkpoint
from .stats import TestResult

DIGITS_ROWS = 1797


def _check_digits_rows(n_inputs: int) -> None:
    if not 1 <= n_inputs <= DIGITS_ROWS:
        raise UserError(f"n_inputs must be between 1 and {DIGITS_ROWS} (the digits data set), got {n_inputs}")


def _check_sequences(n_sequences: int, seq_len: int) -> None:
    if n_sequences < 1 or seq_len < 1:
        raise UserError(f"need at least one sequence of at least one token, got {n_sequences} x {seq_len}")


def digits_inputs(n_inputs: int) -> Any:
    """The first ``n_inputs`` rows of ``sklearn.datasets.load_digits`` (bundled, no download) as float32 in
    [0, 1] (pixel intensities 0..16 divided by 16)."""
    import torch
    from sklearn.datasets import load_digits

    _check_digits_rows(n_inputs)
    x = load_digits().data[:n_inputs] / 16.0
    return torch.as_tensor(x, dtype=torch.float32)


def glu_activations(ckpt: Checkpoint, x: Any) -> list[dict[str, Any]]:
    """Per-block {"gate": G_l r_l, "up": U_l r_l} (N x h) of an icml25-glu checkpoint on inputs x (N x d_in)."""
    import torch

    from . import glu

    with torch.no_grad():
        _, acts = glu.forward(ckpt.weights, x, ckpt.n_blocks, collect=True)
    return acts


def random_tokens(n_sequences: int, seq_len: int, vocab_size: int, seed: int) -> Any:
    """n_sequences x seq_len token ids, uniform on {0..vocab_size-1}, from a seeded torch Generator."""
    import torch

    _check_sequences(n_sequences, seq_len)
    gen = torch.Generator().manual_seed(int(seed))
    return torch.randint(0, vocab_size, (n_sequences, seq_len), generator=gen)


def llama_activations(ckpt: Checkpoint, tokens: Any) -> list[dict[str, Any]]:
    """Per-layer {"gate", "up"} outputs (N*s x h) of a Hugging Face causal LM on ``tokens`` (N x s).

    The model is loaded with ``AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)`` in float32
    and forward hooks on every ``layers.{l}.mlp.gate_proj`` / ``up_proj`` record their outputs.
    """
    import torch

    try:
        from transformers import AutoModelForCausalLM
    except ImportError as exc:
        raise UserError(
            "stats 'h' and 'match' on Llama checkpoints need transformers: "
            "pip install 'icml25-repro[dev]' (or transformers)"
        ) from exc
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # one "Loading weights" bar per model would drown the result lines
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(ckpt.path), local_files_only=True, dtype=torch.float32
        )
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"{ckpt.path}: transformers cannot load this checkpoint ({exc})") from exc
    finally:
        if bar:
            hf_logging.enable_progress_bar()
    model.eval()
    acts: list[dict[str, Any]] = [{} for _ in range(ckpt.n_blocks)]
    handles = []
    suffixes = {"mlp.gate_proj": "gate", "mlp.up_proj": "up"}
    for name, module in model.named_modules():
        parts = name.split(".")
        if len(parts) >= 4 and parts[-4] == "layers" and ".".join(parts[-2:]) in suffixes:
            layer, kind = int(parts[-3]), suffixes[".".join(parts[-2:])]

            def hook(_mod: Any, _inp: Any, out: Any, layer: int = layer, kind: str = kind) -> None:
                acts[layer][kind] = out.detach().reshape(-1, out.shape[-1]).float()

            handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(input_ids=tokens)
    finally:
        for handle in handles:
            handle.remove()
    if any(set(a) != {"gate", "up"} for a in acts):
        raise UserError(
            f"{ckpt.path}: could not hook mlp.gate_proj and mlp.up_proj in every one of its "
            f"{ckpt.n_blocks} layers"
        )
    return acts


def activations(
    a: Checkpoint, b: Checkpoint, n_inputs: int, seed: int, seq_len: int = 16
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both models' per-block gate/up activations on the same inputs (see the module docstring)."""
    if a.arch == LLAMA:
        vocab = min(
            int(c.config.get("vocab_size") or c.weights["model.embed_tokens.weight"].shape[0]) for c in (a, b)
        )
        tokens = random_tokens(n_inputs, seq_len, vocab, seed)
        return llama_activations(a, tokens), llama_activations(b, tokens)
    x = digits_inputs(n_inputs)
    return glu_activations(a, x), glu_activations(b, x)


def _refuse_degenerate(who: str, what: str, tensors: Mapping[str, Any]) -> None:
    """A non-finite or constant weight or activation matrix makes every test meaningless (a constant matrix has
    no hidden units to tell apart: every matching ties): refuse it with the tensor's name, not a p-value."""
    import torch

    for key, t in tensors.items():
        if not hasattr(t, "detach") or t.ndim < 2:
            continue  # norms and biases: a constant vector is a legitimate initialisation
        t = t.detach()
        if not bool(torch.isfinite(t).all()):
            raise UserError(f"{who}: {what} {key} holds NaN or inf values; the test needs finite {what}s")
        flat = t.reshape(-1)
        if flat.numel() > 1 and bool((flat == flat[0]).all()):
            raise UserError(
                f"{who}: {what} {key} is constant (every entry {float(flat[0]):g}); a constant or all-zero "
                f"model has no hidden units to match, so no independence test applies"
            )


def _check_before_loading(
    a: str | Path | Checkpoint, b: str | Path | Checkpoint, stat: str, n_inputs: int, seq_len: int
) -> None:
    """What can be refused before either checkpoint's weights load (seconds, minutes for a large model): both
    folders and their config.json, and for "h" and "match" the number of inputs (the digits data set's rows for
    icml25-glu checkpoints)."""
    from . import glu
    from .checkpoints import _read_config

    archs = [
        x.arch if isinstance(x, Checkpoint) else _read_config(Path(x)).get("architecture") for x in (a, b)
    ]
    if stat not in ("h", "match"):
        return
    if glu.ARCHITECTURE in archs:
        _check_digits_rows(n_inputs)
    _check_sequences(n_inputs, seq_len)


def independence_test(
    a: str | Path | Checkpoint,
    b: str | Path | Checkpoint,
    stat: str = "u",
    permutations: int = 99,
    seed: int = 0,
    n_inputs: int = 200,
    seq_len: int = 16,
) -> TestResult:
    """Test H_0: "a and b come from independent initialisations" with statistic ``stat`` (module docstring).

    ``a`` and ``b`` are checkpoint folders or loaded :class:`Checkpoint` objects. Returns a
    :class:`~.stats.TestResult` whose ``log10p`` is the combined log10 p-value (small = dependent) and whose
    ``excluded`` counts the dead hidden units left out of each block's matchings. ``seed`` seeds PERMTEST, the
    random tokens and the matchings' tie-breaking (the p-value of a pair with tied units depends on it).
    """
    from . import stats

    if stat not in STATS:
        raise UserError(f"unknown statistic {stat!r}: expected one of {', '.join(STATS)}")
    if permutations < 1:
        raise UserError(f"permutations must be >= 1, got {permutations}")
    if seed < 0:
        raise UserError(f"seed must be a non-negative integer, got {seed}")
    _check_before_loading(a, b, stat, n_inputs, seq_len)
    ca = a if isinstance(a, Checkpoint) else load_checkpoint(a)
    cb = b if isinstance(b, Checkpoint) else load_checkpoint(b)
    check_compatible(ca, cb, stat)
    for name, ckpt in (("a", ca), ("b", cb)):
        _refuse_degenerate(f"model {name} ({ckpt.describe()})", "weight", ckpt.weights)
    try:
        if stat == "u":
            return stats.phi_u(ca.weights, cb.weights, ca.n_blocks, tie_seed=seed)
        if stat == "l2":
            return stats.permtest_l2(ca.weights, cb.weights, ca.arch, ca.n_blocks, T=permutations, seed=seed)
        acts_a, acts_b = activations(ca, cb, n_inputs, seed, seq_len)
        for name, acts in (("a", acts_a), ("b", acts_b)):
            for block, entry in enumerate(acts):
                _refuse_degenerate(
                    f"model {name}", "activation", {f"block {block} {k}": v for k, v in entry.items()}
                )
        if stat == "h":
            return stats.phi_h(acts_a, acts_b, tie_seed=seed)
        return stats.phi_match(acts_a, acts_b, tie_seed=seed)
    except stats.DegenerateModels as exc:
        raise UserError(f"{ca.describe()} vs {cb.describe()}: {exc}") from exc
