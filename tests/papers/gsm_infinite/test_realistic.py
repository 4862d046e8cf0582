"""GSM-Infinity realistic generator (Medium d=2, Hard d=3): exact op, text-only solver agreement, reverse mode."""

from __future__ import annotations

import json
import re

import pytest

from models.gsm_infinite.realistic import (
    count_ops,
    evaluate_graph,
    generate_realistic,
    solve_realistic_text,
)

MODES = ("forward", "reverse")


def _problem_sentences(prompt: str) -> list[str]:
    line = re.search(r"^Problem: (.*)$", prompt, re.M).group(1)
    return line[:-1].split(". ")


def _without(prompt: str, names: set[str]) -> str:
    """The prompt with every sentence whose subject is one of ``names`` removed."""
    kept = [s for s in _problem_sentences(prompt) if not any(s.startswith(f"The {n} equals ") for n in names)]
    return re.sub(r"^Problem: .*$", "Problem: " + ". ".join(kept) + ".", prompt, flags=re.M)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("mode", MODES)
def test_exact_op_and_text_solver_agree(d, mode):
    for op in range(2, 16):
        for seed in range(3):
            noise = [0, 4, 25][seed]
            r = generate_realistic(op, d, mode, seed=1000 * op + seed, noise_statements=noise)
            assert r["op"] == op and count_ops(r["graph"]) == op
            assert r["subset"] == ("medium" if d == 2 else "hard") and r["mode"] == mode
            assert solve_realistic_text(r["prompt"]) == r["answer"]
            assert r["solution"].endswith(f"Answer: {r['answer']}")
            assert len(r["graph"]["noise"]) == noise
            json.dumps(r)  # JSON-serializable
            # every stored value is what the definitions give, and all values are in range
            vals = evaluate_graph(r["graph"])
            assert all(vals[n["name"]] == n["value"] and 0 < n["value"] <= 1000 for n in r["graph"]["nodes"])


@pytest.mark.parametrize("template", ["zoo", "school", "movie"])
def test_all_templates_larger_op(template):
    for d in (2, 3):
        for mode in MODES:
            for op in (18, 24, 30):
                r = generate_realistic(op, d, mode, seed=op, template=template, noise_statements=10)
                assert r["template"] == template and count_ops(r["graph"]) == op
                assert solve_realistic_text(r["prompt"]) == r["answer"]


def test_noise_and_distractors_do_not_change_the_answer():
    for d in (2, 3):
        for mode in MODES:
            for seed in range(8):
                clean = generate_realistic(8, d, mode, seed)
                noisy = generate_realistic(8, d, mode, seed, noise_statements=40)
                g = noisy["graph"]
                assert noisy["answer"] == clean["answer"] and g["topo"] == clean["graph"]["topo"]
                necessary = set(g["necessary"])
                assert not necessary & set(g["noise"]) and not necessary & set(g["distractors"])
                by = {n["name"]: n for n in g["nodes"]}
                assert all(by[n]["role"] == "noise" for n in g["noise"])
                # noise is wired to 1-2 necessary parameters and uses places outside the core structure
                core_places = {n["place"] for n in g["nodes"] if n["role"] != "noise"}
                for n in g["noise"]:
                    assert 1 <= len(by[n]["deps"]) <= 2 and set(by[n]["deps"]) <= necessary
                    assert by[n]["place"] not in core_places
                # distractors use 1-4 earlier parameters (or a plain constant) and nothing necessary uses them
                assert all(len(by[n]["deps"]) <= 4 for n in g["distractors"])
                assert not any(set(by[n]["deps"]) - necessary for n in necessary)
                # deleting all noise and distractor sentences from the text leaves the answer unchanged
                stripped = _without(noisy["prompt"], set(g["noise"]) | set(g["distractors"]))
                assert len(_problem_sentences(stripped)) < len(_problem_sentences(noisy["prompt"]))
                assert solve_realistic_text(stripped) == noisy["answer"]


def test_reverse_is_linear_in_x_with_integer_solution():
    for d in (2, 3):
        for op in range(2, 16):
            r = generate_realistic(op, d, "reverse", seed=op)
            g = r["graph"]
            hidden, query = g["hidden"], g["query"]
            assert hidden in g["topo"] and hidden != query and r["answer"] == evaluate_graph(g)[hidden]
            assert f"The {hidden} is unknown, but it is greater than 0" in r["prompt"]
            assert f"The {query} equals {g['observed_value']}" in r["prompt"]
            assert r["prompt"].rstrip().endswith(f"What is the {hidden}?")
            x0 = r["answer"]
            ys = [evaluate_graph(g, x)[query] for x in (x0, x0 + 1, x0 + 2, x0 + 7)]
            slope = ys[1] - ys[0]
            assert slope != 0
            assert ys[2] - ys[1] == slope and ys[3] - ys[0] == 7 * slope  # affine in x
            intercept = ys[0] - slope * x0
            assert (g["observed_value"] - intercept) % slope == 0
            assert (g["observed_value"] - intercept) // slope == x0


def test_text_solver_on_a_hand_written_problem():
    prompt = (
        "Note: the total number of adult animals in a location is the sum of the number of every type of "
        "adult animals mentioned for that location in this problem; a type never mentioned counts as 0.\n"
        "Note: the total number of newborn animal children in a location is the sum, over every type "
        "mentioned for that location, of the number of that type in the location times the average number "
        "of newborn children per that type in the location.\n"
        "Problem: The number of adult bear in Bundle Zoo equals 3. "
        "The number of adult wolf in Bundle Zoo equals 2 times the number of adult bear in Bundle Zoo. "
        "The average number of newborn children per adult bear in Bundle Zoo equals the difference between "
        "the number of adult wolf in Bundle Zoo and the number of adult bear in Bundle Zoo. "
        "The average number of newborn children per adult wolf in Bundle Zoo equals 4 plus the total number "
        "of adult animals in Bundle Zoo. "
        "The number of adult owl in Pine Ridge equals the sum of the number of adult bear in Bundle Zoo, the "
        "number of adult wolf in Bundle Zoo, and the total number of newborn animal children in Bundle Zoo.\n"
        "Question: What is the number of adult owl in Pine Ridge?"
    )
    # bear 3, wolf 6, avg(bear) 3, total adults 9, avg(wolf) 13, newborn 3*3 + 6*13 = 87, owl 3 + 6 + 87
    assert solve_realistic_text(prompt) == 96
    reverse = prompt.replace(
        "The number of adult bear in Bundle Zoo equals 3.",
        "The number of adult bear in Bundle Zoo is unknown, but it is greater than 0.",
    )
    reverse = reverse.replace(
        "\nQuestion:", " The total number of adult animals in Bundle Zoo equals 15.\nQuestion:"
    )
    reverse = reverse.replace(
        "the number of adult owl in Pine Ridge?", "the number of adult bear in Bundle Zoo?"
    )
    assert solve_realistic_text(reverse) == 5  # x + 2x = 15
    nonlinear = reverse.replace(
        "adult animals in Bundle Zoo equals 15", "newborn animal children in Bundle Zoo equals 87"
    )
    with pytest.raises(ValueError, match="linear"):
        solve_realistic_text(nonlinear)


def test_solver_rejects_unparseable_text():
    with pytest.raises(ValueError):
        solve_realistic_text("no problem here")
    with pytest.raises(ValueError):
        solve_realistic_text(
            "Problem: The weather is nice.\nQuestion: What is the number of adult bear in Zoo?"
        )


def test_deterministic_for_a_seed_and_varied_across_seeds():
    for d in (2, 3):
        for mode in MODES:
            a = generate_realistic(10, d, mode, seed=7, noise_statements=5)
            b = generate_realistic(10, d, mode, seed=7, noise_statements=5)
            assert a == b
            prompts = {generate_realistic(10, d, mode, seed=s)["prompt"] for s in range(10)}
            assert len(prompts) == 10


def test_template_weighting_when_none():
    names = [generate_realistic(4, 2, "forward", seed=s)["template"] for s in range(300)]
    assert set(names) == {"zoo", "school", "movie"}
    assert 0.7 < names.count("zoo") / len(names) < 0.9


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"op": 0, "d": 2, "mode": "forward"}, "op=0"),
        ({"op": 5, "d": 4, "mode": "forward"}, "d=4"),
        ({"op": 5, "d": 2, "mode": "sideways"}, "mode='sideways'"),
        ({"op": 5, "d": 2, "mode": "forward", "template": "farm"}, "template='farm'"),
        ({"op": 1, "d": 2, "mode": "reverse"}, "op=1"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        generate_realistic(seed=0, **kwargs)


def test_exhausted_tries_raise_runtime_error():
    with pytest.raises(RuntimeError, match="max_tries"):
        generate_realistic(40, 2, "forward", seed=0, template="zoo", max_tries=1)
