"""Artifacts of a GHOST run as safetensors (no pickle): proxy generators and GCNs, with their shapes in JSON."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .nets import GCN, Generator


def save_module(module: torch.nn.Module, path: Path, shape: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.detach().contiguous() for k, v in module.state_dict().items()},
        str(path),
        metadata={"shape": json.dumps(shape, sort_keys=True)},
    )


def _shape(path: Path) -> dict:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return json.loads(f.metadata()["shape"])


def load_generator(path: Path) -> Generator:
    s = _shape(path)
    g = Generator(s["n_classes"], s["n_features"], s["noise_dim"], s["dropout"])
    g.load_state_dict(load_file(str(path)))
    return g


def load_gcn(path: Path) -> GCN:
    s = _shape(path)
    m = GCN(s["d_in"], s["d_hidden"], s["n_classes"], s["dropout"])
    m.load_state_dict(load_file(str(path)))
    return m


def generator_shape(g: Generator) -> dict:
    return {
        "n_classes": g.emb.num_embeddings,
        "n_features": g.out.out_features,
        "noise_dim": g.noise_dim,
        "dropout": g.body[2].p,
    }


def gcn_shape(m: GCN) -> dict:
    return {
        "d_in": m.conv1.lin.in_features,
        "d_hidden": m.conv1.lin.out_features,
        "n_classes": m.conv2.lin.out_features,
        "dropout": m.dropout,
    }


def load_run(run_dir: Path) -> tuple[dict[str, GCN], dict[str, list[Generator]]]:
    """What the train stage saved for one run: the global models by name (sorted: ``central``, ``fedavg``,
    ``ghost``, ``ghost_<variant>``..., ``local_<k>``) and the generators by FGW structure, in client order."""
    names = sorted(p.stem for p in (run_dir / "models").glob("*.safetensors"))
    models = {n: load_gcn(run_dir / "models" / f"{n}.safetensors") for n in names}
    gens = {
        d.name: [load_generator(p) for p in sorted(d.glob("*.safetensors"))]
        for d in sorted((run_dir / "generators").iterdir())
        if d.is_dir()
    }
    return models, gens
