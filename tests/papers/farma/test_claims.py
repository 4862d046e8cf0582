"""farma: every claim against the stub that kills it, and a decoder that passes it. Decodes on the default
synthetic language with its exact base LM (GrammarLM: pi* itself), summary.json built by the evaluate stage's own
functions (models/farma/experiment.py: claim_numbers, exact_trap) and the claims computed by the report's claim
functions (tests.helpers.claim_verdict).

Stubs: a zero and a random reward model in FaRMA's place (reward_gain; competitive, against an ARGS as good as
the V_max oracle); the BT-only prefix model, FaRMA's RM trained without the max epochs (trap_learned); a FaRMA
scorer that scores its candidates one by one (one_call_per_token, an invariant); V_max with the max replaced by a
mean (trap_exact, simulated). The passing side: the exact beta V_max scorer in FaRMA's place."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers import claim_verdict

SLUG = "farma"
K, BETA, N = 5, 10.0, 200


@functools.cache
def _lang():
    from models.farma.language import make_language

    return make_language(np.random.default_rng(0))


def _prompts() -> np.ndarray:
    return np.random.default_rng(1).integers(0, _lang().prompts, N)


def _zero_net(out: int):
    import torch

    from models.farma.nets import CausalNet

    net = CausalNet(_lang().tokens, _lang().prompts, out)
    for p in net.parameters():
        torch.nn.init.zeros_(p)
    return net.eval()


def _random_net():
    import torch

    from models.farma.nets import CausalNet

    torch.manual_seed(3)
    return CausalNet(_lang().tokens, _lang().prompts, _lang().tokens).eval()


def _scorer(kind: str):
    from models.farma.experiment import scorer

    if kind == "zero":
        return scorer("farma", _zero_net(_lang().tokens))
    if kind == "random":
        return scorer("farma", _random_net())
    if kind == "zero_scalar":
        return scorer("args", _zero_net(1))
    return scorer(kind, lang=_lang(), beta=BETA)  # exact_max, exact_ref


def _rows(decoder: str, kind: str | None) -> list[pd.DataFrame]:
    """Greedy and sampled decodes of the N prompts by pi* guided by ``kind`` (None: pi_ref), labelled."""
    from models.farma.experiment import run_decoder
    from models.farma.language import GrammarLM

    lang, out = _lang(), []
    for mode in ("greedy", "sampled"):
        sc = None if kind is None else _scorer(kind)
        d, r = run_decoder(
            GrammarLM(lang), sc, lang, _prompts(), w=1.0, top_k=K, greedy=mode == "greedy", seed=5
        )
        out.append(pd.DataFrame({"seed": 0, "decoder": decoder, "mode": mode, "candidates": "lm", "prompt": _prompts(),
                                 "reward": r, "tokens": lang.length, "lm_calls": d.lm_calls,
                                 "rm_calls": d.rm_calls}))  # fmt: skip
    return out


@functools.cache
def _decodes(farma: str, args: str) -> pd.DataFrame:
    return pd.concat(
        [*_rows("pi_ref", None), *_rows("farma", farma), *_rows("args", args)], ignore_index=True
    )


def _trap(rewards: list[float]) -> pd.DataFrame:
    return pd.DataFrame([{"seed": k, "decoder": "farma", "tokens": "-", "first": 0, "second": 0, "reward": r}
                         for k, r in enumerate(rewards)])  # fmt: skip


def evaluated(dest: Path, decodes: pd.DataFrame, trap: pd.DataFrame, lang=None) -> Path:
    """summary.json and trap.csv as the evaluate stage writes them."""
    from models.farma.experiment import claim_numbers, exact_trap

    summary = claim_numbers(decodes, trap, K, "lm") | {
        "exact": exact_trap(lang or _lang(), BETA), "top_k": K, "source": "synthetic", "seeds": 1,
    }  # fmt: skip
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "summary.json").write_text(json.dumps(summary))
    trap.to_csv(dest / "trap.csv", index=False)
    return dest


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


def test_zero_and_random_rms_fail_reward_gain(root, tmp_path):
    trap = _trap([1.0])
    zero = verdict(root, "reward_gain", evaluated(tmp_path / "zero", _decodes("zero", "zero_scalar"), trap))
    assert zero["passed"] == 0 and zero["value"] == 0.0, zero  # guidance by zeros is pi_ref
    rand = verdict(
        root, "reward_gain", evaluated(tmp_path / "random", _decodes("random", "zero_scalar"), trap)
    )
    assert rand["passed"] == 0, rand
    oracle = verdict(
        root, "reward_gain", evaluated(tmp_path / "oracle", _decodes("exact_max", "zero_scalar"), trap)
    )
    assert oracle["passed"] == 1 and oracle["value"] >= 0.3, oracle  # the floor is reachable


def test_zero_rm_fails_competitive(root, tmp_path):
    trap = _trap([1.0])
    v = verdict(root, "competitive", evaluated(tmp_path / "zero", _decodes("zero", "exact_max"), trap))
    assert v["passed"] == 0 and v["value"] < -0.2, v
    ok = verdict(root, "competitive", evaluated(tmp_path / "same", _decodes("exact_max", "exact_max"), trap))
    assert ok["passed"] == 1 and ok["value"] == 0.0, ok


def test_bt_only_prefix_model_fails_trap_learned(root, tmp_path):
    from models.farma.data import corpus, pairs
    from models.farma.experiment import Config, run_decoder, scorer, train_lm, train_rm

    lang = _lang()
    cfg = Config(lm_epochs=2, alternations=2)
    lm, _ = train_lm(lang, corpus(lang, 4000, np.random.default_rng(0)), cfg, 0)
    bt_only, _ = train_rm("farma_bt", lm, pairs(lang, 1500, BETA, np.random.default_rng(1)), cfg, 0)
    trap = np.array([lang.trap])
    got = [
        run_decoder(lm, scorer("farma", bt_only.eval()), lang, trap, w=1.0, top_k=K, greedy=True, seed=0)[1][
            0
        ]
    ]
    v = verdict(root, "trap_learned", evaluated(tmp_path / "bt", _decodes("zero", "zero_scalar"), _trap(got)))
    assert v["passed"] == 0 and v["value"] == 0.0, (v, got)
    from models.farma.language import GrammarLM

    oracle = run_decoder(
        GrammarLM(lang), _scorer("exact_max"), lang, trap, w=1.0, top_k=K, greedy=True, seed=0
    )[1][0]
    v = verdict(
        root, "trap_learned", evaluated(tmp_path / "oracle", _decodes("zero", "zero_scalar"), _trap([oracle]))
    )
    assert v["passed"] == 1, (v, oracle)


def test_one_by_one_scorer_breaks_one_call_per_token(root, tmp_path):
    from models.farma.decoders import ScalarScorer

    class OneByOne(ScalarScorer):
        """FaRMA's RM read one candidate at a time: r(s + x) = logits(s)[x], one pass per candidate."""

        def scores(self, prompts, prefix, ids):
            import torch

            self.calls += ids.shape[1]
            return torch.stack([self.net(prompts, prefix)[:, -1].gather(-1, ids[:, j : j + 1])[:, 0]
                                for j in range(ids.shape[1])], dim=1)  # fmt: skip

    ok = verdict(
        root,
        "one_call_per_token",
        evaluated(tmp_path / "ok", _decodes("random", "zero_scalar"), _trap([1.0])),
    )
    assert ok["passed"] == 1 and ok["value"] == 0, ok
    from models.farma.experiment import run_decoder
    from models.farma.language import GrammarLM

    lang = _lang()
    d, r = run_decoder(GrammarLM(lang), OneByOne(net=_random_net()), lang, _prompts(), w=1.0, top_k=K,
                       greedy=True, seed=0)  # fmt: skip
    decodes = _decodes("random", "zero_scalar").copy()
    rows = (decodes.decoder == "farma") & (decodes["mode"] == "greedy")
    decodes.loc[rows, "rm_calls"] = d.rm_calls
    v = verdict(root, "one_call_per_token", evaluated(tmp_path / "one", decodes, _trap([1.0])))
    assert v["passed"] == 0 and v["value"] == N, v


def test_mean_for_max_breaks_trap_exact(root, tmp_path):
    from models.farma.language import Language

    class MeanForMax(Language):
        def exact_scores(self, kind, prompts, prefix):
            return super().exact_scores("mean" if kind == "max" else kind, prompts, prefix)

    lang = MeanForMax.from_arrays(_lang().arrays())
    ok = verdict(
        root, "trap_exact", evaluated(tmp_path / "ok", _decodes("zero", "zero_scalar"), _trap([1.0]))
    )
    assert ok["passed"] == 1 and ok["value"] == 0, ok
    v = verdict(
        root, "trap_exact", evaluated(tmp_path / "mean", _decodes("zero", "zero_scalar"), _trap([1.0]), lang)
    )
    assert v["passed"] == 0 and v["value"] >= 1, v
