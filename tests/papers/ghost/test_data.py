"""GHOST's data paths: the Planetoid loader on a tiny fixture written here, and the prepare stage's errors."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import yaml

from icml25.errors import UserError
from icml25.runner import run_stage
from tests.helpers import paper_params


def write_planetoid(root, name="Cora", n_train=6, n_test=4, n_extra=500, features=5, classes=3, seed=0):
    """The eight Planetoid raw files (`ind.<name>.*`) of a tiny graph, in the format PyG reads (PyG carves a
    500-node validation mask after the train nodes, so the graph has at least n_train + 500 nodes)."""
    rng = np.random.default_rng(seed)
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    n_all = n_train + n_extra  # allx: the labelled train nodes and the other non-test nodes
    n = n_all + n_test
    x = (rng.random((n, features)) < 0.4).astype(np.float32)
    labels = np.arange(n) % classes
    onehot = np.eye(classes)[labels]
    test_index = np.arange(n_all, n)
    objs = {
        "x": sp.csr_matrix(x[:n_train]),
        "tx": sp.csr_matrix(x[n_all:]),
        "allx": sp.csr_matrix(x[:n_all]),
        "y": onehot[:n_train],
        "ty": onehot[n_all:],
        "ally": onehot[:n_all],
        "graph": {i: [(i + 1) % n, (i + 3) % n] for i in range(n)},
    }
    for key, obj in objs.items():
        with open(raw / f"ind.{name.lower()}.{key}", "wb") as f:
            pickle.dump(obj, f)
    (raw / f"ind.{name.lower()}.test.index").write_text("\n".join(map(str, test_index)) + "\n")
    return n, labels


def test_planetoid_loader_reads_the_raw_files_without_downloading(tmp_path):
    from models.ghost import graph  # imports torch: inside the test, not at collection

    n, labels = write_planetoid(tmp_path)
    g = graph.load_planetoid(tmp_path, "Cora")
    assert g.num_nodes == n and g.num_features == 5 and g.num_classes == 3
    assert g.y.tolist() == labels.tolist()
    e = g.edge_index
    assert bool((e[0] != e[1]).all())
    assert e.shape[1] == 4 * n  # 2n undirected edges (i -> i+1, i -> i+3), each stored in both directions


def test_planetoid_loader_names_the_missing_files(tmp_path):
    from models.ghost import graph

    write_planetoid(tmp_path)
    (tmp_path / "Cora" / "raw" / "ind.cora.tx").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing: ind\.cora\.tx"):
        graph.load_planetoid(tmp_path, "Cora")


def _params(root, **prepare):
    return paper_params(root, "ghost", **prepare)


def test_prepare_stage_reads_planetoid_behind_the_source_switch(tmp_path, root):
    write_planetoid(tmp_path / "data" / "ghost" / "input" / "planetoid", n_train=12, n_test=12)
    params = _params(
        root,
        source="planetoid",
        planetoid_root="planetoid",
        num_clients=2,
        least_samples=3,
        runs=2,
        alpha=1.0,
    )
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(tmp_path, "ghost", "prepare")
    out = tmp_path / "data" / "ghost" / "prepared" / "main"
    meta = json.loads((out / "meta.json").read_text())
    assert meta["source"] == "planetoid" and meta["num_nodes"] == 524 and meta["runs"] == 2
    assert np.load(out / "graph.npz")["x"].shape == (524, 5)


def test_prepare_stage_errors_name_the_bad_setting(tmp_path, root):
    params = _params(root, source="planetoid", planetoid_root="nowhere")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(UserError, match="nowhere/Cora/raw"):
        run_stage(tmp_path, "ghost", "prepare")
    params = _params(root, source="planetoid", planetoid_root="/data/Cora")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(
        UserError, match="papers.ghost.prepare.planetoid_root: '/data/Cora' must be a path inside"
    ):
        run_stage(tmp_path, "ghost", "prepare")
    params = _params(root, num_nodes=40, least_samples=5, num_clients=10)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(
        UserError, match=r"papers.ghost.prepare: 10 clients x 5 nodes each exceeds the 40 nodes"
    ):
        run_stage(tmp_path, "ghost", "prepare")
    assert not (tmp_path / "data" / "ghost" / "prepared" / "main").exists()  # nothing half-written
