"""The independence test as a tool: checkpoints on disk (tiny Llama models built with transformers and this
project's GLU format), ``independence_test``, the ``icml25 model_independence test`` command, and its errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from icml25.errors import UserError
from models.model_independence.cli import main  # torch-free: the command imports torch when it runs
from tests.helpers import forbid, icml25, lazy

# torch and transformers are imported when a test runs, never at collection (tests.helpers.lazy)
glu = lazy("models.model_independence.glu")
api = lazy("models.model_independence.api")
ckpts = lazy("models.model_independence.checkpoints")
perms = lazy("models.model_independence.permutations")

T = 19


@pytest.fixture(scope="module", autouse=True)
def offline():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        yield


def llama_config(intermediate_size: int = 64):
    from transformers import LlamaConfig

    return LlamaConfig(
        hidden_size=32,
        intermediate_size=intermediate_size,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        vocab_size=128,
    )


def new_llama(seed: int, intermediate_size: int = 64):
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(llama_config(intermediate_size))


@pytest.fixture(scope="module")
def folders(offline, tmp_path_factory) -> dict[str, Path]:
    """A: a tiny Llama; B: A fine-tuned (20 Adam steps, lr 1e-3, causal LM loss on random tokens); C: an
    independently seeded Llama; W: a Llama with a wider MLP; G: a tiny GPT-2; g0, g1: independent icml25-glu
    models; g0t: g0 after an output-preserving permutation and rescaling."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    root = tmp_path_factory.mktemp("model_independence")
    out = {name: root / name for name in ("A", "B", "C", "W", "G", "g0", "g1", "g0t")}
    model = new_llama(0)
    model.save_pretrained(out["A"], safe_serialization=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    for _ in range(20):
        ids = torch.randint(0, 128, (8, 16), generator=gen)
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.save_pretrained(out["B"], safe_serialization=True)
    new_llama(1).save_pretrained(out["C"], safe_serialization=True)
    new_llama(2, intermediate_size=96).save_pretrained(out["W"], safe_serialization=True)
    torch.manual_seed(0)
    GPT2LMHeadModel(
        GPT2Config(
            n_embd=32, n_layer=2, n_head=4, vocab_size=128, n_positions=64, bos_token_id=0, eos_token_id=0
        )
    ).save_pretrained(out["G"], safe_serialization=True)
    cfg = glu.GLUConfig()
    w0 = glu.init_weights(cfg, torch.Generator().manual_seed(0))
    ckpts.save_checkpoint(out["g0"], cfg.to_json(), w0)
    ckpts.save_checkpoint(out["g1"], cfg.to_json(), glu.init_weights(cfg, torch.Generator().manual_seed(1)))
    ckpts.save_checkpoint(
        out["g0t"], cfg.to_json(), perms.output_preserving_transform(w0, cfg.n_blocks, seed=3)
    )
    return out


# ------------------------------------------------------------------------------------------ Llama checkpoints


def test_llama_fine_tune_is_dependent_and_an_independent_seed_is_not(folders):
    a, b, c = (ckpts.load_checkpoint(folders[k]) for k in "ABC")
    assert (a.arch, a.n_blocks, a.d_model, a.d_hidden) == ("llama", 2, 32, 64)
    assert api.independence_test(a, b, stat="u").log10p < -5
    assert api.independence_test(a, b, stat="l2", permutations=T).log10p == pytest.approx(
        math.log10(1 / (T + 1))
    )
    assert api.independence_test(a, c, stat="u").log10p > -3
    assert api.independence_test(a, c, stat="l2", permutations=T).log10p > -3


def test_llama_activation_statistics_through_hooks(folders):
    assert api.independence_test(folders["A"], folders["B"], stat="h", n_inputs=8).log10p < -5
    assert api.independence_test(folders["A"], folders["B"], stat="match", n_inputs=8).log10p < -5
    assert api.independence_test(folders["A"], folders["C"], stat="match", n_inputs=8).log10p > -3


def test_the_llama_group_element_preserves_the_model_function(folders):
    """Table 3's rules for Llama (embedding columns, q/k/v columns, o rows, norms, MLP) are output-preserving."""
    import torch
    from transformers import LlamaForCausalLM

    ckpt = ckpts.load_checkpoint(folders["A"])
    moved = perms.random_group_element(ckpt.weights, "llama", ckpt.n_blocks, np.random.default_rng(0))
    assert not torch.equal(moved[glu.up_key(0)], ckpt.weights[glu.up_key(0)])
    model = LlamaForCausalLM(llama_config()).eval()
    ids = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model.load_state_dict(ckpt.weights)
        ref = model(input_ids=ids).logits
        model.load_state_dict(moved)
        out = model(input_ids=ids).logits
    assert float((out - ref).norm() / ref.norm()) < 1e-5


# ------------------------------------------------------------------------------------------------------- CLI


def test_cli_prints_blocks_fisher_and_verdict(folders, capsys):
    assert main(["test", str(folders["A"]), str(folders["B"]), "--stat", "u"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("block 0: log10 p = ") for line in lines)
    assert any(line.startswith("block 1: log10 p = ") for line in lines)
    assert any(line.startswith("Fisher over 2 blocks: p = ") for line in lines)
    assert lines[-1] == "dependent at alpha=0.0001"

    assert main(["test", str(folders["A"]), str(folders["C"]), "--stat", "l2", "--permutations", "9"]) == 0
    out = capsys.readouterr().out
    assert "PERMTEST with T=9" in out and "no evidence of dependence" in out


def test_cli_json(folders, capsys):
    assert main(["test", str(folders["A"]), str(folders["B"]), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stat"] == "u" and len(data["per_block"]) == 2
    # Fisher of two tiny p-values: close to their product
    assert data["log10p"] == pytest.approx(sum(data["per_block"]), abs=5)
    assert data["log10p"] < -5


# -------------------------------------------------------------------------------------- this project's format


def test_glu_checkpoint_round_trip_and_phi_match(folders, tmp_path):
    import torch

    cfg = glu.GLUConfig()
    w = glu.init_weights(cfg, torch.Generator().manual_seed(0))
    ckpt = ckpts.load_checkpoint(folders["g0"])
    assert (ckpt.arch, ckpt.n_blocks, ckpt.d_model, ckpt.d_hidden) == ("icml25-glu", 2, 32, 64)
    assert ckpt.config == cfg.to_json()
    assert set(ckpt.weights) == set(w) and all(torch.equal(ckpt.weights[k], w[k]) for k in w)
    # overwriting is atomic and leaves no temporary folders behind
    target = tmp_path / "ckpt"
    ckpts.save_checkpoint(target, cfg.to_json(), w)
    ckpts.save_checkpoint(target, cfg.to_json(), {k: v.bfloat16() for k, v in w.items()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
    again = ckpts.load_checkpoint(target)
    assert all(t.dtype == torch.float32 for t in again.weights.values())
    # phi_MATCH sees through the output-preserving transformation; an independent model stays unremarkable
    assert api.independence_test(folders["g0"], folders["g0t"], stat="match").log10p < -10
    assert api.independence_test(ckpt, ckpts.load_checkpoint(folders["g1"]), stat="match").log10p > -3
    assert api.independence_test(folders["g0"], folders["g0t"], stat="u").log10p > -3  # phi_U is fooled


def test_sharded_llama_folder(folders, tmp_path):
    import torch
    from safetensors.torch import save_file

    weights = ckpts.load_checkpoint(folders["A"]).weights
    names = sorted(weights)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for fname, keys in shards.items():
        save_file({k: weights[k] for k in keys}, str(tmp_path / fname))
    index = {"weight_map": {k: fname for fname, keys in shards.items() for k in keys}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    (tmp_path / "config.json").write_text((folders["A"] / "config.json").read_text())
    sharded = ckpts.load_checkpoint(tmp_path)
    assert sharded.arch == "llama" and all(torch.equal(sharded.weights[k], weights[k]) for k in names)


# ------------------------------------------------------------------------------------------------- bad inputs


def test_bad_inputs_raise_user_errors_naming_the_problem(folders, tmp_path):
    import torch

    missing = tmp_path / "nowhere"
    with pytest.raises(UserError, match="nowhere: no such checkpoint folder"):
        ckpts.load_checkpoint(missing)
    no_weights = tmp_path / "config_only"
    no_weights.mkdir()
    (no_weights / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(UserError, match=r"config_only: no weights"):
        ckpts.load_checkpoint(no_weights)
    no_config = tmp_path / "weights_only"
    no_config.mkdir()
    with pytest.raises(UserError, match=r"weights_only: no config.json"):
        ckpts.load_checkpoint(no_config)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(UserError, match=r"broken/config.json: unreadable JSON"):
        ckpts.load_checkpoint(broken)
    with pytest.raises(UserError, match=r"G is not a GLU model: no model\.layers\.N\.mlp"):
        ckpts.load_checkpoint(folders["G"])
    bad_shape = tmp_path / "bad_shape"
    ckpts.save_checkpoint(
        bad_shape,
        {**glu.GLUConfig().to_json(), "d_hidden": 65},
        glu.init_weights(glu.GLUConfig(), torch.Generator().manual_seed(0)),
    )
    with pytest.raises(UserError, match=r"bad_shape: inconsistent shapes"):
        ckpts.load_checkpoint(bad_shape)

    with pytest.raises(UserError, match=r"different architectures") as err:
        api.independence_test(folders["A"], folders["g0"], stat="u")
    assert "llama, 2 blocks, d_model=32" in str(err.value) and "icml25-glu, 2 blocks" in str(err.value)
    with pytest.raises(UserError, match=r"d_hidden=64\).*d_hidden=96\).*different widths"):
        ckpts.check_compatible(ckpts.load_checkpoint(folders["A"]), ckpts.load_checkpoint(folders["W"]), "u")
    with pytest.raises(UserError, match="'xyz'"):
        main(["test", str(folders["A"]), str(folders["B"]), "--stat", "xyz"])
    with pytest.raises(UserError, match="nowhere"):
        main(["test", str(missing), str(folders["B"])])
    with pytest.raises(UserError, match=r"--alpha must be in \(0, 1\), got 2"):
        main(["test", str(folders["A"]), str(folders["B"]), "--alpha", "2"])


def test_cli_errors_exit_2_without_traceback(root, tmp_path):
    """Through the real `icml25` entry point: one line on stderr, exit 2, nothing written."""
    before = sorted(tmp_path.iterdir())
    out = icml25(root, "model_independence", "test", str(tmp_path / "a"), str(tmp_path / "b"))
    assert (
        out.returncode == 2
        and out.stderr.startswith("icml25: error: ")
        and "no such checkpoint" in out.stderr
    )
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert sorted(tmp_path.iterdir()) == before


# ------------------------------------------------------------------- degenerate inputs (issue 14, item 3)


def test_tied_matchings_are_broken_at_random_not_read_as_the_identity():
    """A constant similarity matrix makes every assignment optimal; the solver's own order returned the
    identity, which SPEARMAN read as perfect agreement (an all-zero model tested 'dependent', p ~ 1e-176)."""
    stats = lazy("models.model_independence.stats")
    rng = np.random.default_rng(0)
    zeros, real = np.zeros((64, 16)), rng.normal(size=(64, 16))
    perm = stats.match(zeros, real)
    assert sorted(perm) == list(range(64)) and not np.array_equal(perm, np.arange(64))
    r, log10p = stats.spearman_log10p(perm, np.arange(64))
    assert abs(r) < 0.4 and log10p > -3, (r, log10p)
    # a unique optimum is found whatever the relabelling: the tie-break changes nothing else
    shuffled = real[rng.permutation(64)]
    assert all(
        np.array_equal(stats.match(real, shuffled, tie_seed=s), stats.match(real, shuffled)) for s in (1, 2)
    )
    assert np.array_equal(shuffled[stats.match(real, shuffled)], real)
    with pytest.raises(ValueError, match="second matrix holds NaN or inf"):
        stats.match(real, np.full((64, 16), np.nan))


@pytest.mark.parametrize("stat", ["u", "h", "match"])
def test_an_all_zero_or_non_finite_checkpoint_is_refused_not_called_dependent(folders, tmp_path, stat):
    import torch

    cfg = glu.GLUConfig()
    w = glu.init_weights(cfg, torch.Generator().manual_seed(0))
    zero = tmp_path / "zero"
    ckpts.save_checkpoint(zero, cfg.to_json(), {k: torch.zeros_like(v) for k, v in w.items()})
    with pytest.raises(
        UserError, match=r"model a .*is constant \(every entry 0\); a constant or all-zero model"
    ):
        api.independence_test(zero, folders["g1"], stat=stat, n_inputs=16)
    nan = tmp_path / "nan"
    key = glu.up_key(0)
    ckpts.save_checkpoint(nan, cfg.to_json(), {**w, key: torch.full_like(w[key], float("nan"))})
    with pytest.raises(UserError, match=rf"model b .*weight {key} holds NaN or inf"):
        api.independence_test(folders["g1"], nan, stat=stat, n_inputs=16)


def test_cli_refuses_an_all_zero_checkpoint(folders, tmp_path):
    """The command raises the same UserError (the shared entry point prints it as one line and exits 2:
    test_cli_errors_exit_2_without_traceback)."""
    import torch

    cfg = glu.GLUConfig()
    w = glu.init_weights(cfg, torch.Generator().manual_seed(0))
    ckpts.save_checkpoint(tmp_path / "zero", cfg.to_json(), {k: torch.zeros_like(v) for k, v in w.items()})
    with pytest.raises(UserError, match=r"^model a .*is constant"):
        main(["test", str(tmp_path / "zero"), str(folders["g1"]), "--stat", "match"])


def test_a_model_with_dead_units_is_not_called_dependent_on_unrelated_models(folders, tmp_path, capsys):
    """Issue 43: an untrained GLU with 90 % of its hidden units zeroed tested 'dependent at alpha=0.0001' against
    two unrelated models with --stat match (p = 4.2e-08 and 1.8e-06). Its dead units are now left out and
    counted; the verdict follows from the live ones."""
    import torch

    cfg = glu.GLUConfig()
    w = glu.init_weights(cfg, torch.Generator().manual_seed(5))
    dead = torch.from_numpy(np.random.default_rng(0).permutation(cfg.d_hidden)[: int(0.9 * cfg.d_hidden)])
    for layer in range(cfg.n_blocks):
        for key in (glu.gate_key(layer), glu.up_key(layer)):
            w[key][dead] = 0.0
    ckpts.save_checkpoint(tmp_path / "pruned", cfg.to_json(), w)
    for other in ("g0", "g1"):
        assert main(["test", str(tmp_path / "pruned"), str(folders[other]), "--stat", "match"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[1].endswith(f"({len(dead)} dead hidden units left out)"), lines
        assert lines[-1] == "no evidence of dependence at alpha=0.0001", lines
    assert main(["test", str(tmp_path / "pruned"), str(folders["g1"]), "--stat", "match", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["excluded"] == [len(dead)] * cfg.n_blocks


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{g}", "{g}", "--stat", "h", "--inputs", "0"], "n_inputs must be between 1 and 1797"),
        (["{g}", "{g}", "--stat", "match", "--inputs", "5000"], "n_inputs must be between 1 and 1797"),
        (["{llama}", "{llama}", "--stat", "match", "--inputs", "0"], "need at least one sequence"),
        (["{g}", "{gone}"], "gone: no such checkpoint folder"),
        (["{g}", "{empty}"], "empty: no config.json in the checkpoint folder"),
    ],
    ids=["h-inputs-0", "match-inputs-above-digits", "llama-inputs-0", "b-missing", "b-without-config"],
)
def test_bad_input_is_refused_before_any_checkpoint_loads(tmp_path, monkeypatch, capsys, argv, message):
    """--inputs out of range was refused only after both checkpoints' weights loaded, a missing B after A's."""
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "config.json").write_text(json.dumps({"architecture": "icml25-glu"}))
    (tmp_path / "llama").mkdir()
    (tmp_path / "llama" / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (tmp_path / "empty").mkdir()

    import models.model_independence.api as entry

    forbid(monkeypatch, entry, "load_checkpoint")
    names = {name: tmp_path / name for name in ("g", "llama", "gone", "empty")}
    with pytest.raises(UserError, match=message):
        main(["test", *[a.format(**names) for a in argv]])
