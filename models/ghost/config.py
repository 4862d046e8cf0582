"""GHOST's hyper-parameters (``args.py`` defaults), importable without torch: the train section's schema."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GhostConfig:
    faithful_to_code: bool = False  # the official code's behaviour (see models.ghost.api)
    hidden: int = field(default=128, metadata={"ge": 1})
    dropout: float = field(default=0.3, metadata={"ge": 0.0, "lt": 1.0})
    noise_dim: int = field(default=64, metadata={"ge": 1})
    gen_dropout: float = field(default=0.2, metadata={"ge": 0.0, "lt": 1.0})
    lr: float = field(default=0.005, metadata={"gt": 0.0})  # clients: generators and local GCNs
    weight_decay: float = field(default=4e-4, metadata={"ge": 0.0})
    client_epochs: int = field(default=100, metadata={"ge": 1})  # T_L
    lambda_d: float = field(default=0.05, metadata={"ge": 0.0})
    lambda_f: float = field(default=0.1, metadata={"ge": 0.0})
    fgw_alpha: float = field(default=0.5, metadata={"ge": 0.0, "le": 1.0})
    knn_k: int = field(default=5, metadata={"ge": 1})
    server_lr: float = field(default=0.01, metadata={"gt": 0.0})  # hard-coded in the official server
    repeats: int = field(default=3, metadata={"ge": 1})  # M
    server_steps: int = field(default=5, metadata={"ge": 1})  # T_G
    lambda_r: float = field(default=1.0, metadata={"ge": 0.0})
    lambda_n: float = field(default=1.0, metadata={"ge": 0.0})
    r_scale: float = field(default=1e-11, metadata={"ge": 0.0})  # applied under faithful_to_code only
    n_scale: float = field(default=1e-11, metadata={"ge": 0.0})
    local_epochs: int = field(default=100, metadata={"ge": 1})
    central_epochs: int = field(default=200, metadata={"ge": 1})


#: The two readings every run trains: the paper's method and the official code's behaviour (faithful_to_code).
MODES = ("paper", "code")


def headline(cfg: GhostConfig) -> tuple[str, str]:
    """(the mode GHOST's claims use, the other mode): ``faithful_to_code`` picks the official code's."""
    return ("code", "paper") if cfg.faithful_to_code else ("paper", "code")
