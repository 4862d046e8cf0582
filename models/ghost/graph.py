"""Graphs: the offline SBM generator, the k-NN graph over scikit-learn's bundled digits images, the Planetoid
loader, induced subgraphs and GCN propagation matrices.

A graph is ``x in R^{N x F}``, labels ``y in {0..C-1}^N`` and an undirected ``edge_index in N^{2 x E}`` that
lists both directions of every edge, without self-loops or duplicates (the input contract, checked by
``validate``).

GCN propagation (Kipf & Welling; PyG's ``GCNConv`` with its defaults):

    A_hat = D^{-1/2} (A + w I) D^{-1/2},   D_ii = sum_j (A + w I)_ij,

with w = 1. The official GHOST code builds its pseudo graphs with the diagonal set to 1 *and* ``add_self_loops``
on top, so ``GCNConv`` sees every self-loop twice: w = 2 (the ``self_loop_weight`` switch).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from icml25.errors import UserError


@dataclass(frozen=True)
class Graph:
    x: torch.Tensor  # N x F float32
    y: torch.Tensor  # N int64
    edge_index: torch.Tensor  # 2 x E int64, both directions, no self-loops

    @property
    def num_nodes(self) -> int:
        return int(self.y.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self.y.max()) + 1

    @property
    def num_features(self) -> int:
        return int(self.x.shape[1])


def clean_edges(edge_index: torch.Tensor | np.ndarray, num_nodes: int) -> torch.Tensor:
    """Symmetrise, drop self-loops and duplicates: the undirected simple graph of any edge list."""
    e = torch.as_tensor(np.asarray(edge_index), dtype=torch.long).reshape(2, -1)
    if e.numel() and (int(e.min()) < 0 or int(e.max()) >= num_nodes):
        raise ValueError(f"edge_index refers to nodes outside 0..{num_nodes - 1}")
    e = torch.cat([e, e.flip(0)], dim=1)
    e = e[:, e[0] != e[1]]
    return torch.unique(e, dim=1)


def make_graph(edge_index, x, y) -> Graph:
    """A :class:`Graph` from any PyG-style triple (tensors or arrays); edges are made undirected and simple."""
    x = torch.as_tensor(np.asarray(x), dtype=torch.float32)
    y = torch.as_tensor(np.asarray(y), dtype=torch.long).reshape(-1)
    if x.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x must be N x F with N = len(y) = {y.shape[0]}, got shape {tuple(x.shape)}")
    if y.numel() == 0 or int(y.min()) < 0:
        raise ValueError("y must hold class ids 0..C-1")
    return Graph(x=x, y=y, edge_index=clean_edges(edge_index, y.shape[0]))


def make_sbm(
    num_nodes: int, num_classes: int, num_features: int, p_in: float, p_out: float, noise: float, seed: int
) -> Graph:
    """Stochastic block model with class-dependent Gaussian features (the spec's CPU stand-in for Cora).

    Class sizes are as equal as possible; an edge (i, j), i < j, exists with probability p_in when
    y_i = y_j and p_out otherwise; x_i = mu_{y_i} + noise * eps_i with mu_c ~ N(0, I_F), eps_i ~ N(0, I_F).
    """
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(num_classes), int(np.ceil(num_nodes / num_classes)))[:num_nodes]
    y = rng.permutation(y)
    same = y[:, None] == y[None, :]
    prob = np.where(same, p_in, p_out)
    upper = np.triu(rng.random((num_nodes, num_nodes)) < prob, k=1)
    src, dst = np.nonzero(upper)
    mu = rng.standard_normal((num_classes, num_features))
    x = mu[y] + noise * rng.standard_normal((num_nodes, num_features))
    return make_graph(np.stack([src, dst]), x.astype(np.float32), y)


def make_digits_knn(num_nodes: int, k: int, seed: int) -> Graph:
    """A graph with real features that ships offline: ``num_nodes`` of scikit-learn's 1,797 bundled 8 x 8
    digit images (drawn without replacement, all of them when ``num_nodes`` >= 1797), features the 64 pixel
    intensities / 16 (in [0, 1]), 10 classes, and the symmetrised k-nearest-neighbour graph (Euclidean) over
    the images: i ~ j when j is among the k nearest of i or i among those of j."""
    from sklearn.datasets import load_digits
    from sklearn.neighbors import kneighbors_graph

    d = load_digits()
    n_all = len(d.target)
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(n_all, size=num_nodes, replace=False)) if num_nodes < n_all else np.arange(n_all)
    x = (d.data[idx] / 16.0).astype(np.float32)
    a = kneighbors_graph(x, n_neighbors=k, include_self=False).tocoo()
    return make_graph(np.stack([a.row, a.col]), x, d.target[idx])


PLANETOID_FILES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


# Every global the Planetoid raw files (Python 2 pickles of scipy CSR matrices, numpy arrays and a
# defaultdict(list)) name, under their old and their current module paths. Nothing else is looked up: a pickle
# that names any other callable (os.system, builtins.eval, subprocess.Popen, ...) is refused before it is called.
def _planetoid_globals() -> dict[tuple[str, str], object]:
    """The only globals a Planetoid raw file may name (module, name), under their Python 2 and 3 names."""
    import _codecs
    import builtins
    import collections
    import copyreg

    import scipy.sparse
    from numpy._core import multiarray

    return {
        ("numpy.core.multiarray", "_reconstruct"): multiarray._reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): multiarray._reconstruct,
        ("numpy.core.multiarray", "scalar"): multiarray.scalar,
        ("numpy._core.multiarray", "scalar"): multiarray.scalar,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("scipy.sparse.csr", "csr_matrix"): scipy.sparse.csr_matrix,
        ("scipy.sparse._csr", "csr_matrix"): scipy.sparse.csr_matrix,
        ("collections", "defaultdict"): collections.defaultdict,
        ("copy_reg", "_reconstructor"): copyreg._reconstructor,  # Python 2's name of copyreg
        ("copyreg", "_reconstructor"): copyreg._reconstructor,
        ("__builtin__", "object"): builtins.object,
        ("builtins", "object"): builtins.object,
        ("__builtin__", "list"): builtins.list,
        ("builtins", "list"): builtins.list,
        ("_codecs", "encode"): _codecs.encode,  # bytes in protocol-0/2 pickles written by Python 3
    }


class PlanetoidFileError(UserError):
    """A Planetoid raw file that is not what the format holds: refused, never executed."""


class _PlanetoidUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only :func:`_planetoid_globals`: loading a file can build arrays,
    CSR matrices, lists and dicts, and cannot call anything else."""

    def __init__(self, file, path: Path):
        # Python 2 pickles, read as PyG and the Planetoid authors read them
        super().__init__(file, encoding="latin1")
        self._path = path
        self._allowed = _planetoid_globals()

    def find_class(self, module: str, name: str):
        target = self._allowed.get((module, name))
        if target is None:
            raise PlanetoidFileError(
                f"{self._path}: refusing to unpickle {module}.{name}: a Planetoid raw file holds only numpy "
                "arrays, scipy CSR matrices and a dict of lists (is it the file from the Planetoid data set?)"
            )
        return target

    def persistent_load(self, pid):
        raise PlanetoidFileError(f"{self._path}: refusing a persistent id; not a Planetoid raw file")


def _read_planetoid_pickle(path: Path):
    try:
        with open(path, "rb") as f:
            return _PlanetoidUnpickler(f, path).load()
    except PlanetoidFileError:
        raise
    except Exception as exc:  # truncated, not a pickle, a class whose state does not fit
        raise PlanetoidFileError(
            f"{path}: not a readable Planetoid raw file ({type(exc).__name__}: {exc})"
        ) from None


def _dense(obj, path: Path, dims: int = 2) -> np.ndarray:
    arr = np.asarray(obj.todense() if hasattr(obj, "todense") else obj)
    if arr.ndim != dims or arr.dtype == object:
        raise PlanetoidFileError(f"{path}: expected a {dims}-d numeric matrix, got {arr.dtype} {arr.shape}")
    return arr


def load_planetoid(root: str | Path, name: str) -> Graph:
    """Cora / CiteSeer / PubMed from the Planetoid raw files in ``root/<name>/raw`` (never downloads).

    The files are read here, not through PyG's ``Planetoid`` (which downloads when files are missing and
    unpickles them, and its processed cache, with plain ``pickle``/``torch.load``): a missing file is named,
    and the pickles are read by an unpickler that builds only numpy arrays, scipy CSR matrices and a
    ``defaultdict(list)`` and refuses any other global with :class:`PlanetoidFileError`, so a crafted file
    cannot run code. The graph is the one PyG builds: ``x = [allx; tx]`` and ``y = argmax [ally; ty]`` with the
    test rows put at ``test.index``, CiteSeer's isolated test nodes as zero rows, edges from ``graph``.
    """
    root = Path(root)
    raw = root / name / "raw"
    prefix = name.lower()
    missing = [f"ind.{prefix}.{s}" for s in PLANETOID_FILES if not (raw / f"ind.{prefix}.{s}").exists()]
    if missing:
        raise FileNotFoundError(
            f"Planetoid data set {name!r} needs its raw files in {raw} (no downloads here); missing: "
            + ", ".join(missing)
        )
    objs = {s: _read_planetoid_pickle(raw / f"ind.{prefix}.{s}") for s in PLANETOID_FILES[:-1]}
    tx, allx = (_dense(objs[s], raw / f"ind.{prefix}.{s}") for s in ("tx", "allx"))
    ty, ally = (_dense(objs[s], raw / f"ind.{prefix}.{s}") for s in ("ty", "ally"))
    index_path = raw / f"ind.{prefix}.test.index"
    try:
        test_index = np.loadtxt(index_path, dtype=np.int64, ndmin=1)
    except ValueError as exc:
        raise PlanetoidFileError(f"{index_path}: not a list of node ids ({exc})") from None
    graph = objs["graph"]
    if not isinstance(graph, dict) or not all(isinstance(v, (list, tuple)) for v in graph.values()):
        raise PlanetoidFileError(f"{raw / f'ind.{prefix}.graph'}: expected a dict of adjacency lists")
    sorted_test = np.sort(test_index)
    if prefix == "citeseer":  # isolated test nodes are missing from tx/ty: zero rows in their places
        span = int(test_index.max() - test_index.min()) + 1
        tx_ext = np.zeros((span, tx.shape[1]), dtype=tx.dtype)
        tx_ext[sorted_test - test_index.min()] = tx
        ty_ext = np.zeros((span, ty.shape[1]), dtype=ty.dtype)
        ty_ext[sorted_test - test_index.min()] = ty
        tx, ty = tx_ext, ty_ext
    x = np.concatenate([allx, tx]).astype(np.float32)
    y = np.concatenate([ally, ty]).argmax(axis=1)
    try:
        x[test_index] = x[sorted_test]
        y[test_index] = y[sorted_test]
    except IndexError as exc:
        raise PlanetoidFileError(f"{index_path}: test ids do not fit the {len(y)} nodes ({exc})") from None
    src = np.fromiter((k for k, v in graph.items() for _ in v), dtype=np.int64)
    dst = np.fromiter((j for v in graph.values() for j in v), dtype=np.int64)
    try:
        return make_graph(np.stack([src, dst]), x, y)
    except ValueError as exc:
        raise PlanetoidFileError(f"{raw}: {exc}") from None


def induced_edges(edge_index: torch.Tensor, nodes: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Edges of the subgraph induced on ``nodes``, relabelled to 0..len(nodes)-1 in the order of ``nodes``."""
    local = torch.full((num_nodes,), -1, dtype=torch.long)
    local[nodes] = torch.arange(len(nodes))
    keep = (local[edge_index[0]] >= 0) & (local[edge_index[1]] >= 0)
    return local[edge_index[:, keep]]


def subgraph(graph: Graph, nodes: torch.Tensor) -> Graph:
    return Graph(
        x=graph.x[nodes], y=graph.y[nodes], edge_index=induced_edges(graph.edge_index, nodes, graph.num_nodes)
    )


def dense_adjacency(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    """The 0/1 matrix of a simple edge list (duplicates would be summed, as ``to_dense_adj`` does)."""
    a = torch.zeros(n, n)
    a.index_put_((edge_index[0], edge_index[1]), torch.ones(edge_index.shape[1]), accumulate=True)
    return a


def normalized_adjacency(edge_index: torch.Tensor, n: int, self_loop_weight: float = 1.0) -> torch.Tensor:
    """A_hat = D^{-1/2} (A + w I) D^{-1/2} as a sparse COO tensor (what ``GCNConv`` propagates with)."""
    loops = torch.arange(n)
    rows = torch.cat([edge_index[0], loops])
    cols = torch.cat([edge_index[1], loops])
    vals = torch.cat([torch.ones(edge_index.shape[1]), torch.full((n,), float(self_loop_weight))])
    deg = torch.zeros(n).index_add_(0, rows, vals)
    inv = deg.pow(-0.5)
    return torch.sparse_coo_tensor(
        torch.stack([rows, cols]), inv[rows] * vals * inv[cols], (n, n), check_invariants=False
    ).coalesce()


def knn_graph(features: torch.Tensor, k: int = 5) -> torch.Tensor:
    """GHOST's pseudo graph on generated features (``construct_graph``), without self-loops.

    S = norm(X) norm(X)^T; each row keeps its top-k entries (itself included); the result is symmetrised and
    binarised. Returns ``edge_index`` (both directions, no self-loops): the self-loops are added by the
    propagation matrix (:func:`normalized_adjacency`, weight 2 in the official code, 1 with the switch flipped).
    """
    n = features.shape[0]
    z = F.normalize(features.detach(), p=2, dim=1)
    top = torch.topk(z @ z.T, k=min(k, n), dim=1).indices
    a = torch.zeros(n, n, dtype=torch.bool)
    a[torch.arange(n).repeat_interleave(top.shape[1]), top.reshape(-1)] = True
    a = a | a.T
    a.fill_diagonal_(False)
    return a.nonzero().T.contiguous()
