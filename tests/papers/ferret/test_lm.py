"""ferret's language-model path (the paper profile: SmolLM2 on Dolly), on CPU. The encoding puts labels on the
response's tokens only (the prompt and the padding are -100; inputs padded with -1) and keeps at least half of an
over-long sequence for the response. With a tiny Llama (built from a config: nothing is downloaded) and a stub
tokenizer, FedAvg's rounds lower the test responses' token loss, Ferret's uplink is sum_l K_l + 1 over the LM's
parameter tensors (tied embeddings counted once), and the global model changes by the decoded update. The train
stage refuses smollm2 without Dolly records and the zeroth-order baselines on an LLM (before loading anything).
Slow: the real SmolLM2-135M for one Ferret round."""

from __future__ import annotations

import pytest
import yaml

SLUG = "ferret"


class Tok:
    """Bytes as token ids 2..61, end-of-text 1."""

    eos_token_id = 1

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [2 + (b % 60) for b in text.encode()]}


def _records(n: int = 60) -> tuple[list[dict], list[str], list[int]]:
    cats = ("qa", "sum", "gen")
    records = [
        {
            "instruction": f"say {cats[i % 3]} {i}",
            "context": "" if i % 2 else "some context",
            "response": f"{cats[i % 3]} " * (1 + i % 4),
            "category": cats[i % 3],
        }
        for i in range(n)
    ]
    split = ["test" if i % 5 == 0 else "train" for i in range(n)]
    return records, split, [i % 4 for i in range(n)]


def _tiny_llama(seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


def test_labels_cover_the_response_only_and_padding_is_masked():
    from models.ferret.lm import IGNORE, PAD, encode, prompt

    records, _, _ = _records(6)
    ids, labels = encode(records, Tok(), 128)
    for r, x, y in zip(records, ids, labels, strict=True):
        p = len(Tok()(prompt(r))["input_ids"])
        a = Tok()(r["response"])["input_ids"] + [1]
        assert list(x[p : p + len(a)]) == a and list(y[p : p + len(a)]) == a
        assert (
            (y[:p] == IGNORE).all() and (x[p + len(a) :] == PAD).all() and (y[p + len(a) :] == IGNORE).all()
        )


def test_an_overlong_sequence_keeps_half_for_the_response():
    from models.ferret.lm import IGNORE, encode

    rec = {"instruction": "x" * 100, "context": "", "response": "y" * 100, "category": "c"}
    ids, labels = encode([rec], Tok(), 32)
    assert ids.shape == (1, 32)
    assert (labels[0] != IGNORE).sum() == 16 and (labels[0, :16] == IGNORE).all()


def test_fedavg_rounds_lower_the_test_token_loss():
    from models.ferret.federated import Config, method, run
    from models.ferret.lm import LMFederated, lm_data

    data = lm_data(*_records(), Tok(), 64)
    cfg = Config(rounds=10, per_round=2, batch=4, lr=0.5)
    rows, _ = run(data, method("fedavg"), cfg, 0, net=_tiny_llama(), module_cls=LMFederated)
    losses = [r["loss"] for r in rows]
    assert sum(losses[-3:]) / 3 < losses[0] - 0.3, losses  # seeded: 1.93 -> 0.78
    assert all(0.0 <= r["accuracy"] <= 1.0 for r in rows)


def test_ferret_on_a_tied_lm_counts_its_blocks_and_moves_the_model_by_the_decoded_update():
    import torch

    from models.ferret.codec import FerretCodec
    from models.ferret.federated import Config, method
    from models.ferret.lm import LMFederated, lm_data

    data = lm_data(*_records(), Tok(), 32)
    net = _tiny_llama()
    blocks = list(net.named_parameters())
    assert not any(n.startswith("lm_head") for n, _ in blocks)  # tied to the embeddings: one block
    module = LMFederated(net, data, method("ferret", K=8), Config(per_round=2, batch=4, lr=0.5), 0)
    assert module.codec.names == [n for n, _ in blocks]
    out = module.clients(0, [0, 1])
    for msg, scalars, _ in out:
        assert scalars == sum(msg.ks) + 1 and len(msg.ks) == len(blocks)
        assert all(2 <= k <= 8 for k in msg.ks)
    decoded = module.server(0, [o[0] for o in out])
    again = FerretCodec(net, 8).decode([o[0] for o in out], module_round_seed(module))
    for a, b in zip(decoded, again, strict=True):
        assert torch.equal(a, b)


def module_round_seed(module) -> int:
    from models.ferret.federated import round_seed

    return round_seed(module.seed, 0, module.meth.seeds)


@pytest.fixture
def lm_params(work):
    def set_train(**train):
        path = work / "params.yaml"
        params = yaml.safe_load(path.read_text())
        params["papers"][SLUG]["train"].update(train)
        path.write_text(yaml.safe_dump(params))

    return set_train


def test_the_train_stage_refuses_smollm2_without_dolly(work, lm_params):
    from icml25.errors import UserError
    from icml25.runner import run_stage

    lm_params(model="smollm2", methods=["fedavg", "ferret"], report_methods=[])
    with pytest.raises(UserError, match="set prepare.source to dolly"):
        run_stage(work, SLUG, "train")


@pytest.mark.slow  # parses the 98 MB GGUF, one round of a 135M-parameter model on CPU: 3-4 minutes
def test_one_ferret_round_on_the_real_smollm2():
    import math

    from models.common.smollm2 import load_causal_lm
    from models.ferret.federated import Config, method, run
    from models.ferret.lm import LMFederated, lm_data

    tok, net = load_causal_lm()
    records, split, client = _records(12)
    data = lm_data(records, split, client, tok, 24)
    rows, _ = run(
        data,
        method("ferret", K=2),
        Config(rounds=1, per_round=1, local_steps=1, batch=1, lr=1e-4),
        0,
        net=net,
        module_cls=LMFederated,
    )
    d = sum(p.numel() for p in net.parameters())
    assert d > 1e8 and rows[0]["uplink"] < 1e-5 * d
    assert math.isfinite(rows[0]["loss"]) and 0.0 <= rows[0]["accuracy"] <= 1.0
