"""GHOST's data paths: the Planetoid loader on a tiny fixture written here, the digits k-NN graph, the prepare
stage's graph draws per run and its errors."""

from __future__ import annotations

import collections
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


def test_planetoid_loader_reads_python2_style_pickles(tmp_path):
    """The real files are Python 2 pickles: protocol 0, copy_reg._reconstructor, scipy.sparse.csr and
    numpy.core module paths, a defaultdict(list) graph. They load through the restricted unpickler."""
    from models.ghost import graph

    n, labels = write_planetoid(tmp_path)
    raw = tmp_path / "Cora" / "raw"
    for key in ("x", "tx", "allx", "y", "ty", "ally", "graph"):
        obj = pickle.loads((raw / f"ind.cora.{key}").read_bytes())
        if key == "graph":
            obj = collections.defaultdict(list, obj)
        old = pickle.dumps(obj, protocol=0)
        old = old.replace(b"scipy.sparse._csr\n", b"scipy.sparse.csr\n").replace(
            b"numpy._core.", b"numpy.core."
        )
        assert b"copy_reg\n_reconstructor" in old or key != "x"
        (raw / f"ind.cora.{key}").write_bytes(old)
    g = graph.load_planetoid(tmp_path, "Cora")
    assert g.num_nodes == n and g.y.tolist() == labels.tolist() and g.edge_index.shape[1] == 4 * n


class _Exploit:
    """Unpickling this calls os.system: what a crafted raw file would do under plain pickle."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("payload", ["os.system", "outside the allow-list", "truncated"])
def test_planetoid_loader_refuses_a_crafted_pickle_without_running_it(tmp_path, payload):
    from models.ghost import graph

    write_planetoid(tmp_path)
    target = tmp_path / "Cora" / "raw" / "ind.cora.graph"
    marker = tmp_path / "pwned"
    if payload == "os.system":
        target.write_bytes(pickle.dumps({0: [1], 1: [_Exploit(marker)]}))
        match = r"ind\.cora\.graph: refusing to unpickle (posix|os)\.system"
    elif payload == "outside the allow-list":  # an innocent-looking class that is still not in the format
        target.write_bytes(pickle.dumps(collections.OrderedDict({0: [1]})))
        match = r"refusing to unpickle collections\.OrderedDict"
    else:
        target.write_bytes(target.read_bytes()[:20])
        match = r"ind\.cora\.graph: not a readable Planetoid raw file"
    with pytest.raises(graph.PlanetoidFileError, match=match) as info:
        graph.load_planetoid(tmp_path, "Cora")
    assert isinstance(info.value, UserError) and "\n" not in str(info.value)  # the CLI's one line
    assert not marker.exists()  # refused before anything was called


def test_prepare_reports_a_crafted_planetoid_file_as_a_user_error(tmp_path, root):
    planetoid = tmp_path / "data" / "ghost" / "input" / "planetoid"
    write_planetoid(planetoid)
    marker = tmp_path / "pwned"
    (planetoid / "Cora" / "raw" / "ind.cora.x").write_bytes(pickle.dumps(_Exploit(marker)))
    params = _params(root, graphs=["planetoid"], planetoid_root="planetoid", num_clients=2, least_samples=3)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(UserError, match=r"ind\.cora\.x: refusing to unpickle"):
        run_stage(tmp_path, "ghost", "prepare")
    assert not marker.exists()


def _params(root, **prepare):
    return paper_params(root, "ghost", **prepare)


def test_prepare_stage_reads_planetoid_behind_the_source_switch(tmp_path, root):
    write_planetoid(tmp_path / "data" / "ghost" / "input" / "planetoid", n_train=12, n_test=12)
    params = _params(
        root,
        graphs=["planetoid"],
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
    assert list(meta["graphs"]) == ["planetoid"] and meta["runs"] == 2
    assert meta["graphs"]["planetoid"]["num_nodes"] == 524
    for r in range(2):  # the same graph every run
        assert np.load(out / "planetoid" / f"run{r}.npz")["x"].shape == (524, 5)


def test_prepare_stage_errors_name_the_bad_setting(tmp_path, root):
    params = _params(root, graphs=["planetoid"], planetoid_root="nowhere")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(UserError, match="nowhere/Cora/raw"):
        run_stage(tmp_path, "ghost", "prepare")
    params = _params(root, graphs=["planetoid"], planetoid_root="/data/Cora")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(
        UserError, match="papers.ghost.prepare.planetoid_root: '/data/Cora' must be a path inside"
    ):
        run_stage(tmp_path, "ghost", "prepare")
    params = _params(root, graphs=["sbm"], num_nodes=40, least_samples=5, num_clients=10)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(
        UserError,
        match=r"papers.ghost.prepare \(sbm, run 0\): 10 clients x 5 nodes each exceeds the 40 nodes",
    ):
        run_stage(tmp_path, "ghost", "prepare")
    params = _params(root, graphs=["sbm", "sbm"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(UserError, match=r"papers.ghost.prepare.graphs: name each graph once"):
        run_stage(tmp_path, "ghost", "prepare")
    params = _params(root, graphs=["cora"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(UserError, match=r"papers.ghost.prepare.graphs\[0\]: must be one of"):
        run_stage(tmp_path, "ghost", "prepare")
    assert not (tmp_path / "data" / "ghost" / "prepared" / "main").exists()  # nothing half-written


def test_digits_knn_graph_is_an_offline_real_feature_graph():
    from models.ghost import graph

    g = graph.make_digits_knn(300, 5, seed=1)
    assert g.num_nodes == 300 and g.num_features == 64 and g.num_classes == 10
    assert float(g.x.min()) >= 0.0 and float(g.x.max()) <= 1.0
    e = g.edge_index
    pairs = set(map(tuple, e.T.tolist()))
    assert all((j, i) in pairs for i, j in pairs) and all(i != j for i, j in pairs)
    deg = np.bincount(e[0].numpy(), minlength=300)
    assert deg.min() >= 5  # every node keeps its own 5 nearest neighbours
    same = (g.y[e[0]] == g.y[e[1]]).float().mean()
    assert same > 0.8  # image neighbours mostly share the digit: a homophilous graph
    other = graph.make_digits_knn(300, 5, seed=2)
    assert not np.array_equal(g.x.numpy(), other.x.numpy())  # a fresh subsample per seed
    full = graph.make_digits_knn(5000, 5, seed=0)
    assert full.num_nodes == 1797  # asking for more than the bundle takes all of it


def test_prepare_draws_a_fresh_graph_and_partition_per_run(tmp_path, root):
    params = _params(root, num_nodes=120, digits_nodes=120, num_clients=3, runs=2)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    run_stage(tmp_path, "ghost", "prepare")
    out = tmp_path / "data" / "ghost" / "prepared" / "main"
    meta = json.loads((out / "meta.json").read_text())
    assert list(meta["graphs"]) == ["sbm", "digits"]
    assert meta["graphs"]["digits"]["num_classes"] == 10 and meta["graphs"]["sbm"]["num_classes"] == 4
    for name in ("sbm", "digits"):
        a, b = (np.load(out / name / f"run{r}.npz") for r in (0, 1))
        assert not np.array_equal(a["x"], b["x"])  # the graph varies with the run
    import pandas as pd

    part = pd.read_csv(out / "partition.csv")
    assert set(part.graph) == {"sbm", "digits"} and len(part) == 2 * 2 * 120
