"""Each claim fails on its stub, run through the report's own claim functions (tests/helpers.claim_verdict) on an
evaluation table of real (briefly trained or hand-built) stub agents:

- asymmetric_critic: B and C with the map input zeroed (B zeroed is an A of another seed; C zeroed is the
  ablation U): no privileged input, so no ratio below 0.7 at any training length;
- safe_and_useful: lambda held at 0 (variant N: the cost stays over d + 0.1) and a policy that never moves
  (success 0);
- no_leakage: an actor whose encoder reads the map.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers import claim_verdict, lazy

agent = lazy("models.pigdreamer.agent")  # imports torch: not while collecting
ppo = lazy("models.pigdreamer.ppo")
SLUG = "pigdreamer"
BRIEF = {"envs": 16, "rollout": 40, "epochs": 1, "minibatches": 2}
EPISODES = 60


def _folder(tmp: Path, rows: list[dict], cost_limit: float = 0.5) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(tmp / "evaluation.csv", index=False)
    (tmp / "meta.json").write_text(f'{{"cost_limit": {cost_limit}}}')
    return tmp


def _rows(module, slots: list[tuple[int, str]]) -> list[dict]:
    """Evaluate a trained stack and label agent k as (seed, variant) = slots[k]."""
    net = module.net if hasattr(module, "net") else module
    res = ppo.evaluate(net, agent.EnvConfig(), EPISODES, 11, 0.99, leak_states=200)
    return [{"seed": s, "variant": v, **{k: float(res[k][i]) for k in res}, "lambda": 0.0}
            for i, (s, v) in enumerate(slots)]  # fmt: skip


def test_zeroed_map_fails_asymmetric_critic(root, tmp_path):
    # per seed: the real A, a "B" that is A of another seed (B with the map zeroed is A's network) and a "C"
    # that is U (C with the map zeroed)
    specs = [agent.AgentSpec(v, s) for s in range(3) for v in ("A", "A", "U")]
    specs = [agent.AgentSpec(sp.variant, sp.seed + (100 if i % 3 == 1 else 0)) for i, sp in enumerate(specs)]
    slots = [(i // 3, "ABC"[i % 3]) for i in range(len(specs))]
    rows = _rows(ppo.train(specs, 8, agent.EnvConfig(), agent.PPOConfig(**BRIEF)), slots)
    v = claim_verdict(root, SLUG, "asymmetric_critic", _folder(tmp_path / "zeroed", rows))
    assert not v["passed"] and v["value"] > 0.7


def test_unconstrained_and_frozen_policies_fail_safe_and_useful(root, tmp_path):
    import torch

    # lambda held at 0: N in C's place, three seeds; its cost stays over d + 0.1
    specs = [agent.AgentSpec("N", s) for s in range(3)]
    rows = _rows(
        ppo.train(specs, 8, agent.EnvConfig(), agent.PPOConfig(**BRIEF)), [(s, "C") for s in range(3)]
    )
    assert all(r["cost"] > 0.6 for r in rows)
    v = claim_verdict(root, SLUG, "safe_and_useful", _folder(tmp_path / "unconstrained", rows))
    assert not v["passed"] and v["value"] == 0
    # a policy that never moves: the actor always says "left", and every start is in the left column
    frozen = ppo.train(
        [agent.AgentSpec("C", s) for s in range(3)], 1, agent.EnvConfig(), agent.PPOConfig(**BRIEF)
    ).net
    with torch.no_grad():
        last = frozen.actor[-1]
        last.weight.zero_()
        last.bias.copy_(torch.tensor([-50.0, -50.0, 50.0, -50.0]))
    rows = _rows(frozen, [(s, "C") for s in range(3)])
    assert all(r["success"] == 0 and r["cost"] == 0 for r in rows)  # safe but useless
    v = claim_verdict(root, SLUG, "safe_and_useful", _folder(tmp_path / "frozen", rows))
    assert not v["passed"] and v["value"] == 0


def test_an_actor_given_the_map_fails_no_leakage(root, tmp_path):
    specs = [agent.AgentSpec("A", 0), agent.AgentSpec("C", 0, actor_map=True)]
    rows = _rows(ppo.train(specs, 1, agent.EnvConfig(), agent.PPOConfig(**BRIEF)), [(0, "A"), (0, "C")])
    assert rows[0]["leak"] == 0 and rows[1]["leak"] > 0
    v = claim_verdict(root, SLUG, "no_leakage", _folder(tmp_path / "leaky", rows))
    assert not v["passed"] and v["value"] > 0


def test_the_claims_read_what_they_say(root, tmp_path):
    """Hand-built tables: the claims' arithmetic (median of per-seed max(B, C) / A; seeds with C's cost <= d +
    0.1 and success >= 0.8) on values where the answer is known."""
    rows = []
    for seed, (a, b, c) in enumerate(((1.0, 0.5, 0.6), (1.0, 0.9, 0.2), (0.5, 0.1, 0.3))):
        for v, err, cost, succ in (
            ("A", a, 2.0, 0.9),
            ("B", b, 0.55, 0.85),
            ("C", c, (0.6, 0.7, 0.1)[seed], (0.8, 0.95, 0.79)[seed]),
        ):
            rows.append({"seed": seed, "variant": v, "critic_error_cost": err, "cost": cost, "success": succ,
                         "leak": 0.0, "return": 0.0})  # fmt: skip
    folder = _folder(tmp_path / "hand", rows)
    v = claim_verdict(root, SLUG, "asymmetric_critic", folder)
    assert v["value"] == np.median([0.6, 0.9, 0.6]) and v["passed"]
    v = claim_verdict(root, SLUG, "safe_and_useful", folder)
    assert v["value"] == 1 and not v["passed"]  # seed 0 only: seed 1's cost 0.7 > 0.6, seed 2's success 0.79
