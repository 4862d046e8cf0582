"""Problems generated per second, per subset and context (run by hand: python benchmarks/gsm_infinite.py).

The realistic rows time our own realistic generator, a different design from the official one: they carry no
ratio to the official generator's rate.

One core, op = 10. Each rate is the best of 5 interleaved rounds of 0.6 s (ours and the official generator
alternate, so a change in the machine's load does not bias their ratio). Symbolic "8k" is measured two ways: with the official statement count for 8k Llama-3
tokens (op + int(8000 x 828/9668) statements, the same work as the official generator) and with our
token-fitted 8k SmolLM2 context (which also tokenizes the prompt a few times). The official generator's rates
are the issue's reference figures (measured on one core of these machines); when a checkout of the official
repository is given (``GSM_OFFICIAL=/path/to/gsm_infinite``, e.g. a worktree of the fetched mirror), its
symbolic generator is also timed here, side by side. Nothing of it is copied or committed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import write  # noqa: E402
from models.gsm_infinite.generate import make_problem  # noqa: E402
from models.gsm_infinite.symbolic import generate_symbolic  # noqa: E402

OP = 10
#: the official generator's rates (the issue's reference, one core of these machines). Only the symbolic ones are
#: compared: our realistic generator is a different design (not a port), so a ratio to the official realistic
#: generator's rate would compare two different programs.
REFERENCE = {"symbolic, no noise": 24_000, "symbolic, 8k": 890}
REALISTIC = " (our own generator, a different design)"
NOISE_8K = int(8000 * 828 / 9668)


def rate(fn, seconds: float = 0.6, per_call: int = 1) -> tuple[float, int]:
    """Problems per second over at least ``seconds`` (and at least 3 calls of ``per_call`` problems)."""
    calls, start = 0, time.perf_counter()
    while calls < 3 or time.perf_counter() - start < seconds:
        fn(calls)
        calls += 1
    return calls * per_call / (time.perf_counter() - start), calls * per_call


def best_rates(cases: dict, rounds: int = 5) -> dict[str, tuple[float, int]]:
    """Each case's best rate over ``rounds`` interleaved rounds (the machine's load moves between rounds, not
    within one, so interleaving keeps the ratios between cases honest)."""
    best: dict[str, tuple[float, int]] = {}
    for _ in range(rounds):
        for case, (fn, per_call) in cases.items():
            r, n = rate(fn, per_call=per_call)
            total = best.get(case, (0.0, 0))[1] + n
            best[case] = (max(r, best.get(case, (0.0, 0))[0]), total)
    return best


def official_symbolic(root: Path):
    sys.path.insert(0, str(root / "gsm-infinite" / "data" / "symbolic"))
    import generate_payload  # the official module, from the given checkout

    gen = generate_payload.FindGraphGenerator(0)
    fns = {
        "symbolic, no noise": lambda i: gen.generate_task(OP, OP, with_solution=True),
        "symbolic, 8k": lambda i: gen.generate_task(OP, OP + NOISE_8K, with_solution=True),
    }
    return fns, generate_payload.FindGraphGenerator(1)


def symbolic_distributions(official_gen=None, n: int = 4000) -> dict:
    """Answer-set size and queried value at op = 10: ours and (when available) the official generator's, with
    a two-sample chi-square test on each."""
    import numpy as np
    from scipy.stats import chi2_contingency

    def summary(pairs):
        sizes = np.array([len(a) for a, _ in pairs])
        values = np.array([v for _, v in pairs])
        return sizes, values

    ours = summary(
        [(p["answer"], p["graph"]["query_value"]) for p in (generate_symbolic(OP, i) for i in range(n))]
    )
    out = {"ours": {"mean answer size": float(ours[0].mean()), "mean queried value": float(ours[1].mean())}}
    if official_gen is not None:
        off = summary([(q[1], q[0]) for q in (official_gen.generate_task(OP, OP)[1] for _ in range(n))])
        out["official"] = {
            "mean answer size": float(off[0].mean()),
            "mean queried value": float(off[1].mean()),
        }
        for name, a, b in (("answer size", ours[0], off[0]), ("queried value", ours[1], off[1])):
            cats = np.union1d(a, b)
            table = np.array([[np.sum(a == c) for c in cats], [np.sum(b == c) for c in cats]]) + 0.5
            out[f"chi-square p ({name})"] = float(chi2_contingency(table)[1])
    return out


def main() -> None:
    ours = {
        "symbolic, no noise": lambda i: generate_symbolic(OP, i),
        "symbolic, 8k": lambda i: generate_symbolic(OP, i, noise_statements=NOISE_8K),
        "symbolic, 8k SmolLM2 tokens (fitted)": lambda i: make_problem("symbolic", OP, i, context=8000),
        f"medium, no noise{REALISTIC}": lambda i: make_problem("medium", OP, i, mode="forward"),
        f"hard, no noise{REALISTIC}": lambda i: make_problem("hard", OP, i, mode="forward"),
        f"medium reverse, no noise{REALISTIC}": lambda i: make_problem("medium", OP, i, mode="reverse"),
    }
    cases = {case: (fn, 1) for case, fn in ours.items()}
    gen = None
    if os.environ.get("GSM_OFFICIAL"):
        fns, gen = official_symbolic(Path(os.environ["GSM_OFFICIAL"]))
        cases.update({f"official: {k}": (fn, 1) for k, fn in fns.items()})
    dist = symbolic_distributions(gen)
    print(dist, flush=True)
    make_problem("symbolic", OP, 0, context=8000)  # load the tokenizer once, outside the timings
    measured = best_rates(cases)
    official = {k.removeprefix("official: "): v[0] for k, v in measured.items() if k.startswith("official: ")}
    rows = []
    for case in ours:
        per_s, n = measured[case]
        base = case
        ref = REFERENCE.get(base)
        row = {
            "case (op = 10, one core)": case,
            "ours problems/s": round(per_s, 1),
            "problems timed": n,
            "official, issue's reference /s": ref or "",
            "official, measured here /s": round(official[base], 1) if base in official else "",
            "ours / reference": f"{per_s / ref:.1f}x" if ref else "",
            "ours / official measured here": f"{per_s / official[base]:.1f}x" if base in official else "",
        }
        rows.append(row)
        print(row, flush=True)
    write(
        "gsm_infinite",
        list(rows[0]),
        rows,
        note="Goal of the issue: >= 2x the official generator on symbolic, with the same distributions of op and "
        "answers. Symbolic 8k uses the official statement count for 8k Llama-3 tokens "
        f"({NOISE_8K} noise statements); the fitted row sizes the noise with SmolLM2's tokenizer instead. op is "
        "exact in every generated problem (the op_exact claim). Symbolic answers at op = 10 over 4,000 problems "
        f"each: {json.dumps(dist)}. The realistic rows time our own generator, a different design from the "
        "official one (written from the paper's description, not a port): no speed ratio to the official "
        "realistic generator is given (the issue's >= 5x goal cannot be assessed: the two programs differ), "
        "and their answer distributions are not compared (the official realistic generator loads Llama-3's "
        "tokenizer at import, which is not available offline).",
    )


if __name__ == "__main__":
    main()
