"""Prepare: the workloads and the cost model.

``source: poisson``: per seed one stream of unit exponentials (``ctx.rng("arrivals", seed)``), scaled by
1 / rate for every rate (arrivals coupled across rates), for every image count: ``workloads.csv`` (seed, rate,
images, request, arrival, text, output). ``source: trace``: the ``issued`` times of a lifetime-events trace
(``data/epd_serving/input/<trace_file>``) replayed for every image count (rate = the trace's mean rate), and
b_E refitted from the median of its context-stage durations (``trace_images`` images per request).
``costs.json``: every constant of the cost model in use (the preset, the params' overrides, the refit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from icml25.stage import StageContext


def run(ctx: StageContext) -> None:
    import dataclasses

    import numpy as np
    import pandas as pd

    from icml25.errors import UserError
    from models.epd_serving.cost import calibrate_b_E, cost_model
    from models.epd_serving.workload import Workload, read_trace

    pp = ctx.params.prepare
    overrides = {k: v for k, v in dataclasses.asdict(pp.costs).items() if v is not None}
    try:
        cost = cost_model(pp.cost, **overrides)
    except ValueError as exc:
        raise UserError(f"papers.epd_serving.prepare.costs: {exc}") from None
    frames = []
    meta = {"source": pp.source, "text_tokens": pp.text_tokens, "output_tokens": pp.output_tokens}
    if pp.source == "trace":
        path = ctx.input_path("trace_file", pp.trace_file)
        try:
            trace = read_trace(path)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        if len(trace.context):
            median = float(np.median(trace.context))
            b_E = calibrate_b_E(median, pp.trace_images, pp.text_tokens, cost)
            if not b_E > 0:
                raise UserError(
                    f"{path}: median context stage {median:.3f} s leaves b_E = {b_E:.2f} ms per tile"
                )
            cost = dataclasses.replace(cost, b_E=b_E)
            meta.update(trace_context_median=median, b_E_refit=b_E)
        span = float(trace.arrivals[-1]) if len(trace.arrivals) > 1 else 0.0
        rate = (len(trace.arrivals) - 1) / span if span > 0 else 1.0
        for images in pp.images:
            w = Workload.replay(trace.arrivals, images, pp.text_tokens, pp.output_tokens)
            frames.append(_frame(w, 0, rate, images))
        meta.update(seeds=1, rates=[rate], images=list(pp.images), requests=len(trace.arrivals))
        ctx.log.info("trace %s: %d requests at %.3f req/s", pp.trace_file, len(trace.arrivals), rate)
    else:
        for seed in range(pp.seeds):
            for rate in pp.rates:
                for images in pp.images:
                    w = Workload.poisson(
                        rate, pp.requests, images, ctx.rng("arrivals", seed), pp.text_tokens, pp.output_tokens
                    )
                    frames.append(_frame(w, seed, rate, images))
        if len(pp.switch_images) != 2:
            raise UserError(
                f"papers.epd_serving.prepare.switch_images: two image counts (before, after), got {list(pp.switch_images)}"
            )
        switch = []
        half = pp.requests // 2
        for seed in range(pp.seeds):
            gaps = ctx.rng("switching", seed).standard_exponential(pp.requests)
            images = [pp.switch_images[0]] * half + [pp.switch_images[-1]] * (pp.requests - half)
            switch.append(
                pd.DataFrame(
                    {
                        "seed": seed,
                        "request": range(pp.requests),
                        "arrival": np.cumsum(gaps) / pp.switch_rate,
                        "images": images,
                        "text": pp.text_tokens,
                        "output": pp.output_tokens,
                    }
                )
            )
        pd.concat(switch).to_csv(ctx.out / "switching.csv", index=False)
        meta.update(seeds=pp.seeds, rates=list(pp.rates), images=list(pp.images), requests=pp.requests)
        meta.update(switch_rate=pp.switch_rate, switch_images=list(pp.switch_images))
        ctx.log.info(
            "%d seeds x %d rates x %d image counts x %d requests",
            pp.seeds,
            len(pp.rates),
            len(pp.images),
            pp.requests,
        )
    pd.concat(frames).to_csv(ctx.out / "workloads.csv", index=False)
    ctx.write_json("costs.json", cost.to_dict())
    ctx.write_json("meta.json", meta)


def _frame(w, seed: int, rate: float, images: int):
    import pandas as pd

    return pd.DataFrame(
        {
            "seed": seed,
            "rate": rate,
            "images": w.images,
            "request": range(len(w)),
            "arrival": w.arrivals,
            "text": w.text,
            "output": w.output,
        }
    ).assign(images=images)
