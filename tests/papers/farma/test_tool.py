"""`icml25 farma generate` / `icml25 farma score` (in process) and the Python entries ``generate``,
``sequence_reward``, ``check`` and ``load``, on tiny models built here from a config (a WordLevel tokenizer of
20 words and <pad>, <eos>, <unk>; Llama and GPT-2 models of hidden size 16; no download).

``generate``: each chosen token costs one LM and one RM forward pass, the final eos included (an RM that makes
eos win at once: empty text, 1 call of each; one that makes "cat" win with every token a candidate:
max-new-tokens times "cat", as many calls); with w = 0 it is the LM's own greedy decoding (a plain argmax loop
without a KV cache) and with w = 1 the KV-cache path picks what recomputing every prefix with ``guided_next``
picks (both candidate rules; a GPT-2 RM beside the Llama LM); greedy is deterministic, a sampling seed
reproduces its text and other seeds vary it. ``sequence_reward`` is logits_RM(y_<T)[y_T] by hand, the same
(1e-4) padded left, right or one text at a time (a rotary Llama RM, and a GPT-2 one whose absolute positions
left padding would shift without explicit position ids), and a one-token text is a UserError naming it. The
CLI prints the documented lines (the API's numbers) and writes nothing; each bad input (missing --lm or --rm,
w = -1 or nan, top-k 0 or above the vocabulary, max-new-tokens 0, an empty prompt, an unknown --candidates, an
RM whose vocabulary is under the tokenizer's, a one-token text) is one line naming the value, exit 2, no
traceback, nothing on stdout, the paths and numbers rejected before any model loads; the API raises UserError
on the same values.
"""

from __future__ import annotations

import contextlib
import io
import math
from types import SimpleNamespace

import pytest

from icml25.errors import UserError
from tests.helpers import assert_refused, run_tool

SLUG = "farma"
WORDS = "the a cat dog sat on mat ran to house big small red blue and is was very happy sad".split()
SPECIALS = ["<pad>", "<eos>", "<unk>"]
VOCAB = len(SPECIALS) + len(WORDS)  # 23
PROMPT = "the dog"


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate([*SPECIALS, *WORDS])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"
    )


def _llama(seed: int, vocab: int = VOCAB):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


def _gpt2(seed: int):
    """An RM with absolute position embeddings: padding that shifted positions would change its rewards (a
    rotary Llama's attention only sees relative positions)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=VOCAB, n_embd=16, n_layer=1, n_head=2, n_positions=64, bos_token_id=1, eos_token_id=1
    )
    torch.manual_seed(seed)
    return GPT2LMHeadModel(cfg)


def _fan_of(token: int, seed: int):
    """An RM whose reward is ~20 for ``token`` after every prefix and 0 for every other token: the blocks add
    nothing to the residual, every embedding is e_0 (normed: 4 e_0), and the head reads e_0 into ``token``."""
    import torch

    model = _llama(seed)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[:, 0] = 1.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[token, 0] = 5.0
    return model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Model folders (each with the tokenizer): lm, rm (random), cat_rm and eos_rm (fans of one token),
    small_rm (vocabulary 20 < 23), gpt2_rm (random, absolute positions); and the loaded lm, rm, cat_rm,
    eos_rm, gpt2_rm with the LM's tokenizer."""
    from models.farma.api import load

    d = tmp_path_factory.mktemp("farma-tool")
    tok = _tokenizer()
    assert len(tok) == VOCAB
    cat, eos = tok.convert_tokens_to_ids("cat"), tok.eos_token_id
    built = {
        "lm": _llama(0),
        "rm": _llama(1),
        "cat_rm": _fan_of(cat, 2),
        "eos_rm": _fan_of(eos, 3),
        "small_rm": _llama(4, vocab=VOCAB - 3),
        "gpt2_rm": _gpt2(5),
    }
    paths = {}
    for name, model in built.items():
        paths[name] = d / name
        tok.save_pretrained(paths[name])
        with contextlib.redirect_stderr(io.StringIO()):  # the shard-writing progress bar
            model.save_pretrained(paths[name])
    tokenizer, lm = load(paths["lm"])
    loaded = {name: load(paths[name])[1] for name in ("rm", "cat_rm", "eos_rm", "gpt2_rm")}
    return SimpleNamespace(dir=d, paths=paths, tok=tokenizer, lm=lm, cat=cat, eos=eos, **loaded)


def _run(argv: list[str]) -> tuple[int, str, str]:
    return run_tool(SLUG, *argv)


def _plain_greedy(lm, tok, prompt: str, n: int) -> list[int]:
    """The LM's own greedy tokens (eos included when chosen), recomputing the whole sequence each step."""
    import torch

    ids = list(tok(prompt)["input_ids"])
    new: list[int] = []
    with torch.no_grad():
        for _ in range(n):
            t = int(lm(torch.tensor([ids + new])).logits[0, -1].argmax())
            new.append(t)
            if t == tok.eos_token_id:
                break
    return new


def _guided_no_cache(lm, rm, tok, prompt: str, n: int, candidates: str) -> list[int]:
    """Greedy guided tokens (w = 1, top-k 5) recomputing every prefix in both models: no KV cache."""
    import torch

    from models.farma.decoding import guided_next

    ids = list(tok(prompt)["input_ids"])
    new: list[int] = []
    with torch.no_grad():
        for _ in range(n):
            x = torch.tensor([ids + new])
            t = int(
                guided_next(
                    lm(x).logits[:, -1],
                    rm(x).logits[:, -1],
                    w=1.0,
                    top_k=5,
                    greedy=True,
                    candidates=candidates,
                )
            )
            new.append(t)
            if t == tok.eos_token_id:
                break
    return new


def _text(tok, tokens: list[int]) -> str:
    return tok.decode([t for t in tokens if t != tok.eos_token_id], skip_special_tokens=True)


# ------------------------------------------------------------------------------------------------ generate
def test_calls_count_the_chosen_tokens_eos_included(tiny):
    from models.farma.api import generate

    text, calls = generate(tiny.lm, tiny.eos_rm, tiny.tok, PROMPT, w=10.0, top_k=VOCAB, greedy=True)
    assert text == "" and calls == {"lm_calls": 1, "rm_calls": 1}  # eos chosen at once, left out of the text
    text, calls = generate(tiny.lm, tiny.cat_rm, tiny.tok, PROMPT, w=10.0, top_k=VOCAB, max_new_tokens=7)
    assert text == " ".join(["cat"] * 7) and calls == {
        "lm_calls": 7,
        "rm_calls": 7,
    }  # sampled, yet always cat


def test_w_0_is_the_lms_greedy_decoding(tiny):
    from models.farma.api import generate

    ref = _plain_greedy(tiny.lm, tiny.tok, PROMPT, 12)
    text, calls = generate(tiny.lm, tiny.rm, tiny.tok, PROMPT, w=0.0, top_k=3, max_new_tokens=12, greedy=True)
    assert text == _text(tiny.tok, ref)
    assert calls == {"lm_calls": len(ref), "rm_calls": len(ref)}


@pytest.mark.parametrize(("name", "candidates"), [("rm", "lm"), ("rm", "guided"), ("gpt2_rm", "lm")])
def test_the_kv_cache_path_picks_what_full_recomputation_picks(tiny, name, candidates):
    from models.farma.api import generate

    rm = getattr(tiny, name)  # a Llama RM, or a GPT-2 one beside the Llama LM
    ref = _guided_no_cache(tiny.lm, rm, tiny.tok, PROMPT, 12, candidates)
    text, calls = generate(
        tiny.lm,
        rm,
        tiny.tok,
        PROMPT,
        w=1.0,
        top_k=5,
        max_new_tokens=12,
        greedy=True,
        candidates=candidates,
    )
    assert text == _text(tiny.tok, ref) and calls["lm_calls"] == calls["rm_calls"] == len(ref)


def test_a_strong_reward_steers_greedy_output(tiny):
    from models.farma.api import generate

    plain, _ = generate(
        tiny.lm, tiny.cat_rm, tiny.tok, PROMPT, w=0.0, top_k=VOCAB, max_new_tokens=8, greedy=True
    )
    steered, _ = generate(
        tiny.lm, tiny.cat_rm, tiny.tok, PROMPT, w=10.0, top_k=VOCAB, max_new_tokens=8, greedy=True
    )
    assert "cat" not in plain.split(), plain  # the random LM alone never picks it here
    assert steered.split() == ["cat"] * 8
    # among the LM's top 1 no reward changes anything; the guided top 1 is the reward's favourite
    lm_only, _ = generate(
        tiny.lm, tiny.cat_rm, tiny.tok, PROMPT, w=10.0, top_k=1, max_new_tokens=8, greedy=True
    )
    guided, _ = generate(
        tiny.lm, tiny.cat_rm, tiny.tok, PROMPT, w=10.0, top_k=1, max_new_tokens=8, candidates="guided"
    )
    assert lm_only == plain and guided.split() == ["cat"] * 8


def test_greedy_is_deterministic_and_a_seed_reproduces_sampling(tiny):
    from models.farma.api import generate

    args = (tiny.lm, tiny.rm, tiny.tok, PROMPT)
    kw = {"w": 1.0, "top_k": VOCAB, "max_new_tokens": 10}
    assert generate(*args, **kw, greedy=True) == generate(*args, **kw, greedy=True)
    assert generate(*args, **kw, seed=7) == generate(*args, **kw, seed=7)
    texts = {generate(*args, **kw, seed=s)[0] for s in range(5)}
    assert len(texts) > 1, texts


# ---------------------------------------------------------------------------------------- sequence_reward
TEXTS = ["the cat sat on the mat", "a dog ran", "big red house and small blue house is happy", "the dog"]


@pytest.mark.parametrize("name", ["rm", "gpt2_rm"])
def test_sequence_reward_is_the_last_tokens_logit_after_its_prefix(tiny, name):
    import torch

    from models.farma.api import sequence_reward

    rm = getattr(tiny, name)
    ids = tiny.tok(TEXTS[0])["input_ids"]
    with torch.no_grad():
        by_hand = float(rm(torch.tensor([ids])).logits[0, -2, ids[-1]])
    assert sequence_reward(rm, tiny.tok, TEXTS[:1]) == [pytest.approx(by_hand, abs=1e-5)]


@pytest.mark.parametrize("name", ["rm", "gpt2_rm"])
def test_sequence_reward_is_the_same_padded_left_right_or_alone(tiny, name):
    from models.farma.api import sequence_reward

    rm = getattr(tiny, name)
    alone = [sequence_reward(rm, tiny.tok, [t])[0] for t in TEXTS]
    side = tiny.tok.padding_side
    try:
        by_side = {}
        for s in ("left", "right"):
            tiny.tok.padding_side = s
            by_side[s] = sequence_reward(rm, tiny.tok, TEXTS)
        tiny.tok.padding_side = "right"
        by_side["batches of 3"] = sequence_reward(rm, tiny.tok, TEXTS, batch_size=3)
    finally:
        tiny.tok.padding_side = side
    for s, rewards in by_side.items():
        assert rewards == pytest.approx(alone, abs=1e-4), s
    assert len(set(round(r, 4) for r in alone)) == len(TEXTS)  # not a constant


def test_a_one_token_text_has_no_sequence_reward(tiny):
    from models.farma.api import sequence_reward

    with pytest.raises(UserError, match="text 'cat': 1 token"):
        sequence_reward(tiny.rm, tiny.tok, ["the dog", "cat"])


# -------------------------------------------------------------------------------------------------- the CLI
def test_cli_generate_prints_the_text_and_the_calls(tiny):
    from models.farma.api import generate

    p = tiny.paths
    argv = ["generate", "--lm", str(p["lm"]), "--rm", str(p["rm"]), "--prompt", PROMPT, "--greedy"]
    status, printed, err = _run([*argv, "--w", "0.5", "--top-k", "4", "--max-new-tokens", "6"])
    assert status == 0 and not err, err
    text, calls = generate(tiny.lm, tiny.rm, tiny.tok, PROMPT, w=0.5, top_k=4, max_new_tokens=6, greedy=True)
    assert printed == f"{text}\nlm_calls={calls['lm_calls']} rm_calls={calls['rm_calls']}\n"
    assert 1 <= calls["lm_calls"] <= 6
    status, printed, err = _run(
        ["generate", "--lm", str(p["lm"]), "--rm", str(p["cat_rm"]), "--prompt", PROMPT, "--w", "10"]
        + ["--top-k", str(VOCAB), "--max-new-tokens", "3", "--seed", "3", "--candidates", "guided"]
    )
    assert status == 0 and printed == "cat cat cat\nlm_calls=3 rm_calls=3\n", (printed, err)
    assert sorted(x.name for x in tiny.dir.iterdir()) == sorted(p)  # nothing written


def test_cli_score_prints_one_line_per_text(tiny):
    from models.farma.api import sequence_reward

    status, printed, err = _run(
        ["score", "--rm", str(tiny.paths["rm"]), "--text", TEXTS[0], "--text", TEXTS[1]]
    )
    assert status == 0 and not err, err
    rewards = sequence_reward(tiny.rm, tiny.tok, TEXTS[:2])
    assert printed.splitlines() == [f"{r:.4f}\t{t}" for r, t in zip(rewards, TEXTS[:2], strict=True)]


def _no_load(path):
    raise AssertionError(f"loaded {path} before checking the input")


@pytest.mark.parametrize(
    ("args", "message", "loads"),
    [
        (["--lm", "{d}/gone"], "--lm {d}/gone: no such file or folder", False),
        (["--rm", "{d}/gone"], "--rm {d}/gone: no such file or folder", False),
        (["--w", "-1"], "w = -1.0: the reward weight must be a finite number >= 0", False),
        (["--w", "nan"], "w = nan: the reward weight must be a finite number >= 0", False),
        (["--top-k", "0"], "top-k = 0: must be >= 1", False),
        (["--max-new-tokens", "0"], "max-new-tokens = 0: must be >= 1", False),
        (["--prompt", " "], "prompt ' ': empty", False),
        (["--candidates", "best"], "invalid choice: 'best'", False),
        (["--seed", str(2**64)], "--seed 18446744073709551616: must be an integer in [-2^63, 2^64)", False),
        (["--top-k", str(VOCAB + 1)], f"top-k = {VOCAB + 1}: above the vocabulary of {VOCAB} tokens", True),
        (
            ["--rm", "{small_rm}"],
            f"reward model vocabulary of {VOCAB - 3} tokens: smaller than the tokenizer's {VOCAB}",
            True,
        ),
    ],
    ids=[
        "missing-lm",
        "missing-rm",
        "w-negative",
        "w-nan",
        "top-k-0",
        "max-new-tokens-0",
        "empty-prompt",
        "unknown-candidates",
        "seed-above-torch",
        "top-k-above-vocab",
        "small-rm-vocab",
    ],
)
def test_cli_generate_bad_input_is_one_line_exit_2(tiny, monkeypatch, args, message, loads):
    import models.farma.api as api

    if not loads:
        monkeypatch.setattr(api, "load", _no_load)
    fmt = {"d": tiny.dir, "small_rm": tiny.paths["small_rm"]}
    base = {"--lm": str(tiny.paths["lm"]), "--rm": str(tiny.paths["rm"]), "--prompt": PROMPT}
    given = dict(zip(args[::2], [a.format(**fmt) for a in args[1::2]], strict=True))
    argv = ["generate"] + [x for kv in {**base, **given}.items() for x in kv]
    status, printed, err = _run(argv)
    assert_refused(status, printed, err, message.format(**fmt))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rm", "{d}/gone", "--text", "the dog"], "--rm {d}/gone: no such file or folder"),
        (["--rm", "{small_rm}", "--text", "the dog"], f"reward model vocabulary of {VOCAB - 3} tokens"),
        (["--rm", "{rm}", "--text", "the dog", "--text", "cat"], "text 'cat': 1 token(s)"),
    ],
    ids=["missing-rm", "small-rm-vocab", "one-token-text"],
)
def test_cli_score_bad_input_is_one_line_exit_2(tiny, args, message):
    fmt = {"d": tiny.dir, "small_rm": tiny.paths["small_rm"], "rm": tiny.paths["rm"]}
    status, printed, err = _run(["score", *[a.format(**fmt) for a in args]])
    assert status == 2 and not printed, (printed, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert message.format(**fmt) in err, err


def _no_model_folder(d):
    (d / "no-config").mkdir(exist_ok=True)
    return d / "no-config"


def _not_gguf(d):
    (d / "weights.gguf").write_bytes(b"not a gguf file")
    return d / "weights.gguf"


@pytest.mark.parametrize(
    ("flag", "make", "message"),
    [
        ("--rm", _no_model_folder, "not a transformers model folder (it has no config.json)"),
        ("--rm", _not_gguf, "not a GGUF file (*.gguf) or a transformers model folder"),
        ("--lm", _not_gguf, "not a GGUF file (*.gguf) or a transformers model folder"),
    ],
    ids=["rm-folder-without-config", "rm-not-gguf", "lm-not-gguf"],
)
def test_cli_generate_refuses_a_path_without_a_model_before_loading_either(
    tiny, tmp_path, monkeypatch, flag, make, message
):
    """A bad --rm was found only after the LM loaded (21-28 s with the bundled GGUF LM)."""
    import models.farma.api as api

    monkeypatch.setattr(api, "load", _no_load)
    bad = make(tmp_path)
    paths = {"--lm": str(tiny.paths["lm"]), "--rm": str(tiny.paths["rm"]), flag: str(bad)}
    status, printed, err = _run(["generate", *[x for kv in paths.items() for x in kv], "--prompt", PROMPT])
    assert_refused(status, printed, err, f"{flag} {bad}: {message}")


def test_cli_score_refuses_a_one_token_text_before_the_model_loads(tiny, tmp_path, monkeypatch):
    """The text's tokens need the tokenizer only: a one-token text was refused after the RM's weights loaded (32 s
    with the bundled GGUF file, whose tokenizer alone takes a third of that)."""
    import transformers

    import models.common.smollm2 as smollm2

    def no_model(*args, **kwargs):
        raise AssertionError("the model's weights were loaded before the texts were checked")

    monkeypatch.setattr(smollm2, "load_causal_lm", no_model)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_model)
    status, printed, err = _run(
        ["score", "--rm", str(tiny.paths["rm"]), "--text", "the dog", "--text", "cat"]
    )
    assert_refused(status, printed, err, "text 'cat': 1 token(s)")
    status, printed, err = _run(["score", "--rm", str(_no_model_folder(tmp_path)), "--text", "the dog"])
    assert_refused(status, printed, err, "it has no config.json")


def test_load_tokenizer_then_the_model_is_what_load_returns(tiny):
    from models.farma.api import load, load_tokenizer, sequence_reward

    tok = load_tokenizer(tiny.paths["rm"])
    same_tok, rm = load(tiny.paths["rm"], tok)
    assert same_tok is tok and len(tok) == len(tiny.tok)
    assert sequence_reward(rm, tok, TEXTS[:2]) == pytest.approx(sequence_reward(tiny.rm, tiny.tok, TEXTS[:2]))
    with pytest.raises(UserError, match="gone: no such file or folder"):
        load_tokenizer(tiny.dir / "gone")


# --------------------------------------------------------------------------------------- the Python entry
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"w": -1.0}, "w = -1.0"),
        ({"w": math.nan}, "w = nan"),
        ({"w": math.inf}, "w = inf"),
        ({"top_k": 0}, "top-k = 0"),
        ({"top_k": VOCAB + 1}, f"top-k = {VOCAB + 1}: above the vocabulary"),
        ({"max_new_tokens": 0}, "max-new-tokens = 0"),
        ({"prompt": ""}, "prompt '': empty"),
        ({"candidates": "best"}, "candidates 'best'"),
        ({"rm": "small"}, f"reward model vocabulary of {VOCAB - 3} tokens"),
    ],
    ids=[
        "w-negative",
        "w-nan",
        "w-inf",
        "top-k-0",
        "top-k-above-vocab",
        "max-new-0",
        "empty",
        "cand",
        "small-rm",
    ],
)
def test_generate_raises_user_error_on_bad_values(tiny, kwargs, message):
    from models.farma.api import generate, load

    kw = {"prompt": PROMPT, "rm": tiny.rm, **kwargs}
    if isinstance(kw["rm"], str):
        kw["rm"] = load(tiny.paths["small_rm"])[1]
    with pytest.raises(UserError, match=message.replace("(", r"\(")):
        generate(tiny.lm, kw.pop("rm"), tiny.tok, kw.pop("prompt"), **kw)


def test_load_and_sequence_reward_raise_user_error(tiny, monkeypatch):
    import models.common.smollm2 as smollm2
    from models.farma.api import load, sequence_reward

    monkeypatch.setattr(smollm2, "load_causal_lm", _no_load)
    with pytest.raises(UserError, match="gone: no such file or folder"):
        load(tiny.dir / "gone")
    monkeypatch.undo()
    small = load(tiny.paths["small_rm"])[1]
    with pytest.raises(UserError, match=f"reward model vocabulary of {VOCAB - 3} tokens"):
        sequence_reward(small, tiny.tok, ["the dog"])
