"""GSM-Infinity "realistic" subsets (Medium d=2, Hard d=3): a small re-implementation of the generator.

This follows the description of the iGSM-style generator used by GSM-Infinity (Zhou et al., ICML 2025);
it is written from that description and is not the official code.

Structure graph
    Layer 0 holds places (zoos, cities, festivals), layer 1 holds item types (adult animals, schools,
    movies), and an edge ``(L, T)`` says "type T occurs at place L". Every type has at least one place,
    and random extra edges are added. For d = 3 a third layer holds one child quantity (newborn children,
    teachers, nominations) that hangs off every type.

Parameters (the text always writes "the " in front of these keys)
    * count (instance) ``number of T in L``: one per structure edge.
    * average (instance, d = 3 only) ``average number of C per T in L``: one per structure edge.
    * sum aggregate (abstract) ``total number of CAT1 in L`` = sum over the types T mentioned for L
      of ``number of T in L``. A type never mentioned for L counts as 0.
    * product aggregate (abstract, d = 3 only) ``total number of CAT2 in L`` = sum over the types T
      mentioned for L of ``number of T in L`` times ``average number of C per T in L``.
    Aggregates have no sentence of their own. The prompt's notes define them, so a reader (and
    :func:`solve_realistic_text`) can rebuild them from the text alone.

Sentences (one per instance parameter; c is a constant, number_range = 5)
    ``X equals c`` (c in [1, 4]); ``X equals c plus Y`` (c in [1, 4]); ``X equals c times Y``
    (c in [2, 4]); ``X equals Y``; ``X equals the sum of Y and Z``; ``X equals the difference between
    Y and Z`` (= Y - Z); ``X equals the sum of Y, Z, and W`` (distractors may also use four terms).

op (difficulty), as in the official ``num_op(topo)``
    op = the total in-degree of the necessary parameters (the ``topo`` list: the query and all of its
    ancestors). The random-constant node RNG counts as an input whenever a constant appears. So:
    ``c`` -> 1, ``Y`` -> 1, ``c plus/times Y`` -> 2, the sum or difference of two -> 2, the sum of three
    -> 3. A sum aggregate over k types -> k (its k summands). A product aggregate over k types -> 2k
    (k counts plus k averages; the official per-type alias nodes count 0). :func:`count_ops` computes
    this from the structured graph. Generation is rejection sampling that hits op exactly. It rejects
    values that are negative, zero (for instance parameters) or above 1000, as well as dead ends.
    Two local repairs come before a rejection: a negative difference swaps its operands, and a zero
    difference becomes a sum. Both keep op unchanged. A distractor or noise sentence whose value falls
    out of range is replaced by a constant (a distractor) or a copy (noise). The structure is redrawn
    every 25 attempts.

Distractors and noise
    Every structure instance parameter outside ``topo`` is a distractor. It is defined from 1-4
    (geometric) earlier parameters (necessary ones or earlier distractors), with or without a constant.
    Noise statements (``noise_statements=k``) use place and type names that never occur in the core
    structure. Each is wired to 1-2 necessary parameters. Neither kind can change the answer: nothing
    necessary depends on them, and noise places never coincide with a core place, so no core aggregate
    sums over them.

Reverse mode
    The hidden parameter x is the last necessary instance parameter in topo that is defined by a plain
    constant (as in the official ``oneparameterquery``). Its sentence becomes "X is unknown, but it is
    greater than 0". The query's value V is stated as an extra sentence "Q equals V". An instance query Q
    then has two sentences (its definition and the observed value); an aggregate query has only this one.
    Every value is propagated as an affine form
    a*x + b with integer a and b. A product of two forms that both depend on x is nonlinear, and the
    problem is rejected; so is a = 0 for Q. Then x = (V - b) / a, which is an integer because V was
    produced by the true integer x. The question asks for x.
"""

from __future__ import annotations

import random
import re
from typing import Any

NUMBER_RANGE = 5
MAX_VALUE = 1000

# ----------------------------------------------------------------------------------------------------
# Templates: short name lists of our own. Names never contain " in ", " per ", " and ", "," or ".".
# ----------------------------------------------------------------------------------------------------
TEMPLATES: dict[str, dict[str, Any]] = {
    "zoo": {
        "place": "location",
        "places": [
            "Bundle Zoo",
            "Cedar Valley",
            "Pine Ridge",
            "Maple Creek",
            "Harbor Menagerie",
            "Quill Aquarium",
            "Larkspur Farm",
            "Fernhollow Park",
            "Tidewater Zoo",
            "Ashgrove Woods",
            "Willow Marsh",
            "Granite Canyon",
            "Sunset Safari Park",
            "Harbor Sanctuary",
            "Elm Grove Reserve",
        ],
        "types": [
            "adult bear",
            "adult wolf",
            "adult deer",
            "adult fox",
            "adult racoon",
            "adult eagle",
            "adult parrot",
            "adult owl",
            "adult crow",
            "adult otter",
            "adult lion",
            "adult zebra",
            "adult giraffe",
            "adult penguin",
            "adult seal",
            "adult beaver",
        ],
        "cat1": "adult animals",
        "child": "newborn children",
        "cat2": "newborn animal children",
        "noise_places_a": [
            "Amber",
            "Birch",
            "Copper",
            "Dusk",
            "Ember",
            "Frost",
            "Gale",
            "Hazel",
            "Ivory",
            "Juniper",
            "Kestrel",
            "Lunar",
            "Misty",
            "Nettle",
            "Opal",
        ],
        "noise_places_b": [
            "Wetlands",
            "Meadow",
            "Lagoon",
            "Highlands",
            "Thicket",
            "Bayou",
            "Steppe",
            "Tundra Camp",
            "Oasis",
            "Menagerie",
        ],
        "noise_types": [
            "adult badger",
            "adult lynx",
            "adult heron",
            "adult moose",
            "adult hare",
            "adult falcon",
            "adult bison",
            "adult koala",
            "adult tapir",
            "adult walrus",
            "adult ibis",
            "adult gecko",
            "adult marmot",
            "adult ferret",
            "adult stork",
            "adult yak",
            "adult camel",
            "adult llama",
        ],
    },
    "school": {
        "place": "city",
        "places": [
            "Brightwood City",
            "Brackenford",
            "Oakvale City",
            "Stonebridge City",
            "Clearwater City",
            "Fairhaven City",
            "Glenmoor City",
            "Ashford City",
            "Kingsport City",
            "Lakeview City",
            "Millbrook City",
            "Northgate City",
        ],
        "types": [
            "public high school",
            "private middle school",
            "elementary school",
            "culinary school",
            "art academy",
            "nursing school",
            "law school",
            "music conservatory",
            "language school",
            "technical college",
            "dance school",
            "film school",
        ],
        "cat1": "schools",
        "child": "teachers",
        "cat2": "teachers from all schools",
        "noise_places_a": [
            "Port",
            "East",
            "West",
            "Upper",
            "Lower",
            "New",
            "Old",
            "Grand",
            "Little",
            "Saint",
            "Fort",
            "Green",
        ],
        "noise_places_b": [
            "Harbor Town",
            "Hillsborough",
            "Ferndale",
            "Rockport",
            "Bayside",
            "Summerfield",
            "Winterhaven",
            "Crestwood",
            "Dunmore",
            "Elmstead",
        ],
        "noise_types": [
            "flight school",
            "driving school",
            "cooking academy",
            "chess academy",
            "boarding school",
            "coding bootcamp",
            "business school",
            "pharmacy school",
            "dental school",
            "circus school",
            "sailing school",
            "yoga academy",
            "welding institute",
            "acting studio",
        ],
    },
    "movie": {
        "place": "festival",
        "places": [
            "Golden Palm Festival",
            "Silver Screen Festival",
            "Northern Lights Festival",
            "Riverside Film Fest",
            "Crystal Lens Festival",
            "Starlight Cinema Week",
            "Harborfront Festival",
            "Moonrise Film Gala",
            "Cedar Screen Awards",
            "Blue Horizon Festival",
        ],
        "types": [
            "upcoming comedy movie",
            "upcoming drama movie",
            "upcoming thriller movie",
            "quiet travel movie",
            "intense horror movie",
            "space adventure movie",
            "solemn period movie",
            "gritty crime movie",
            "upbeat musical movie",
            "animated family movie",
        ],
        "cat1": "movies",
        "child": "nominations",
        "cat2": "movie nominations",
        "noise_places_a": [
            "Velvet",
            "Scarlet",
            "Obsidian",
            "Emerald",
            "Sapphire",
            "Copper",
            "Iron",
            "Marble",
            "Neon",
            "Coral",
        ],
        "noise_places_b": [
            "Reel Festival",
            "Frame Awards",
            "Projector Gala",
            "Spotlight Week",
            "Premiere Fest",
            "Lens Showcase",
            "Curtain Awards",
            "Screening Days",
        ],
        "noise_types": [
            "quiet documentary movie",
            "noisy action movie",
            "silent black-and-white movie",
            "romantic indie movie",
            "spooky mystery movie",
            "epic war movie",
            "quirky mockumentary movie",
            "slow art-house movie",
            "loud disaster movie",
            "heartfelt biopic movie",
            "bold western movie",
            "sleek spy movie",
        ],
    },
}
TEMPLATE_WEIGHTS = {"zoo": 0.8, "school": 0.1, "movie": 0.1}


def _check_vocabulary() -> None:
    for t in TEMPLATES.values():
        noise_places = {f"{a} {b}" for a in t["noise_places_a"] for b in t["noise_places_b"]}
        assert not noise_places & set(t["places"]) and not set(t["noise_types"]) & set(t["types"])
        for name in list(noise_places) + t["places"] + t["types"] + t["noise_types"]:
            assert not any(bad in f" {name} " for bad in (" in ", " per ", " and ", ",", ".", " of "))


_check_vocabulary()


def _count_key(t: str, place: str) -> str:
    return f"number of {t} in {place}"


def _avg_key(child: str, t: str, place: str) -> str:
    return f"average number of {child} per {t} in {place}"


def _agg_key(cat: str, place: str) -> str:
    return f"total number of {cat} in {place}"


def _instructions(tpl: dict, d: int, mode: str) -> str:
    p = tpl["place"]
    lines = [
        "Answer the question below. Each problem is self-contained: quantities from other problems do not apply.",
        f"Note: the total number of {tpl['cat1']} in a {p} is the sum of the number of every type of "
        f"{tpl['cat1']} mentioned for that {p} in this problem; a type never mentioned for a {p} counts as 0.",
    ]
    if d == 3:
        lines.append(
            f"Note: the total number of {tpl['cat2']} in a {p} is the sum, over every type mentioned for "
            f"that {p}, of the number of that type in the {p} times the average number of {tpl['child']} "
            f"per that type in the {p} (averages may differ between places)."
        )
    if mode == "reverse":
        lines.append("The question might be easier to solve with an equation.")
    lines.append("Give the final answer in the format 'Answer: xxx', where xxx is the number you computed.")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------
# Generation
# ----------------------------------------------------------------------------------------------------
class _Reject(Exception):
    pass


def _draw_structure(rng: random.Random, tpl: dict, op: int) -> tuple[list[str], list[str], list[tuple]]:
    """Places, types and edges (place, type). Larger op -> larger structure (more room for parameters)."""
    n_places = rng.randint(1, min(len(tpl["places"]), 2 + op // 5))
    n_types = rng.randint(2, min(len(tpl["types"]), 3 + op // 3))
    places = rng.sample(tpl["places"], n_places)
    types = rng.sample(tpl["types"], n_types)
    edges = {(rng.choice(places), t) for t in types}  # every type has >= 1 place
    target = rng.randint(len(edges), n_places * n_types)
    candidates = [(p, t) for p in places for t in types if (p, t) not in edges]
    rng.shuffle(candidates)
    edges.update(candidates[: max(0, target - len(edges))])
    return places, types, sorted(edges)


def _affine_apply(form: str, const: int | None, args: list[tuple[int, int]]) -> tuple[int, int]:
    """Affine forms (slope, intercept) in x; raises _Reject when the result would be nonlinear."""
    if form == "const":
        return (0, const)
    if form == "copy":
        return args[0]
    if form == "plus":
        return (args[0][0], args[0][1] + const)
    if form == "times":
        return (args[0][0] * const, args[0][1] * const)
    if form == "diff":
        return (args[0][0] - args[1][0], args[0][1] - args[1][1])
    if form in ("sum", "agg_sum"):
        return (sum(a for a, _ in args), sum(b for _, b in args))
    if form == "agg_prod":
        a_tot, b_tot = 0, 0
        for (a1, b1), (a2, b2) in zip(args[0::2], args[1::2], strict=True):
            if a1 and a2:
                raise _Reject("nonlinear")
            a_tot += a1 * b2 + a2 * b1
            b_tot += b1 * b2
        return (a_tot, b_tot)
    raise AssertionError(form)


def _value(form: str, const: int | None, vals: list[int]) -> int:
    return _affine_apply(form, const, [(0, v) for v in vals])[1]


def _node(name, kind, role, form, deps, const, value, place, typ):
    return {
        "name": name,
        "kind": kind,
        "role": role,
        "form": form,
        "deps": list(deps),
        "const": const,
        "value": value,
        "place": place,
        "type": typ,
    }


def _define(
    rng: random.Random, n_deps: int, with_const: bool, vals: list[int]
) -> tuple[str, int | None, int]:
    """Pick a sentence form for the given number of parameter inputs; returns (form, const, value)."""
    if n_deps == 0:
        c = rng.randint(1, NUMBER_RANGE - 1)
        return "const", c, c
    if n_deps == 1:
        if not with_const:
            return "copy", None, vals[0]
        if rng.random() < 0.5:
            c = rng.randint(1, NUMBER_RANGE - 1)
            return "plus", c, c + vals[0]
        c = rng.randint(2, NUMBER_RANGE - 1)
        return "times", c, c * vals[0]
    if n_deps == 2 and rng.random() < 0.5:
        return "diff", None, vals[0] - vals[1]
    return "sum", None, sum(vals)


def _ok(v: int) -> bool:
    return 0 < v <= MAX_VALUE


def _attempt(rng: random.Random, structure, tpl: dict, d: int, op: int, mode: str) -> dict:
    places, types, edges = structure
    child = tpl["child"]
    inst_meta = {_count_key(t, p): ("count", p, t) for p, t in edges}
    if d == 3:
        inst_meta.update({_avg_key(child, t, p): ("average", p, t) for p, t in edges})
    all_instances = list(inst_meta)

    # aggregates available in the structure
    aggs = []
    for p in places:
        ts = [t for q, t in edges if q == p]
        if not ts:
            continue
        aggs.append((_agg_key(tpl["cat1"], p), "agg_sum", [_count_key(t, p) for t in ts], p))
        if d == 3:
            prod = [k for t in ts for k in (_count_key(t, p), _avg_key(child, t, p))]
            aggs.append((_agg_key(tpl["cat2"], p), "agg_prod", prod, p))
    rng.shuffle(aggs)

    # choose aggregates, then the number of instance parameters, so that op is reachable
    p_agg = rng.random()
    chosen, summands, agg_ops = [], set(), 0
    for a in aggs:
        if rng.random() < p_agg:
            new_summ = summands | set(a[2])
            if agg_ops + len(a[2]) + len(new_summ) <= op:
                chosen.append(a)
                summands, agg_ops = new_summ, agg_ops + len(a[2])
    budget = op - agg_ops
    k_lo = max(len(summands), -(-budget // 3), 1)
    k_hi = min(budget, len(all_instances))
    if k_lo > k_hi:
        raise _Reject("structure too small")
    k = rng.randint(k_lo, k_hi)
    free = [x for x in all_instances if x not in summands]
    inst = sorted(summands) + rng.sample(
        free, k - len(summands)
    )  # sorted: set order varies with the hash seed
    rng.shuffle(inst)
    order: list[str] = list(inst)
    for name, _, summ, _ in chosen:
        lo = max(order.index(s) for s in summ) + 1
        order.insert(rng.randint(lo, len(order)), name)
    agg_by_name = {a[0]: a for a in chosen}

    nodes: dict[str, dict] = {}
    affine: dict[str, tuple[int, int]] = {}
    uncovered: list[str] = []
    remaining_inst, remaining_budget = k, budget
    for pos, name in enumerate(order):
        if name in agg_by_name:
            _, form, summ, place = agg_by_name[name]
            value = _value(form, None, [nodes[s]["value"] for s in summ])
            if value > MAX_VALUE:
                raise _Reject("too large")
            nodes[name] = _node(name, "aggregate", "necessary", form, summ, None, value, place, None)
            uncovered = [u for u in uncovered if u not in summ]
            uncovered.append(name)
            continue
        earlier = order[:pos]
        lo = max(1, remaining_budget - 3 * (remaining_inst - 1))
        hi = min(3, remaining_budget - (remaining_inst - 1))
        options = []  # (n_deps, with_const)
        for o in range(lo, hi + 1):
            if o == 1:
                options += [(0, True)] + ([(1, False)] if earlier else [])
            elif o == 2:
                options += ([(1, True)] if earlier else []) + ([(2, False)] if len(earlier) >= 2 else [])
            elif len(earlier) >= 3:
                options.append((3, False))
        if not options:
            raise _Reject("dead end")
        # favour consuming parameters that nothing uses yet
        if len(uncovered) > remaining_inst and any(n >= 2 for n, _ in options):
            options = [o for o in options if o[0] >= 2] or options
        n_deps, with_const = rng.choice(options)
        deps: list[str] = []
        for _ in range(n_deps):
            pool_u = [u for u in uncovered if u not in deps]
            pool = pool_u if pool_u and rng.random() < 0.8 else [e for e in earlier if e not in deps]
            deps.append(rng.choice(pool))
        vals = [nodes[x]["value"] for x in deps]
        form, const, value = _define(rng, n_deps, with_const, vals)
        if form == "diff" and value < 0:
            deps.reverse()
            value = -value
        if form == "diff" and value == 0:
            form, value = "sum", sum(vals)
        if not _ok(value):
            raise _Reject("bad value")
        kind, place, typ = inst_meta[name]
        nodes[name] = _node(name, kind, "necessary", form, deps, const, value, place, typ)
        uncovered = [u for u in uncovered if u not in deps] + [name]
        remaining_inst -= 1
        remaining_budget -= n_deps + (1 if with_const else 0)
    if uncovered != [order[-1]] or remaining_budget != 0:
        raise _Reject("not connected")
    query = order[-1]

    hidden = None
    if mode == "reverse":
        consts = [n for n in order[:-1] if nodes[n]["form"] == "const"]
        if not consts:
            raise _Reject("no constant to hide")
        hidden = consts[-1]
        for n in order:
            nd = nodes[n]
            affine[n] = (
                (1, 0)
                if n == hidden
                else _affine_apply(nd["form"], nd["const"], [affine[x] for x in nd["deps"]])
            )
        a, b = affine[query]
        if a == 0:
            raise _Reject("query does not depend on x")
        if (nodes[query]["value"] - b) % a or (nodes[query]["value"] - b) // a != nodes[hidden]["value"]:
            raise _Reject("non-integer solution")
    return {
        "order": order,
        "nodes": nodes,
        "query": query,
        "hidden": hidden,
        "affine": affine,
        "inst_meta": inst_meta,
        "all_instances": all_instances,
    }


def _add_distractors(rng: random.Random, core: dict) -> list[str]:
    nodes, order = core["nodes"], core["order"]
    rest = [x for x in core["all_instances"] if x not in nodes]
    rng.shuffle(rest)
    done: list[str] = []
    for name in rest:
        pool = order + done
        n = 1
        while n < min(4, len(pool)) and rng.random() < 0.5:
            n += 1
        with_const = n == 1 and rng.random() < 0.5
        if rng.random() < 0.15:
            n, with_const = 0, True
        deps = rng.sample(pool, n)
        vals = [nodes[x]["value"] for x in deps]
        form, const, value = _define(rng, n, with_const, vals)
        if form == "diff" and value < 0:
            deps.reverse()
            value = -value
        if not _ok(value):  # fall back to a plain constant rather than reject the whole problem
            deps, (form, const, value) = [], _define(rng, 0, True, [])
        kind, place, typ = core["inst_meta"][name]
        nodes[name] = _node(name, kind, "distractor", form, deps, const, value, place, typ)
        done.append(name)
    return done


def _add_noise(rng: random.Random, core: dict, tpl: dict, d: int, k: int) -> list[str]:
    if k <= 0:
        return []
    nodes, order = core["nodes"], core["order"]
    places = [f"{a} {b}" for a in tpl["noise_places_a"] for b in tpl["noise_places_b"]]
    kinds = ["count", "average"] if d == 3 else ["count"]
    capacity = len(places) * len(tpl["noise_types"]) * len(kinds)
    if k > capacity:
        raise ValueError(f"noise_statements={k} exceeds the {capacity} noise names of this template")
    chosen: set[tuple] = set()
    out = []
    while len(out) < k:
        key = (rng.choice(kinds), rng.choice(places), rng.choice(tpl["noise_types"]))
        if key in chosen:
            continue
        chosen.add(key)
        kind, place, typ = key
        name = _count_key(typ, place) if kind == "count" else _avg_key(tpl["child"], typ, place)
        n = min(len(order), 1 if rng.random() < 0.5 else 2)
        deps = rng.sample(order, n)
        vals = [nodes[x]["value"] for x in deps]
        form, const, value = _define(rng, n, n == 1 and rng.random() < 0.5, vals)
        if form == "diff" and value < 0:
            deps.reverse()
            value = -value
        if not _ok(value):
            form, const, value = "copy", None, vals[0]
            deps = deps[:1]
        nodes[name] = _node(name, kind, "noise", form, deps, const, value, place, typ)
        out.append(name)
    return out


def _the(name: str, cap: bool = False) -> str:
    return ("The " if cap else "the ") + name


def _sentence(nd: dict) -> str:
    f, c, deps = nd["form"], nd["const"], [_the(x) for x in nd["deps"]]
    head = _the(nd["name"], cap=True) + " equals "
    if f == "const":
        return head + str(c)
    if f == "plus":
        return head + f"{c} plus {deps[0]}"
    if f == "times":
        return head + f"{c} times {deps[0]}"
    if f == "copy":
        return head + deps[0]
    if f == "diff":
        return head + f"the difference between {deps[0]} and {deps[1]}"
    if len(deps) == 2:
        return head + f"the sum of {deps[0]} and {deps[1]}"
    return head + "the sum of " + ", ".join(deps[:-1]) + f", and {deps[-1]}"


def _var_names():
    i = 0
    while True:
        letters = "ABCDEFGHIJKLMNOPQRSTUVWYZ"  # x is reserved for the unknown
        yield letters[i % 25] + (str(i // 25) if i >= 25 else "")
        i += 1


def _fmt_aff(a: int, b: int) -> str:
    if a == 0:
        return str(b)
    s = "x" if a == 1 else f"{a}*x"
    return s if b == 0 else f"{s} + {b}" if b > 0 else f"{s} - {-b}"


def _solution(core: dict, mode: str) -> str:
    nodes, order, hidden = core["nodes"], core["order"], core["hidden"]
    aff = core["affine"] if mode == "reverse" else {n: (0, nodes[n]["value"]) for n in order}
    names = _var_names()
    var: dict[str, str] = {}
    steps = []
    for n in order:
        nd = nodes[n]
        v = var[n] = next(names)
        show = _fmt_aff(*aff[n])
        wrap = [f"({e})" if " " in (e := _fmt_aff(*aff[x])) else e for x in nd["deps"]]
        dv = [var[x] for x in nd["deps"]]
        f, c = nd["form"], nd["const"]
        if n == hidden:
            body = f"{v} = x (unknown)"
        elif f == "const":
            body = f"{v} = {c}"
        elif f == "copy":
            body = f"{v} = {dv[0]} = {show}"
        elif f in ("plus", "times"):
            sym = "+" if f == "plus" else "*"
            body = f"{v} = {c} {sym} {dv[0]} = {c} {sym} {wrap[0]} = {show}"
        elif f == "agg_prod":
            pairs = list(zip(dv[0::2], dv[1::2], strict=True))
            pv = list(zip(wrap[0::2], wrap[1::2], strict=True))
            body = (
                f"{v} = "
                + " + ".join(f"{p} * {q}" for p, q in pairs)
                + " = "
                + " + ".join(f"{p} * {q}" for p, q in pv)
                + f" = {show}"
            )
        else:
            sym = " - " if f == "diff" else " + "
            body = f"{v} = {sym.join(dv)} = {sym.join(wrap)} = {show}"
        steps.append(f"Define {_the(n)} as {v}; {body}.")
    q = core["query"]
    if mode == "forward":
        steps.append(f"Answer: {nodes[q]['value']}")
    else:
        a, b = aff[q]
        V = nodes[q]["value"]
        steps.append(
            f"We know {var[q]} = {V}, so {_fmt_aff(a, b)} = {V}; hence x = ({V} - ({b})) / {a} = {nodes[hidden]['value']}."
        )
        steps.append(f"Answer: {nodes[hidden]['value']}")
    return "\n".join(steps)


def generate_realistic(
    op: int,
    d: int,
    mode: str,
    seed: int,
    template: str | None = None,
    noise_statements: int = 0,
    max_tries: int = 10_000,
) -> dict:
    """Generate one realistic GSM-Infinity problem with exactly ``op`` operations (see module docstring)."""
    if not isinstance(op, int) or op < 1:
        raise ValueError(f"op must be an integer >= 1, got op={op!r}")
    if d not in (2, 3):
        raise ValueError(f"d must be 2 or 3, got d={d!r}")
    if mode not in ("forward", "reverse"):
        raise ValueError(f"mode must be 'forward' or 'reverse', got mode={mode!r}")
    if template is not None and template not in TEMPLATES:
        raise ValueError(f"unknown template={template!r}; expected one of {sorted(TEMPLATES)}")
    if mode == "reverse" and op < 2:
        raise ValueError(f"reverse mode needs op >= 2 (a hidden constant and the query), got op={op!r}")
    if noise_statements < 0:
        raise ValueError(f"noise_statements must be >= 0, got noise_statements={noise_statements!r}")
    rng = random.Random(seed)
    if template is None:
        template = rng.choices(list(TEMPLATE_WEIGHTS), weights=list(TEMPLATE_WEIGHTS.values()))[0]
    tpl = TEMPLATES[template]
    core = None
    structure = None
    for tries in range(max_tries):
        if tries % 25 == 0:  # keep a structure for a few attempts, then redraw it
            structure = _draw_structure(rng, tpl, op)
        try:
            core = _attempt(rng, structure, tpl, d, op, mode)
            break
        except _Reject:
            continue
    if core is None:
        raise RuntimeError(f"no valid problem for op={op}, d={d}, mode={mode!r} after max_tries={max_tries}")

    distractors = _add_distractors(rng, core)
    noise = _add_noise(rng, core, tpl, d, noise_statements)
    nodes, query, hidden = core["nodes"], core["query"], core["hidden"]
    sentences = [
        _the(n, cap=True) + " is unknown, but it is greater than 0" if n == hidden else _sentence(nodes[n])
        for n in core["order"] + distractors + noise
        if nodes[n]["kind"] in ("count", "average")
    ]
    if hidden is not None:
        sentences.append(_the(query, cap=True) + f" equals {nodes[query]['value']}")
    rng.shuffle(sentences)
    target = hidden if mode == "reverse" else query
    prompt = (
        _instructions(tpl, d, mode)
        + "\nProblem: "
        + ". ".join(sentences)
        + "."
        + f"\nQuestion: What is {_the(target)}?"
    )
    answer = nodes[target]["value"]
    graph = {
        "template": template,
        "d": d,
        "mode": mode,
        "nodes": [nodes[n] for n in core["order"] + distractors + noise],
        "topo": core["order"],
        "query": query,
        "hidden": hidden,
        "observed_value": nodes[query]["value"] if mode == "reverse" else None,
        "target": target,
        "necessary": core["order"],
        "distractors": distractors,
        "noise": noise,
    }
    result = {
        "subset": "medium" if d == 2 else "hard",
        "mode": mode,
        "op": count_ops(graph),
        "template": template,
        "prompt": prompt,
        "solution": _solution(core, mode),
        "answer": answer,
        "graph": graph,
        "seed": seed,
    }
    assert result["op"] == op
    return result


def count_ops(graph: dict) -> int:
    """op = total in-degree over the necessary parameters; a constant counts as one input (RNG)."""
    by_name = {n["name"]: n for n in graph["nodes"]}
    total = 0
    for name in graph["topo"]:
        nd = by_name[name]
        total += len(nd["deps"]) + (1 if nd["const"] is not None else 0)
    return total


def evaluate_graph(graph: dict, x: int | None = None) -> dict[str, int]:
    """Values of all nodes from the structured graph; with ``x`` the hidden parameter is set to ``x``."""
    vals: dict[str, int] = {}
    for nd in graph["nodes"]:  # nodes are stored in a dependency-respecting order
        if x is not None and nd["name"] == graph["hidden"]:
            vals[nd["name"]] = x
        else:
            vals[nd["name"]] = _value(nd["form"], nd["const"], [vals[dep] for dep in nd["deps"]])
    return vals


# ----------------------------------------------------------------------------------------------------
# Independent text solver
# ----------------------------------------------------------------------------------------------------
_PARAM_START = r"(?=the (?:average |total )?number of )"
_RE_SUM_NOTE = re.compile(
    r"Note: the total number of (.+?) in a (\w+) is the sum of the number of every type"
)
_RE_PROD_NOTE = re.compile(
    r"Note: the total number of (.+?) in a (\w+) is the sum, over every type mentioned for that \w+, of the "
    r"number of that type in the \w+ times the average number of (.+?) per that type"
)


def _parse_param(text: str) -> str:
    text = text.strip()
    if text.startswith("The "):
        text = "t" + text[1:]
    if not re.fullmatch(r"the (?:average |total )?number of .+ in .+", text):
        raise ValueError(f"cannot parse parameter {text!r}")
    return text[4:]


def _split_params(text: str) -> list[str]:
    parts = re.split(r",? and " + _PARAM_START + r"|, " + _PARAM_START, text)
    return [_parse_param(p) for p in parts]


def _parse_rhs(rhs: str) -> tuple[str, int | None, list[str]]:
    rhs = rhs.strip()
    if re.fullmatch(r"\d+", rhs):
        return "const", int(rhs), []
    m = re.fullmatch(r"(\d+) (plus|times) (.+)", rhs)
    if m:
        return m.group(2), int(m.group(1)), [_parse_param(m.group(3))]
    m = re.fullmatch(r"the difference between (.+)", rhs)
    if m:
        deps = _split_params(m.group(1))
        if len(deps) != 2:
            raise ValueError(f"cannot parse difference {rhs!r}")
        return "diff", None, deps
    m = re.fullmatch(r"the sum of (.+)", rhs)
    if m:
        deps = _split_params(m.group(1))
        if len(deps) < 2:
            raise ValueError(f"cannot parse sum {rhs!r}")
        return "sum", None, deps
    return "copy", None, [_parse_param(rhs)]


def _parse_problem(prompt: str) -> dict:
    """The prompt's text as: ``defs`` {parameter: [(form, const, deps)]} (the observed value removed),
    ``unknown`` (reverse mode's x, or None), ``observation`` ((parameter, value) or None), ``target`` (the
    question's parameter), the notes' categories (``sum_cats`` {cat: place word}, ``prod_cats`` {cat: child})
    and ``counts_at`` {place: [(type, count parameter)]} over every parameter the text mentions."""
    m_prob = re.search(r"^Problem: (.*)$", prompt, re.M)
    m_q = re.search(r"^Question: What is (.+)\?\s*$", prompt, re.M)
    if not m_prob or not m_q:
        raise ValueError("prompt has no 'Problem:' or 'Question: What is ...?' line")
    sum_cats = {m.group(1): m.group(2) for m in _RE_SUM_NOTE.finditer(prompt)}
    prod_cats = {m.group(1): m.group(3) for m in _RE_PROD_NOTE.finditer(prompt)}
    body = m_prob.group(1).strip()
    if not body.endswith("."):
        raise ValueError("problem text does not end with '.'")
    defs: dict[str, list[tuple]] = {}
    unknown = None
    for sent in body[:-1].split(". "):
        m = re.fullmatch(r"(.+) is unknown, but it is greater than 0", sent)
        if m:
            if unknown is not None:
                raise ValueError("more than one unknown")
            unknown = _parse_param(m.group(1))
            continue
        lhs, sep, rhs = sent.partition(" equals ")
        if not sep:
            raise ValueError(f"cannot parse sentence {sent!r}")
        defs.setdefault(_parse_param(lhs), []).append(_parse_rhs(rhs))

    observation = None
    for name in [n for n in defs if n.startswith("total ")]:  # aggregates are implicit: a value is observed
        ds = defs.pop(name)
        if len(ds) != 1 or ds[0][0] != "const" or observation is not None:
            raise ValueError(f"unexpected sentence for the aggregate {name!r}")
        observation = (name, ds[0][1])
    for name, ds in defs.items():
        if len(ds) > 2:
            raise ValueError(f"{name!r} is defined more than twice")
        if len(ds) == 2:
            consts = [x for x in ds if x[0] == "const"]
            if observation is not None or not consts or len(consts) == 2:
                raise ValueError(f"ambiguous definitions of {name!r}")
            observation = (name, consts[0][1])
            ds.remove(consts[0])

    # which count / average parameters are mentioned for each place
    mentioned: set[str] = set(defs) | ({unknown} if unknown else set())
    for ds in defs.values():
        for _, _, deps in ds:
            mentioned.update(deps)
    counts_at: dict[str, list[tuple[str, str]]] = {}
    for name in mentioned:
        if not name.startswith(("average ", "total ")):
            typ, place = name[len("number of ") :].split(" in ")
            counts_at.setdefault(place, []).append((typ, name))

    return {
        "defs": defs,
        "unknown": unknown,
        "observation": observation,
        "target": _parse_param(m_q.group(1)),
        "sum_cats": sum_cats,
        "prod_cats": prod_cats,
        "counts_at": counts_at,
    }


def count_ops_text(prompt: str) -> int:
    """op recounted from the TEXT: the total in-degree of the parameters the answer needs. Those are the
    question's parameter (forward) or the observed one (reverse) and everything its definition reads,
    recursively; a sentence "X equals c" counts 1, "c plus/times Y" 2, "Y" 1, a sum or difference of j
    parameters j; x (reverse) counts 1 (the constant it hides); an aggregate of a place counts one input per
    parameter it sums (the counts mentioned for the place; for a product aggregate also the averages)."""
    pp = _parse_problem(prompt)
    defs, unknown, counts_at = pp["defs"], pp["unknown"], pp["counts_at"]
    root = pp["target"] if unknown is None else pp["observation"][0] if pp["observation"] else None
    if root is None:
        raise ValueError("reverse problem without an observed value")
    mentioned = set(defs) | {unknown} | {d for ds in defs.values() for _, _, deps in ds for d in deps}

    def inputs(name: str) -> list[str | None]:
        """The inputs of one parameter: other parameters, and None for a constant."""
        if name == unknown:
            return [None]
        if name in defs:
            _, const, deps = defs[name][0]
            return list(deps) + ([None] if const is not None else [])
        if name.startswith("total number of "):
            cat, place = name[len("total number of ") :].split(" in ")
            items = sorted(counts_at.get(place, []))
            if cat in pp["sum_cats"]:
                return [n for _, n in items]
            if cat in pp["prod_cats"]:
                child = pp["prod_cats"][cat]
                avgs = [f"average number of {child} per {t} in {place}" for t, _ in items]
                return [n for _, n in items] + [a for a in avgs if a in mentioned]
            raise ValueError(f"no note defines {name!r}")
        raise ValueError(f"{name!r} is needed but never defined")

    total, seen, stack = 0, set(), [root]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        ins = inputs(name)
        total += len(ins)
        stack += [x for x in ins if x is not None]
    return total


def solve_realistic_text(prompt: str) -> int:
    """Solve a generated problem from its TEXT only (forward evaluation or a linear equation in x)."""
    pp = _parse_problem(prompt)
    defs, unknown, observation, counts_at = pp["defs"], pp["unknown"], pp["observation"], pp["counts_at"]
    sum_cats, prod_cats = pp["sum_cats"], pp["prod_cats"]

    memo: dict[str, tuple[int, int]] = {}
    visiting: set[str] = set()

    def val(name: str) -> tuple[int, int]:
        if name in memo:
            return memo[name]
        if name in visiting:
            raise ValueError(f"cyclic definition of {name!r}")
        visiting.add(name)
        if name == unknown:
            res = (1, 0)
        elif name in defs:
            form, const, deps = defs[name][0]
            res = _affine_apply(form, const, [val(x) for x in deps])
        elif name.startswith("total number of "):
            cat, place = name[len("total number of ") :].split(" in ")
            items = sorted(counts_at.get(place, []))
            if cat in sum_cats:
                res = _affine_apply("agg_sum", None, [val(n) for _, n in items])
            elif cat in prod_cats:
                args = []
                for typ, n in items:
                    avg = f"average number of {prod_cats[cat]} per {typ} in {place}"
                    args += [val(n), val(avg) if (avg in defs or avg == unknown) else (0, 0)]
                res = _affine_apply("agg_prod", None, args)
            else:
                raise ValueError(f"no note defines {name!r}")
        else:
            res = (0, 0)  # never mentioned: does not exist (count 0)
        visiting.discard(name)
        memo[name] = res
        return res

    target = pp["target"]
    try:
        if unknown is None:
            a, b = val(target)
            if a:
                raise ValueError("forward problem depends on an unknown")
            return b
        if observation is None:
            raise ValueError("reverse problem without an observed value")
        obs_name, obs_value = observation
        a, b = val(obs_name)
        if a == 0 or (obs_value - b) % a:
            raise ValueError("the equation has no unique integer solution")
        x = (obs_value - b) // a
        ta, tb = val(target)
        return ta * x + tb
    except _Reject as exc:
        raise ValueError("the equation is not linear in x") from exc
