"""``icml25 pigdreamer train|evaluate``: train one agent of the PIGDreamer analogue on HiddenHazard, and
evaluate a trained one.

    icml25 pigdreamer train --variant A|B|C --steps N --cost-limit D [--seed 0] [--hazards 5]
        [--visibility 0.25] -o agent.safetensors
    icml25 pigdreamer evaluate agent.safetensors [--episodes 200] [--seed 0]

Variants (models/pigdreamer/agent.py): A, critics on the history (the SafeDreamer analogue); B, critics on history +
hazard map; C, B + privileged alignment (the PIGDreamer analogue); U and N are the ablations (the map zeroed;
lambda held at 0). ``--steps`` is environment steps, rounded up to whole PPO updates of 32 x 40. ``train``
prints one line per quarter of training and the final lambda, and writes the agent atomically::

    train: variant C, 64000 steps (50 updates of 32 x 40), cost limit 0.5, seed 0, 5 hazards, visibility 0.25
    update 13: return -0.112, cost 1.84, success 0.22, lambda 0.42
    ...
    wrote agent.safetensors (lambda 1.03)

``evaluate`` prints ``return``, ``cost``, ``success``, ``length``, ``critic_error_cost``,
``critic_error_reward`` and ``leak``, one ``name: value`` line each.

Bad input (an unknown variant, steps < 1, a negative cost limit, visibility outside [0, 1], more hazards than
cells, episodes < 1, a missing file or one that is not a pigdreamer agent, an output folder that does not exist)
is one line naming the value, exit status 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_seed, check_weights
from icml25.outputs import check_output

TRAINABLE = ("A", "B", "C", "U", "N")
#: The metadata kind of ppo.save_agent's files (ppo.KIND; importing ppo loads Lightning).
AGENT_KIND = "pigdreamer-agent"


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 pigdreamer",
        description="PIGDreamer's model-free analogue (Huang et al.): recurrent PPO-Lagrangian agents with "
        "asymmetric critics and privileged alignment on the HiddenHazard grid.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    t = sub.add_parser("train", help="train one agent and write it", description="Train one agent for --steps "
                       "environment steps under --cost-limit and write it as a safetensors file.")  # fmt: skip
    t.add_argument("--variant", required=True, choices=TRAINABLE, help="A, B or C (U, N: ablations)")
    t.add_argument("--steps", required=True, type=int, help="environment steps (>= 1)")
    t.add_argument("--cost-limit", required=True, type=float, help="d: the episode cost limit (>= 0)")
    t.add_argument("--seed", type=int, default=0, help="the agent's seed (default 0)")
    t.add_argument("--hazards", type=int, default=5, help="hazards per episode (default 5)")
    t.add_argument("--visibility", type=float, default=0.25, help="a hazard's chance to show (default 0.25)")
    t.add_argument("-o", "--output", required=True, type=Path, metavar="AGENT.safetensors")
    e = sub.add_parser("evaluate", help="evaluate a trained agent", description="Run an agent's sampling "
                       "policy on fresh episodes; print its return, cost, success, critic errors and leakage.")  # fmt: skip
    e.add_argument("agent", type=Path, metavar="AGENT.safetensors")
    e.add_argument("--episodes", type=int, default=200, help="evaluation episodes (default 200)")
    e.add_argument("--seed", type=int, default=0, help="the episodes' seed (default 0)")
    return parser


def cmd_train(args: argparse.Namespace) -> int:
    import math

    from .agent import PPOConfig
    from .api import HiddenHazard, check_seed, train_agent

    if args.steps < 1:
        raise UserError(f"--steps {args.steps}: must be >= 1")
    if not math.isfinite(args.cost_limit) or args.cost_limit < 0:
        raise UserError(f"--cost-limit {args.cost_limit:g}: must be a finite number >= 0")
    if not 0.0 <= args.visibility <= 1.0:
        raise UserError(f"--visibility {args.visibility:g}: must lie in [0, 1]")
    try:
        env = HiddenHazard(n=1, hazards=args.hazards, visibility=args.visibility)
    except ValueError as exc:
        raise UserError(f"--hazards {args.hazards}: {exc}") from None
    check_seed(args.seed, "--seed")
    check_output(args.output)
    ppo = PPOConfig()
    updates = math.ceil(args.steps / (ppo.envs * ppo.rollout))
    print(f"train: variant {args.variant}, {args.steps} steps ({updates} update{'s' if updates > 1 else ''} of {ppo.envs} x {ppo.rollout}), "
          f"cost limit {args.cost_limit:g}, seed {args.seed}, {args.hazards} hazards, visibility "
          f"{args.visibility:g}", flush=True)  # fmt: skip

    def show(rec: dict) -> None:
        print(f"update {rec['update']}: return {rec['return'][0]:.3f}, cost {rec['cost'][0]:.2f}, success "
              f"{rec['success'][0]:.2f}, lambda {rec['lambda'][0]:.2f}", flush=True)  # fmt: skip

    ckpt = train_agent(args.variant, args.steps, args.cost_limit, args.seed, env, progress=show)
    try:
        ckpt.save(args.output)
    except OSError as exc:
        raise UserError(f"--output {args.output}: cannot write ({exc.strerror or exc})") from None
    print(f"wrote {args.output} (lambda {ckpt.lam:.2f})")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    if args.episodes < 1:
        raise UserError(f"--episodes {args.episodes}: must be >= 1")
    check_seed(args.seed)  # the range and message of api.check_seed
    check_weights(args.agent, AGENT_KIND)  # before torch's and Lightning's import and the weights
    from .api import evaluate_agent

    res = evaluate_agent(args.agent, episodes=args.episodes, seed=args.seed)
    for name in ("return", "cost", "success", "length", "critic_error_cost", "critic_error_reward", "leak"):
        print(f"{name}: {res[name]:.6f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    return {"train": cmd_train, "evaluate": cmd_evaluate}[args.command](args)
