"""Reading and writing checkpoints: this project's GLU classifiers and Llama-architecture Hugging Face folders.

A checkpoint is a folder holding ``config.json`` and the weights as ``model.safetensors`` or as a sharded
``model.safetensors.index.json`` plus its shards (torch pickles are never loaded). Two kinds are recognised:

- ``icml25-glu``: config.json has ``"architecture": "icml25-glu"`` and the fields of
  :class:`~models.model_independence.glu.GLUConfig` (written by :func:`save_checkpoint`);
- ``llama``: config.json says ``"model_type": "llama"`` or lists ``LlamaForCausalLM``, or the weights hold
  ``model.layers.N.mlp.{gate,up,down}_proj.weight`` for every layer N (Mistral-, Qwen-like GLU models).

Weights are returned as float32 (bf16 and fp16 checkpoints are converted); the statistics cast to float64.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml25.errors import UserError

from . import glu

LLAMA = "llama"
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
STATS = ("u", "l2", "h", "match")

_MLP_KEY = re.compile(r"^model\.layers\.(\d+)\.mlp\.(gate|up|down)_proj\.weight$")


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: ``arch`` is "icml25-glu" or "llama", ``weights`` float32 tensors keyed by HF name."""

    path: Path
    arch: str
    config: dict[str, Any] = field(repr=False)
    weights: dict[str, Any] = field(repr=False)
    n_blocks: int
    d_model: int
    d_hidden: int

    def describe(self) -> str:
        return f"{self.arch}, {self.n_blocks} blocks, d_model={self.d_model}, d_hidden={self.d_hidden}"


def save_checkpoint(folder: str | Path, config: Mapping[str, Any], weights: Mapping[str, Any]) -> Path:
    """Write ``config.json`` and ``model.safetensors`` into ``folder`` atomically.

    Both files go to a temporary sibling folder first, which is then renamed into place (an existing folder is
    replaced), so a killed writer never leaves a half-written checkpoint behind.
    """
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        (tmp / CONFIG).write_text(json.dumps(dict(config), indent=2, sort_keys=True) + "\n")
        tensors = {k: v.detach().cpu().contiguous() for k, v in weights.items()}
        save_file(tensors, str(tmp / WEIGHTS), metadata={"format": "pt"})
        if folder.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
            os.replace(folder, old / "ckpt")
            os.replace(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise UserError(f"{path}: no such checkpoint folder")
    if not path.is_dir():
        raise UserError(f"{path}: a checkpoint must be a folder with config.json and model.safetensors")
    cfg_path = path / CONFIG
    if not cfg_path.is_file():
        raise UserError(f"{path}: no config.json in the checkpoint folder")
    try:
        config = json.loads(cfg_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{cfg_path}: unreadable JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise UserError(f"{cfg_path}: expected a JSON object, got {type(config).__name__}")
    return config


def _read_weights(path: Path) -> dict[str, Any]:
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if (path / WEIGHTS).is_file():
        files = [path / WEIGHTS]
    elif (path / INDEX).is_file():
        try:
            weight_map = json.loads((path / INDEX).read_text())["weight_map"]
            files = [path / name for name in sorted(set(weight_map.values()))]
        except (
            OSError,
            UnicodeDecodeError,
            json.JSONDecodeError,
            KeyError,
            TypeError,
            AttributeError,
        ) as exc:
            raise UserError(f"{path / INDEX}: unreadable shard index ({exc})") from exc
        for f in files:
            if not f.is_file():
                raise UserError(f"{path}: shard {f.name} listed in {INDEX} is missing")
    else:
        extra = " (torch pickles such as pytorch_model.bin are not loaded)" if any(path.glob("*.bin")) else ""
        raise UserError(f"{path}: no weights: expected {WEIGHTS} or {INDEX}{extra}")
    weights: dict[str, Any] = {}
    for f in files:
        try:
            tensors = load_file(str(f))
        except (SafetensorError, OSError, ValueError) as exc:
            raise UserError(f"{f}: unreadable safetensors file ({exc})") from exc
        for k, t in tensors.items():
            weights[k] = t.float() if t.is_floating_point() and t.dtype != torch.float32 else t
    return weights


def _glu_checkpoint(path: Path, config: dict[str, Any], weights: dict[str, Any]) -> Checkpoint:
    names = ("d_in", "d_model", "d_hidden", "n_blocks", "n_classes")
    missing = [n for n in names if not isinstance(config.get(n), int) or config[n] < 1]
    if missing:
        raise UserError(f"{path / CONFIG}: icml25-glu config needs positive integers {', '.join(missing)}")
    cfg = glu.GLUConfig(**{n: config[n] for n in names})
    expected = {
        "model.embed_in.weight": (cfg.d_model, cfg.d_in),
        "model.embed_in.bias": (cfg.d_model,),
        "lm_head.weight": (cfg.n_classes, cfg.d_model),
        "lm_head.bias": (cfg.n_classes,),
    }
    for layer in range(cfg.n_blocks):
        expected[glu.gate_key(layer)] = (cfg.d_hidden, cfg.d_model)
        expected[glu.up_key(layer)] = (cfg.d_hidden, cfg.d_model)
        expected[glu.down_key(layer)] = (cfg.d_model, cfg.d_hidden)
    absent = sorted(set(expected) - set(weights))
    extra = sorted(set(weights) - set(expected))
    if absent or extra:
        raise UserError(
            f"{path}: icml25-glu weights do not match config.json (missing: {absent or 'none'}; "
            f"unexpected: {extra or 'none'})"
        )
    for k, shape in expected.items():
        if tuple(weights[k].shape) != shape:
            raise UserError(
                f"{path}: inconsistent shapes: {k} is {tuple(weights[k].shape)}, config.json implies {shape}"
            )
    return Checkpoint(path, glu.ARCHITECTURE, config, weights, cfg.n_blocks, cfg.d_model, cfg.d_hidden)


def _llama_checkpoint(path: Path, config: dict[str, Any], weights: dict[str, Any]) -> Checkpoint:
    found: dict[int, set[str]] = {}
    for k in weights:
        m = _MLP_KEY.match(k)
        if m:
            found.setdefault(int(m.group(1)), set()).add(m.group(2))
    if not found:
        raise UserError(
            f"{path} is not a GLU model: no model.layers.N.mlp.{{gate,up,down}}_proj weights "
            f"(model_type {config.get('model_type', 'unknown')!r}; the paper's other models need its "
            "Alg. 5 distillation into a GLU MLP first)"
        )
    n_blocks = max(found) + 1
    for layer in range(n_blocks):
        lacking = {"gate", "up", "down"} - found.get(layer, set())
        if lacking:
            raise UserError(
                f"{path}: layer {layer} lacks mlp.{{{','.join(sorted(lacking))}}}_proj.weight "
                f"(layers 0..{n_blocks - 1} expected)"
            )
    gate0 = weights[glu.gate_key(0)]
    if gate0.dim() != 2:
        raise UserError(f"{path}: inconsistent shapes: {glu.gate_key(0)} is {tuple(gate0.shape)}")
    h, d = (int(s) for s in gate0.shape)
    for layer in range(n_blocks):
        for key, shape in (
            (glu.gate_key(layer), (h, d)),
            (glu.up_key(layer), (h, d)),
            (glu.down_key(layer), (d, h)),
        ):
            if tuple(weights[key].shape) != shape:
                raise UserError(
                    f"{path}: inconsistent shapes: {key} is {tuple(weights[key].shape)}, expected "
                    f"{shape} (from {glu.gate_key(0)})"
                )
    for cfg_key, value in (("num_hidden_layers", n_blocks), ("hidden_size", d), ("intermediate_size", h)):
        if isinstance(config.get(cfg_key), int) and config[cfg_key] != value:
            raise UserError(
                f"{path}: inconsistent shapes: config.json has {cfg_key}={config[cfg_key]} but the "
                f"weights imply {value}"
            )
    return Checkpoint(path, LLAMA, config, weights, n_blocks, d, h)


def load_checkpoint(folder: str | Path) -> Checkpoint:
    """Read a checkpoint folder (see the module docstring); every problem raises a :class:`UserError` naming
    the path: missing folder, config.json or weights, unreadable JSON, non-GLU models, inconsistent shapes."""
    path = Path(folder)
    config = _read_config(path)
    weights = _read_weights(path)
    if config.get("architecture") == glu.ARCHITECTURE:
        return _glu_checkpoint(path, config, weights)
    if "architecture" in config and "model_type" not in config:
        raise UserError(
            f"{path / CONFIG}: unknown architecture {config['architecture']!r} (expected "
            f"{glu.ARCHITECTURE!r} or a Hugging Face Llama config)"
        )
    if not any(k.startswith("model.") for k in weights) and any(k.startswith("layers.") for k in weights):
        weights = {f"model.{k}" if not k.startswith("lm_head.") else k: v for k, v in weights.items()}
    return _llama_checkpoint(path, config, weights)


def check_compatible(a: Checkpoint, b: Checkpoint, stat: str) -> None:
    """Raise :class:`UserError` unless statistic ``stat`` can compare checkpoints a and b.

    "u", "l2" and "h" need the same architecture, block count, d_model and d_hidden (matched weight rows, and
    PERMTEST's phi_l2, compare tensors of equal shapes). "match" only needs the same architecture and block
    count and the same inputs (input width, or vocabulary): activations are h x N matrices on shared inputs, and
    the paper zero-pads to compare h_1 != h_2 (see :func:`~.stats.phi_match` for how that stays valid).
    """
    if stat not in STATS:
        raise UserError(f"unknown statistic {stat!r}: expected one of {', '.join(STATS)}")
    problem = None
    if a.arch != b.arch:
        problem = "different architectures"
    elif a.n_blocks != b.n_blocks:
        problem = "different block counts"
    elif stat != "match" and (a.d_model, a.d_hidden) != (b.d_model, b.d_hidden):
        problem = "different widths"
    elif a.arch == glu.ARCHITECTURE and a.config.get("d_in") != b.config.get("d_in"):
        problem = f"different input widths (d_in {a.config.get('d_in')} vs {b.config.get('d_in')})"
    if problem:
        raise UserError(
            f"cannot compare {a.path} ({a.describe()}) with {b.path} ({b.describe()}) using "
            f"stat {stat!r}: {problem}"
        )
