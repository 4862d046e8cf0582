"""ferret: every claim against the stub that kills it. Short runs (R = 10 rounds, one seed, the digits with the
quick profile's split and partition) of the train stage's own functions (models/ferret/federated.py), summary.json
built as the evaluate stage builds it (models/ferret/experiment.py), and the claims computed by the report's own
claim functions (tests.helpers.claim_verdict).

Stubs: a server that regenerates the bases from other seeds than the clients used (near_fedavg); the zeroth-order
update relabelled as Ferret (beats_zeroth_order); FedAvg relabelled as Ferret, and a Ferret that sends its bases
instead of their seeds (communication); the code's scaling in place of the paper's (unbiased_reconstruction)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import claim_verdict

SLUG = "ferret"
ROUNDS, BIAS_REPS = 10, 300
CLAIMS = ("near_fedavg", "beats_zeroth_order", "communication", "unbiased_reconstruction")


@functools.cache
def _data():
    from icml25.random import rng
    from models.ferret.data import digits, federate

    x, y, _ = digits()
    return federate(x, y, n_test=397, clients=20, alpha=0.5, g=rng(0, "data"), scale=False)


def _codec(kind: str):
    from models.ferret.codec import FerretCodec, Message

    if kind == "paper":
        return FerretCodec

    class OtherSeeds(FerretCodec):
        """The server regenerates its bases from another round seed than the clients projected on."""

        def decode(self, messages, round_seed, weights=None):
            return super().decode(messages, round_seed + 1, weights)

    class BasesMessage(Message):
        @property
        def scalars(self) -> int:  # each chosen basis travels whole, with its coordinate
            return sum(len(c) * (d + 1) for c, d in zip(self.coords, self.sizes, strict=True))

    class SendsBases(FerretCodec):
        """Sends the bases themselves instead of the seed that regenerates them."""

        def encode(self, delta, round_seed, client_seed, ks=None):
            m = super().encode(delta, round_seed, client_seed, ks)
            out = BasesMessage(m.client_seed, m.coords)
            object.__setattr__(out, "sizes", self.sizes)
            return out

    return {"other_seeds": OtherSeeds, "sends_bases": SendsBases}[kind]


@functools.cache
def _history(
    name: str, codec: str = "paper", rounds: int = ROUNDS, seeds: tuple[int, ...] = (0,)
) -> pd.DataFrame:
    from icml25.random import seed_for
    from models.ferret.federated import Config, method, run

    frames = []
    for k in seeds:
        rows, _ = run(_data(), method(name), Config(rounds=rounds), seed_for(0, "run", k), _codec(codec))
        frames.append(pd.DataFrame(rows).assign(method=name, seed=k))
    return pd.concat(frames, ignore_index=True)


@functools.cache
def _bias(scaling: str, reps: int = BIAS_REPS) -> float:
    from models.ferret.experiment import reconstruction_bias

    return reconstruction_bias(256, 32, reps, scaling, seed=0)


def evaluated(
    dest: Path, ferret: pd.DataFrame, others: list[pd.DataFrame], bias_scaling: str = "paper"
) -> Path:
    """summary.json and bias.csv as evaluate writes them, from the histories given (``ferret``'s rows labelled
    ``ferret``) and the reconstruction bias measured with ``bias_scaling`` standing for the paper's."""
    from models.ferret.experiment import claims

    history = pd.concat([ferret.assign(method="ferret"), *others], ignore_index=True)
    bias = {"paper": _bias(bias_scaling), "code": _bias("code")}
    summary = claims(history, 2410, bias) | {"rounds": int(history["round"].max())}
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "summary.json").write_text(json.dumps(summary))
    pd.DataFrame(
        [{"scaling": s, "d": 256, "k": 32, "reps": BIAS_REPS, "error": e} for s, e in bias.items()]
    ).to_csv(dest / "bias.csv", index=False)
    return dest


def verdict(root: Path, claim_id: str, folder: Path) -> dict:
    return claim_verdict(root, SLUG, claim_id, folder)


@pytest.mark.slow  # R = 80, 2 seeds of three methods and 4,000 reconstructions per scaling: about a minute
def test_the_method_holds_every_claim(root, tmp_path):
    from models.ferret.experiment import claims

    history = pd.concat(
        [_history(m, rounds=80, seeds=(0, 1)) for m in ("fedavg", "ferret", "zo")], ignore_index=True
    )
    bias = {"paper": _bias("paper", 4000), "code": _bias("code")}
    summary = claims(history, 2410, bias) | {"rounds": 80}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    pd.DataFrame([{"scaling": s, "reps": 4000, "error": e} for s, e in bias.items()]).to_csv(
        tmp_path / "bias.csv", index=False
    )
    for claim_id in CLAIMS:
        assert verdict(root, claim_id, tmp_path)["passed"] == 1, (claim_id, summary)


def test_server_regenerating_other_bases_fails_near_fedavg(root, tmp_path):
    stub = _history("ferret", "other_seeds")
    v = verdict(root, "near_fedavg", evaluated(tmp_path, stub, [_history("fedavg")]))
    assert v["passed"] == 0 and v["value"] < -0.2, v  # noise in place of the update
    real = verdict(
        root, "near_fedavg", evaluated(tmp_path / "real", _history("ferret"), [_history("fedavg")])
    )
    assert real["value"] > v["value"] + 0.2, (real, v)


def test_zeroth_order_relabelled_fails_beats_zeroth_order(root, tmp_path):
    zo = _history("zo")
    v = verdict(root, "beats_zeroth_order", evaluated(tmp_path, zo, [zo, _history("fedavg")]))
    assert v["passed"] == 0 and v["value"] == 0.0, v


def test_fedavg_and_sending_bases_fail_communication(root, tmp_path):
    fedavg = _history("fedavg")
    v = verdict(root, "communication", evaluated(tmp_path / "fedavg", fedavg, [fedavg]))
    assert v["passed"] == 0 and v["value"] == 1.0, v
    bases = _history("ferret", "sends_bases", rounds=2)
    v = verdict(root, "communication", evaluated(tmp_path / "bases", bases, [fedavg]))
    assert v["passed"] == 0 and v["value"] > 10, v  # sum_l K_l (d_l + 1) scalars: many times d
    real = verdict(root, "communication", evaluated(tmp_path / "real", _history("ferret"), [fedavg]))
    assert real["passed"] == 1, real


def test_code_scaling_fails_unbiased_reconstruction(root, tmp_path):
    v = verdict(
        root, "unbiased_reconstruction", evaluated(tmp_path, _history("fedavg"), [], bias_scaling="code")
    )
    assert v["passed"] == 0 and 0.55 < v["value"] < 0.8, v  # about Delta / 3: 2/3 off
