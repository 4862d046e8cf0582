"""``icml25 farma generate`` and ``icml25 farma score``: reward-guided generation and sequence rewards with a
FaRMA reward model (a causal LM whose logits are rewards), any two local Hugging Face causal LMs.

    icml25 farma generate --lm PATH --rm PATH --prompt TEXT [--w 1.0] [--top-k 10] [--max-new-tokens 64]
        [--greedy] [--seed 0] [--candidates lm|guided]
    icml25 farma score --rm PATH --text TEXT [--text TEXT ...]

PATH is a transformers folder or a .gguf file. ``generate`` prints the continuation (the prompt left out, the
eos token too), then a line ``lm_calls=N rm_calls=N`` (one LM and one RM forward pass per chosen token, the
final eos included); the tokenizer is the LM's. ``score`` prints one line per text, in order:
``{reward:.4f}<TAB>{text}``, with r(y) = logits_RM(y_<T)[y_T] (see :mod:`models.farma.api`; the tokenizer is
the RM's), a tab, newline or carriage return inside the text shown as ``\\t``, ``\\n``, ``\\r``. Bad input
(a missing path or one that holds no model, w negative or not finite, top-k < 1 or above the vocabulary,
max-new-tokens < 1, an empty prompt, an RM whose vocabulary is smaller than the tokenizer's, a text under 2 tokens)
is one line naming the value, exit status 2; the paths and numbers are checked before any model is loaded, a
text's tokens before the RM's weights. Nothing is written to disk.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_causal_lm


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 farma",
        description="FaRMA (ICML 2025): reward-guided generation with one reward-model call per token.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    g = sub.add_parser(
        "generate",
        help="continue a prompt with reward-guided decoding",
        description="Continue PROMPT: each token maximises (or samples) log pi(a|s) + w r(s, a) among top-k.",
    )
    g.add_argument(
        "--lm", type=Path, required=True, metavar="PATH", help="the language model (and tokenizer)"
    )
    g.add_argument("--rm", type=Path, required=True, metavar="PATH", help="the reward model (a causal LM)")
    g.add_argument("--prompt", required=True, metavar="TEXT")
    g.add_argument("--w", type=float, default=1.0, help="reward weight, >= 0 (0: the LM alone)")
    g.add_argument("--top-k", type=int, default=10, dest="top_k", help="candidate tokens per step")
    g.add_argument("--max-new-tokens", type=int, default=64, dest="max_new_tokens")
    g.add_argument("--greedy", action="store_true", help="argmax instead of sampling")
    g.add_argument("--seed", type=int, default=0, help="the sampling seed")
    g.add_argument(
        "--candidates",
        choices=("lm", "guided"),
        default="lm",
        help="lm: the LM's top-k (default); guided: the top-k of the guided values (the official code)",
    )
    s = sub.add_parser(
        "score",
        help="sequence rewards r(y) of texts",
        description="Print r(y) = logits_RM(y_<T)[y_T] and the text, one line per --text.",
    )
    s.add_argument("--rm", type=Path, required=True, metavar="PATH", help="the reward model (and tokenizer)")
    s.add_argument(
        "--text", action="append", required=True, metavar="TEXT", help="a text to score (repeatable)"
    )
    return parser


def _escape(text: str) -> str:
    return text.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def cmd_generate(args: argparse.Namespace) -> int:
    from .api import check, generate, load

    check_causal_lm(args.lm, "--lm")  # both before either loads: the LM alone can take a minute
    check_causal_lm(args.rm, "--rm")
    settings = dict(
        w=args.w, top_k=args.top_k, max_new_tokens=args.max_new_tokens, candidates=args.candidates
    )
    check(**settings, prompt=args.prompt)  # before any model is loaded
    if not -(2**63) <= args.seed < 2**64:  # what torch.Generator.manual_seed takes
        raise UserError(f"--seed {args.seed}: must be an integer in [-2^63, 2^64)")
    tokenizer, lm = load(args.lm)
    _, rm = load(args.rm)
    text, calls = generate(
        lm, rm, tokenizer, args.prompt, **settings, greedy=args.greedy, seed=args.seed
    )  # checks the vocabularies first
    print(text)
    print(f"lm_calls={calls['lm_calls']} rm_calls={calls['rm_calls']}")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from .api import check_texts, load, load_tokenizer, sequence_reward

    check_causal_lm(args.rm, "--rm")
    tokenizer = load_tokenizer(args.rm)
    check_texts(tokenizer, args.text)  # a text under 2 tokens, before the model's weights load
    tokenizer, rm = load(args.rm, tokenizer)
    for r, text in zip(sequence_reward(rm, tokenizer, args.text), args.text, strict=True):
        print(f"{r:.4f}\t{_escape(text)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"generate": cmd_generate, "score": cmd_score}[args.command](args)
