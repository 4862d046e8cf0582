"""The symbolic subset of GSM-Infinity: a random assignment tree hidden among underivable look-alikes.

One problem with difficulty op and n_noise noise statements (seeded by ``random.Random(seed)``; uniform draws
are taken as int(U n) and permutations as sorts by uniform keys, which is what the official code's
randint / shuffle draw, without their per-call overhead):

1. Draw op + n_noise + 1 distinct variable names V000000..V999999 (op alone without noise).
2. Core graph: the first op names, shuffled, form a random recursive tree: node i >= 1 gets the parent
   randint(0, i - 1). Every edge carries one of "", " + 1", " - 1" (uniformly); the root gets randint(0, 10).
   The core statements are ``assign ROOT = c`` and ``assign CHILD = PARENT[ + 1 | - 1]``: op statements, so
   **difficulty = op = the number of core assignments** (the root's included). Values may be negative.
3. Query: a value drawn uniformly from the core nodes' values; the answer is the SET of core variables whose
   value equals it (scored by exact set equality).
4. Noise: n_noise + 1 other names form a second random tree in the same format whose root is never assigned
   (n_noise statements), so none of them is derivable (close noise that lexical retrieval cannot separate
   from the core).
5. All statements are shuffled into the context.

``count_ops_text`` recounts op from the text (the statements a full derivation applies).
``solve_symbolic_text`` is the generator's oracle: it reads only the prompt text, propagates values from the
assigned constants through the statements, and returns the derivable variables equal to the queried value.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict

import numpy as np

NAME_SPACE = 1_000_000
EDGE_OPS = ("", " + 1", " - 1")
INSTRUCTION = (
    "The context lists relationships between variables; they are independent equations that all hold at the "
    "same time.\nUsing only these relationships, find every variable whose value can be derived and equals "
    "{value}.\nReason step by step, show your calculations, and end with your final answer in one sentence."
)

_ASSIGN = re.compile(r"assign (V\d+) = (?:(-?\d+)|(V\d+)(?: ([+-]) 1)?)\.")
_QUERY = re.compile(r"can be derived and equals (-?\d+)\.")


def _shuffled(draw, items: list) -> list:
    """A uniformly random permutation (sorting by i.i.d. uniform keys: ties have probability ~0)."""
    return sorted(items, key=lambda _: draw())


def _tree(draw, names: list[str]) -> tuple[list[str], list[int]]:
    """A random recursive tree on ``names`` (already in a uniformly random order, as drawn): (the order, the
    parent index of nodes 1..n-1), the parent of node i uniform on 0..i-1."""
    return names, [int(draw() * i) for i in range(1, len(names))]


def _names(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct names V000000..V999999 in a uniformly random order (a uniform sample without
    replacement is already randomly ordered): 20-bit draws, rejecting values >= 10^6 and repeats."""
    chosen: dict[int, None] = {}
    while len(chosen) < count:
        need = count - len(chosen) + 1
        block = rng.getrandbits(20 * need)
        for _ in range(need):
            i = block & 0xFFFFF
            block >>= 20
            if i < NAME_SPACE:
                chosen[i] = None
    return [f"V{i:06d}" for i in list(chosen)[:count]]


_DELTA = (0, 1, -1)
_SHORT = ("=", "+ 1", "- 1")


def _noise_tree(rng: random.Random, count: int, taken: set[str]) -> tuple[list[str], list[int], list[int]]:
    """The noise tree, drawn with numpy (it can hold thousands of statements): ``count`` distinct names not in
    ``taken``, in a uniformly random order (the root first), each node's parent index uniform on the earlier
    nodes, and each edge's operation code (0: "", 1: " + 1", 2: " - 1")."""
    gen = np.random.default_rng(rng.getrandbits(64))
    picked: dict[str, None] = {}
    while len(picked) < count:
        for i in gen.integers(0, NAME_SPACE, size=count - len(picked) + 8).tolist():
            name = f"V{i:06d}"
            if name not in taken:
                picked[name] = None
    names = list(picked)[:count]
    parents = (gen.random(count - 1) * np.arange(1, count)).astype(np.int64).tolist()
    kinds = gen.integers(0, 3, size=count - 1).tolist()
    return names, parents, kinds


def _check(op: int, noise_statements: int) -> None:
    if not isinstance(op, int) or op < 1:
        raise ValueError(f"op must be an integer >= 1, got {op!r}")
    if not isinstance(noise_statements, int) or noise_statements < 0:
        raise ValueError(f"noise_statements must be an integer >= 0, got {noise_statements!r}")


def generate_symbolic(op: int, seed: int, noise_statements: int = 0) -> dict:
    """One problem: prompt, answer (list of variable names), reference solution and the structured graph
    (``core``: rows [name, parent, op, value] in a derivation order, the root first; the noise tree as
    ``noise_names`` (its never-assigned root first), ``noise_parent`` and ``noise_op`` codes)."""
    _check(op, noise_statements)
    rng = random.Random(seed)
    draw = rng.random
    core, parents = _tree(draw, _names(rng, op))
    kinds = [int(draw() * 3) for _ in parents]
    root_value = int(draw() * 11)
    query_index = int(draw() * op)
    noise = _noise_tree(rng, noise_statements + 1, set(core)) if noise_statements else ([None], [], [])
    total = op + noise_statements
    if noise_statements:
        perm = np.random.default_rng(rng.getrandbits(64)).permutation(total).tolist()
    else:
        perm = _shuffled(draw, list(range(total)))
    return _assemble(op, seed, core, parents, kinds, root_value, query_index, noise, perm)


def _assemble(op, seed, core, parents, kinds, root_value, query_index, noise, perm) -> dict:
    """The problem's texts and graph from its draws (noise = (names, parent indices, op codes))."""
    noise_names, noise_parents, noise_kinds = noise
    n_noise = len(noise_parents)
    value = [root_value]
    statements = [f"assign {core[0]} = {root_value}"]
    rows = [[core[0], None, None, root_value]]
    steps = []
    for i, (j, k) in enumerate(zip(parents, kinds, strict=True), 1):  # parents precede children in ``core``
        v = value[j] + _DELTA[k]
        value.append(v)
        child, parent, sym = core[i], core[j], EDGE_OPS[k]
        statements.append(f"assign {child} = {parent}{sym}")
        steps.append(f"{child} = {parent}{sym} = {value[j]}{sym} = {v}")
        rows.append([child, parent, _SHORT[k], v])
    query_value = value[query_index]
    answer = [name for name, v in zip(core, value, strict=True) if v == query_value]
    if n_noise:
        statements += [
            f"assign {noise_names[i]} = {noise_names[j]}{EDGE_OPS[k]}"
            for i, j, k in zip(range(1, n_noise + 1), noise_parents, noise_kinds, strict=True)
        ]
    context = " ".join([f"{statements[i]}." for i in perm])
    found = ", ".join(answer)
    solution = "\n".join(
        [
            f"The only direct assignment is {core[0]} = {root_value}.",
            "Deriving from it:",
            *steps,
            f"The derivable variables equal to {query_value} are: {found}.",
            f"ANSWER: {found}",
        ]
    )
    return {
        "subset": "symbolic",
        "mode": None,
        "op": op,
        "seed": seed,
        "noise_statements": n_noise,
        "prompt": f"<context>\n{context}\n</context>\n\n" + INSTRUCTION.format(value=query_value),
        "answer": answer,
        "solution": solution,
        "graph": {
            "core": rows,
            "noise_root": noise_names[0],
            # noise node i >= 1: name noise_names[i], parent noise_names[noise_parent[i - 1]], op EDGE_OPS[code]
            "noise_names": noise_names if n_noise else [],
            "noise_parent": noise_parents,
            "noise_op": noise_kinds,
            "query_value": query_value,
        },
    }


def parse_symbolic(prompt: str) -> tuple[dict[str, int], list[tuple[str, str, int]], int]:
    """The prompt's statements as (constants {var: c}, relations [(target, source, delta)]) and the query value."""
    query = _QUERY.search(prompt)
    if not query:
        raise ValueError("no query value found in the prompt")
    start, end = prompt.find("<context>"), prompt.find("</context>")
    if start < 0 or end < 0:
        raise ValueError("no <context> ... </context> block in the prompt")
    context = prompt[start + len("<context>") : end]
    constants: dict[str, int] = {}
    relations: list[tuple[str, str, int]] = []
    for m in _ASSIGN.finditer(context):
        target, const, source, sign = m.groups()
        if const is not None:
            constants[target] = int(const)
        else:
            relations.append((target, source, 0 if sign is None else (1 if sign == "+" else -1)))
    missing = context.count("assign ") - len(constants) - len(relations)
    if missing:
        raise ValueError(f"could not parse {missing} of the statements")
    return constants, relations, int(query.group(1))


def propagate(constants: dict[str, int], relations: list[tuple[str, str, int]], rounds: int | None = None):
    """Values derivable from the constants; ``rounds`` limits the parallel substitution depth (None: all)."""
    values = dict(constants)
    children: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for target, source, delta in relations:
        children[source].append((target, delta))
    frontier = list(values)
    depth = 0
    while frontier and (rounds is None or depth < rounds):
        nxt = []
        for node in frontier:
            for child, delta in children[node]:
                if child not in values:
                    values[child] = values[node] + delta
                    nxt.append(child)
        frontier, depth = nxt, depth + 1
    return values


def count_ops_text(prompt: str) -> int:
    """op recounted from the prompt TEXT: the statements a full derivation applies, i.e. the assigned constants
    plus every relation whose source is derivable (one statement per derivable variable). The noise tree's root
    is never assigned, so none of its statements counts."""
    constants, relations, _ = parse_symbolic(prompt)
    return len(propagate(constants, relations))


def solve_symbolic_text(prompt: str) -> list[str]:
    """The derivable variables equal to the queried value, from the prompt text alone (sorted)."""
    constants, relations, target = parse_symbolic(prompt)
    return sorted(v for v, x in propagate(constants, relations).items() if x == target)
