"""Ferret: federated full-parameter tuning with shared randomness: the controlled CPU reproduction.

Shu, Hu, Ng, Low and Yu, ICML 2025. Official code: https://github.com/allen4747/Ferret.

Each round the selected clients run T first-order SGD steps from the global weights, project their update
Delta per block l onto K_l bases v ~ N(0, 1) truncated to +-1/sqrt(d_l) that are regenerated from shared seeds,
gamma = <Delta_l, v> / (K_l rho_l) with rho_l = E[v_i^2], and send the K_l coordinates and their seed; the server
sums coordinates per (block, index), regenerates each basis once and steps by Delta~ = sum_k c_k v_k (unbiased:
E[Delta~] = Delta). The official code differs (fixed candidate seeds for the run, no rho, slr 10, clipping): the
paper's method is the default here and the code's behaviour the switches ``seeds: fixed`` and ``scaling: code``.

Stages: prepare (the digits, a user's CSV or Dolly-style JSONL; a Dirichlet(0.5) label split over 20 clients)
-> validate (GX: a partition, >= 10 rows per client, values in range) -> train (every method and seed, one
Lightning module whose step is one round; histories, the final global models as safetensors) -> evaluate (the
reconstruction-bias Monte Carlo, the per-method table, the claims' numbers) -> report. The paper profile
(``train.model: smollm2``, ``prepare.source: dolly``) tunes SmolLM2-135M on Dolly records instead of the MLP.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml25.registry import Paper


@dataclass(frozen=True)
class Prepare:
    source: str = field(default="digits", metadata={"choices": ("digits", "csv", "dolly")})
    csv: str = (
        ""  # with source csv: a table under data/ferret/input/ with numeric features and a target column
    )
    target: str = "target"
    dolly: str = ""  # with source dolly: Dolly-15K-style JSONL under data/ferret/input/
    dolly_features: int = field(
        default=256, metadata={"ge": 2}
    )  # hashed words of instruction + context (ours)
    test_fraction: float = field(default=0.221, metadata={"gt": 0.0, "lt": 1.0})  # 397 of the 1,797 digits
    clients: int = field(default=20, metadata={"ge": 1})
    alpha: float = field(default=0.5, metadata={"gt": 0.0})
    min_rows: int = field(default=10, metadata={"ge": 1})


@dataclass(frozen=True)
class Train:
    methods: tuple[str, ...] = ("fedavg", "ferret", "zo")  # the claims' methods, on ``seeds`` seeds
    seeds: int = field(default=5, metadata={"ge": 1})
    report_methods: tuple[str, ...] = (
        "ferret_fixed",
        "ferret_code",
        "ferret_official",
        "ferret_k16",
        "fedzo",
    )  # report only
    report_seeds: int = field(default=3, metadata={"ge": 1})
    rounds: int = field(default=80, metadata={"ge": 1})
    per_round: int = field(default=5, metadata={"ge": 1})
    local_steps: int = field(default=10, metadata={"ge": 1})
    batch: int = field(default=32, metadata={"ge": 1})
    lr: float = field(default=0.1, metadata={"gt": 0.0})
    K: int = field(default=64, metadata={"ge": 2})
    slr: float = field(default=1.0, metadata={"gt": 0.0})
    code_slr: float = field(default=10.0, metadata={"gt": 0.0})
    clip: float = field(default=10.0, metadata={"gt": 0.0})
    zo_steps: int = field(default=64, metadata={"ge": 1})
    zo_lr: float = field(default=0.02, metadata={"gt": 0.0})
    zo_eps: float = field(default=1e-3, metadata={"gt": 0.0})
    zo_pool: int = field(default=64, metadata={"ge": 1})
    hidden: int = field(default=32, metadata={"ge": 1})
    workers: int = field(default=2, metadata={"ge": 1})
    # the paper profile: SmolLM2-135M on Dolly (prepare.source dolly), a GPU when there is one
    model: str = field(default="mlp", metadata={"choices": ("mlp", "smollm2")})
    max_tokens: int = field(default=256, metadata={"ge": 2})
    accelerator: str = field(default="cpu", metadata={"choices": ("cpu", "auto")})


@dataclass(frozen=True)
class Evaluate:
    bias_d: int = field(default=256, metadata={"ge": 1})
    bias_k: int = field(default=32, metadata={"ge": 2})
    bias_reps: int = field(default=4000, metadata={"ge": 1})
    target_accuracy: float = field(default=0.9, metadata={"gt": 0.0, "le": 1.0})


PAPER = Paper(
    slug="ferret",
    citation="Shu, Hu, Ng, Low and Yu. *Ferret: Federated Full-Parameter Tuning at Scale for Large Language "
    "Models*. ICML 2025.",
    url="https://github.com/allen4747/Ferret",
    schema={"prepare": Prepare, "train": Train, "evaluate": Evaluate},
)
