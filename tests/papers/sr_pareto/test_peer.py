"""The gplearn peer baseline of sr_pareto: lengths, R^2 and program strings of its final population.

Planted data: X ~ N(0, 1), 200 x 2, standardised; y = x0 x1 + 0.5 x0, z-scored. A small run (population
100, 5 generations) keeps the test fast; each returned program string is parsed back into a gplearn program
and into plain numpy, and both must reproduce the reported R^2.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from models.sr_pareto.peer import gplearn_population

MAX_LENGTH = 7
TOKEN = re.compile(r"(add|sub|mul)\(|X(\d+)|(-?\d+\.\d+)|[(), ]")
NUMPY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def planted(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 2))
    X = (X - X.mean(0)) / X.std(0)
    y = X[:, 0] * X[:, 1] + 0.5 * X[:, 0]
    return X, (y - y.mean()) / y.std()


def parse(text: str) -> list:
    """gplearn's printed program -> its prefix list: function names, feature indices (int), constants."""
    out: list = []
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        assert m, f"cannot parse {text!r} at {pos}"
        if m.group(1):
            out.append(m.group(1))
        elif m.group(2):
            out.append(int(m.group(2)))
        elif m.group(3):
            out.append(float(m.group(3)))
        pos = m.end()
    return out


def numpy_eval(prefix: list, X: np.ndarray) -> np.ndarray:
    def walk(i: int) -> tuple[np.ndarray, int]:
        node = prefix[i]
        if isinstance(node, str):
            a, i = walk(i + 1)
            b, i = walk(i)
            return NUMPY_OPS[node](a, b), i
        if isinstance(node, int):
            return X[:, node], i + 1
        return np.full(len(X), node), i + 1

    pred, end = walk(0)
    assert end == len(prefix)
    return pred


def gplearn_execute(prefix: list, X: np.ndarray) -> np.ndarray:
    from gplearn._program import _Program
    from gplearn.functions import _function_map

    funcs = [_function_map[f] for f in NUMPY_OPS]
    program = [_function_map[n] if isinstance(n, str) else n for n in prefix]
    prog = _Program(
        function_set=funcs,
        arities={2: funcs},
        init_depth=(1, 3),
        init_method="half and half",
        n_features=X.shape[1],
        const_range=(-1.0, 1.0),
        metric=None,
        p_point_replace=0.05,
        parsimony_coefficient=0.001,
        random_state=None,
        program=program,
    )
    assert len(prog.program) == len(prefix)
    return prog.execute(X)


@pytest.fixture(scope="module")
def population() -> tuple[np.ndarray, np.ndarray, list[dict]]:
    X, y = planted()
    return X, y, gplearn_population(X, y, seed=0, population_size=100, generations=5, max_length=MAX_LENGTH)


def test_population_shape(population):
    _, _, pop = population
    assert pop
    texts = [p["program"] for p in pop]
    assert len(texts) == len(set(texts))
    for p in pop:
        assert isinstance(p["length"], int) and p["length"] % 2 == 1 and 1 <= p["length"] <= MAX_LENGTH
        assert np.isfinite(p["r2"]) and p["r2"] <= 1.0
        assert p["length"] == len(parse(p["program"]))


def test_r2_reproduced_from_program_string(population):
    X, y, pop = population
    for p in pop:
        prefix = parse(p["program"])
        exact = not any(isinstance(n, float) for n in prefix)  # no constants rounded by the printing
        tol = 1e-12 if exact else 1e-2
        for pred in (gplearn_execute(prefix, X), numpy_eval(prefix, X)):
            r2 = 1.0 - np.mean((y - pred) ** 2)
            assert r2 == pytest.approx(p["r2"], abs=tol), p["program"]


def test_planted_structure_found(population):
    _, _, pop = population
    # gplearn's constants are not fitted, so y's 1/sqrt(1.25) scale is missed: mul(X0, X1) (length 3) scores
    # 1 - (2 - 2/sqrt(1.25)) ~ 0.79, mul(X0, add(X1, 0.5)) (length 5) ~ 0.99
    assert max(p["r2"] for p in pop) > 0.75


def test_deterministic(population):
    X, y, pop = population
    assert gplearn_population(X, y, seed=0, population_size=100, generations=5, max_length=MAX_LENGTH) == pop
