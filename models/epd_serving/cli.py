"""``icml25 epd_serving``: simulate one serving system on a workload, or rank every (E, P, D) split.

    icml25 epd_serving simulate --system epd|pd|aggregated --gpus 6,1,1 --rate 0.5 --images 2
                                [--requests 500] [--no-irp] [--trace FILE] [--cost calibrated|illustrative|COSTS.yaml]
                                [--total 8] [--seed 0] [--ttft-slo 1.4] [--tpot-slo 0.04]
    icml25 epd_serving plan --gpus 8 --images 2 [--rates 0.25,0.5,1,2] [--ttft-slo 1.4] [--tpot-slo 0.04]
                            [--requests 300] [--seed 0] [--cost ...]

``--gpus`` is E,P,D for ``epd``, P,D for ``pd`` (encode fused with prefill) and N for ``aggregated``; the roles
must add up to ``--total`` (8). ``--trace`` replays the ``issued`` times of a lifetime-events JSON file (the
official layout) instead of Poisson arrivals at ``--rate``. ``--cost`` is a preset or a YAML file of constants
(``preset: calibrated`` plus any key of :class:`~models.epd_serving.cost.CostModel`). ``simulate`` prints the
mean and P90 TTFT, the mean TPOT, the SLO attainment and the peak memory of each role's fullest GPU; ``plan``
prints the goodput (the rate at 90% attainment) of every (E, P, D), best last.

Bad input (a rate <= 0, a role with 0 GPUs, roles that do not add up to the total, images < 1, a negative seed,
decreasing trace timestamps, an unknown cost key or one whose value is not a number) is a one-line error naming
the value, exit status 2. A cost file is YAML with YAML 1.2's numbers: ``c_P: 1e-6`` is a float.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from icml25.cli import ToolParser
from icml25.errors import UserError
from icml25.inputs import check_seed


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="icml25 epd_serving",
        description="Encode-Prefill-Decode disaggregation for multimodal serving (Singh et al., ICML 2025): a "
        "discrete-event simulation of aggregated, PD and EPD serving under a stated cost model.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("simulate", help="one system on a Poisson workload or a trace")
    s.add_argument("--system", required=True, choices=("epd", "pd", "aggregated"))
    s.add_argument("--gpus", required=True, metavar="E,P,D", help="E,P,D (epd), P,D (pd) or N (aggregated)")
    s.add_argument("--rate", type=float, default=0.5, help="requests per second (default 0.5)")
    s.add_argument("--images", type=int, default=2, help="images per request (default 2)")
    s.add_argument("--requests", type=int, default=500, help="requests (default 500)")
    s.add_argument("--no-irp", action="store_true", help="EPD without intra-request parallelism")
    s.add_argument("--trace", type=Path, help="replay a lifetime-events JSON trace's arrival times")
    s.add_argument("--total", type=int, default=8, help="GPUs in all (default 8)")
    _common(s)
    p = sub.add_parser("plan", help="the goodput of every (E, P, D) split, best last")
    p.add_argument("--gpus", type=int, default=8, help="GPUs in all (default 8)")
    p.add_argument("--images", type=int, default=2, help="images per request (default 2)")
    p.add_argument("--rates", default="0.25,0.5,1,2", help="rates to try, req/s (default 0.25,0.5,1,2)")
    p.add_argument("--requests", type=int, default=300, help="requests per rate (default 300)")
    _common(p)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cost", default="calibrated", help="calibrated, illustrative or a COSTS.yaml file")
    p.add_argument("--seed", type=int, default=0, help="arrival seed (default 0)")
    p.add_argument("--ttft-slo", type=float, default=1.4, help="TTFT SLO in s (default 1.4)")
    p.add_argument("--tpot-slo", type=float, default=0.04, help="TPOT SLO in s (default 0.04)")


#: YAML 1.2's floats: PyYAML resolves YAML 1.1, where a float needs a dot, so that ``1e-6`` and ``5E3`` load as
#: strings (params.yaml goes through OmegaConf, which adds the same rule).
FLOAT_12 = re.compile(
    r"""^(?:[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+
    |[-+]?\.[0-9_]+[eE][-+]?[0-9]+)$""",
    re.X,
)


def _cost_loader() -> Any:
    """PyYAML's safe loader that also reads exponents without a dot (``1e-6``) as floats."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_implicit_resolver("tag:yaml.org,2002:float", FLOAT_12, list("-+0123456789."))
    return Loader


def read_cost(spec: str) -> Any:
    """A preset name or a YAML file of overrides (``preset:`` picks the base)."""
    import yaml

    from .cost import PRESETS, cost_model

    if spec in PRESETS:
        return cost_model(spec)
    path = Path(spec)
    if not path.is_file():
        raise UserError(f"--cost {spec}: neither a preset ({', '.join(PRESETS)}) nor a file")
    try:
        data = yaml.load(path.read_text(), Loader=_cost_loader()) or {}  # a SafeLoader: no Python objects
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise UserError(f"--cost {path}: not readable YAML ({' '.join(str(exc).split())[:120]})") from None
    if not isinstance(data, dict):
        raise UserError(f"--cost {path}: expected a mapping of constants")
    preset = data.pop("preset", "calibrated")
    try:
        return cost_model(str(preset), **data)
    except ValueError as exc:
        raise UserError(f"--cost {path}: {exc}") from None


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise UserError(f"{name} must be > 0, got {value:g}")


def _gpus(text: str, system: str, total: int) -> tuple[int, ...]:
    try:
        gpus = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--gpus {text!r}: expected integers separated by commas") from None
    roles = {"epd": ("E", "P", "D"), "pd": ("P", "D"), "aggregated": ("N",)}[system]
    if len(gpus) != len(roles):
        raise UserError(f"--gpus {text}: {system} takes {','.join(roles)} ({len(roles)} number(s))")
    for role, n in zip(roles, gpus, strict=True):
        if n < 1:
            raise UserError(f"--gpus {text}: role {role} has {n} GPUs; every role needs at least 1")
    if sum(gpus) != total:
        raise UserError(f"--gpus {text}: {'+'.join(roles)} = {sum(gpus)} but --total is {total}")
    return gpus


def cmd_simulate(args: argparse.Namespace) -> int:
    import numpy as np

    from .api import summary
    from .systems import simulate
    from .workload import Workload, read_trace

    if args.images < 1:
        raise UserError(f"--images must be >= 1, got {args.images}")
    if args.requests < 1:
        raise UserError(f"--requests must be >= 1, got {args.requests}")
    _positive("--rate", args.rate)
    _positive("--ttft-slo", args.ttft_slo)
    _positive("--tpot-slo", args.tpot_slo)
    check_seed(args.seed, bound=None)
    gpus = _gpus(args.gpus, args.system, args.total)
    if args.no_irp and args.system != "epd":
        raise UserError(f"--no-irp applies to --system epd only (got {args.system})")
    cost = read_cost(args.cost)
    if args.trace is not None:
        try:
            trace = read_trace(args.trace)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        w = Workload.replay(trace.arrivals, args.images)
        source = f"trace {args.trace} ({len(w)} requests)"
    else:
        w = Workload.poisson(args.rate, args.requests, args.images, np.random.default_rng(args.seed))
        source = f"Poisson {args.rate:g} req/s, {args.requests} requests, seed {args.seed}"
    try:
        res = simulate(args.system, w, cost, gpus, not args.no_irp)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    s = summary(res, args.ttft_slo, args.tpot_slo)
    irp = "" if args.system != "epd" else (" without IRP" if args.no_irp else " with IRP")
    print(f"{args.system} {','.join(map(str, gpus))}{irp}; {args.images} image(s) per request; {source}")
    print(
        f"TTFT mean {s['ttft_mean']:.4f} s, P90 {s['ttft_p90']:.4f} s; TPOT mean {1000 * s['tpot_mean']:.3f} ms"
    )
    print(
        f"SLO attainment (TTFT < {args.ttft_slo:g} s and TPOT < {args.tpot_slo:g} s): {s['attainment']:.4f}"
    )
    print("peak memory: " + ", ".join(f"{role} {gb:.2f} GB" for role, gb in s["peak_gb"].items()))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from .api import best_allocation

    if args.gpus < 3:
        raise UserError(f"--gpus must be >= 3 (one per role), got {args.gpus}")
    if args.images < 1:
        raise UserError(f"--images must be >= 1, got {args.images}")
    if args.requests < 1:
        raise UserError(f"--requests must be >= 1, got {args.requests}")
    try:
        rates = tuple(float(x) for x in args.rates.split(","))
    except ValueError:
        raise UserError(f"--rates {args.rates!r}: expected numbers separated by commas") from None
    for r in rates:
        _positive("--rates: a rate", r)
    _positive("--ttft-slo", args.ttft_slo)
    _positive("--tpot-slo", args.tpot_slo)
    check_seed(args.seed, bound=None)
    cost = read_cost(args.cost)
    rows = best_allocation(
        args.images, rates, args.gpus, args.requests, args.seed, cost, args.ttft_slo, args.tpot_slo
    )
    print(f"EPD + IRP on {args.gpus} GPUs, {args.images} image(s) per request, rates {args.rates} req/s:")
    print(f"{'(E, P, D)':>12}  goodput (req/s at 90% attainment)")
    for r in rows:
        flag = {"at least": ">= ", "below": "<  "}.get(r["how"], "   ")
        value = min(rates) if r["how"] == "below" else r["goodput"]
        split = f"({r['E']}, {r['P']}, {r['D']})"
        print(f"{split:>12}  {flag}{value:.3f}")
    b = rows[-1]
    print(f"best: ({b['E']}, {b['P']}, {b['D']})")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return {"simulate": cmd_simulate, "plan": cmd_plan}[args.command](args)
