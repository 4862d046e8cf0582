"""From the simulated requests to the report's numbers.

Per run (system, seed, rate, images): mean and P90 TTFT, mean TPOT, SLO attainment, mean end-to-end latency,
throughput. Per system and image count: attainment against rate (mean over seeds) and the goodput (the rate at
90% attainment, :func:`~.experiment.goodput`). The claims' numbers:

- ``ttft_ratio``: at the lowest rate with 2 images, mean TTFT(EPD + IRP) / mean TTFT(aggregated) per seed;
  the claim takes the largest (worst) seed.
- ``attainment_gain``: the largest attainment(EPD + IRP) - attainment(aggregated) (means over seeds) over
  images in {2, 4} and the paper's rates (<= 2 req/s).
- ``encoder_memory``: per point, the largest E GPU's peak over the largest aggregated GPU's peak; the claim
  takes the largest over points.
- ``sanity``: violations, counted over every system and request: an unfinished request; generated tokens !=
  requested; a TTFT below its no-queue bound; a prefill that starts before its request's last shard reached
  P; and per (system, images, seed) an attainment that rises by more than 0.02 from one rate to the next.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .experiment import goodput

KEY = ["system", "seed", "rate", "images"]
EPS = 1e-9


def with_latencies(req: pd.DataFrame) -> pd.DataFrame:
    out = req.copy()
    out["ttft"] = out.first_token - out.arrival
    out["tpot"] = np.where(
        out.output > 1, (out.finish - out.first_token) / np.maximum(out.output - 1, 1), 0.0
    )
    out["e2e"] = out.finish - out.arrival
    return out


def runs(req: pd.DataFrame, ttft_slo: float, tpot_slo: float) -> pd.DataFrame:
    """One row per run."""
    r = with_latencies(req)
    r["ok"] = (r.ttft < ttft_slo) & (r.tpot < tpot_slo)
    g = r.groupby(KEY, sort=True)
    out = g.agg(
        ttft_mean=("ttft", "mean"),
        ttft_p90=("ttft", lambda s: float(np.quantile(s, 0.9))),
        tpot_mean=("tpot", "mean"),
        attainment=("ok", "mean"),
        e2e_mean=("e2e", "mean"),
        first_arrival=("arrival", "min"),
        last_finish=("finish", "max"),
        requests=("request", "count"),
    ).reset_index()
    span = out.last_finish - out.first_arrival
    out["throughput"] = np.where(span > 0, out.requests / span, np.nan)
    return out.drop(columns=["first_arrival", "last_finish"])


def goodputs(curves: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Goodput per group of ``keys`` from a table with columns rate and attainment (means over seeds)."""
    rows = []
    for k, g in curves.groupby(keys, sort=True):
        value, how = goodput(g.rate.tolist(), g.attainment.tolist())
        rows.append(
            {
                **dict(zip(keys, k if isinstance(k, tuple) else (k,), strict=True)),
                "goodput": value,
                "how": how,
            }
        )
    return pd.DataFrame(rows)


def violations(req: pd.DataFrame, run_table: pd.DataFrame) -> dict[str, int]:
    r = with_latencies(req)
    shard = r.last_shard_at_p.notna()
    rising = 0
    for _, g in run_table.groupby(["system", "images", "seed"], sort=True):
        a = g.sort_values("rate").attainment.to_numpy()
        rising += int(np.sum(np.diff(a) > 0.02))
    return {
        "unfinished": int(r.finish.isna().sum()),
        "tokens_mismatch": int((r.generated != r.output).sum()),
        "ttft_below_bound": int((r.ttft < r.bound - EPS).sum()),
        "prefill_before_last_shard": int((shard & (r.prefill_start < r.last_shard_at_p - EPS)).sum()),
        "attainment_rising": rising,
    }


def summarize(req: pd.DataFrame, memory: pd.DataFrame, ttft_slo: float, tpot_slo: float) -> dict[str, Any]:
    table = runs(req, ttft_slo, tpot_slo)
    curves = table.groupby(["system", "images", "rate"], sort=True).attainment.mean().reset_index()
    gp = goodputs(curves, ["system", "images"])
    s: dict[str, Any] = {"violations": violations(req, table)}
    s["sanity"] = int(sum(s["violations"].values()))
    low = float(table.rate.min())
    at = table[(table.rate == low) & (table.images == 2)]
    per_seed = {}
    for seed, g in at.groupby("seed"):
        m = g.set_index("system").ttft_mean
        if {"epd", "aggregated"} <= set(m.index):
            per_seed[int(seed)] = float(m["epd"] / m["aggregated"])
    s["ttft_rate"] = low
    s["ttft_ratio_by_seed"] = per_seed
    s["ttft_ratio"] = max(per_seed.values()) if per_seed else float("nan")
    noirp = {}
    for seed, g in at.groupby("seed"):
        m = g.set_index("system").ttft_mean
        if {"epd_noirp", "aggregated"} <= set(m.index):
            noirp[int(seed)] = float(m["epd_noirp"] / m["aggregated"])
    s["ttft_ratio_noirp"] = max(noirp.values()) if noirp else float("nan")
    wide = curves.pivot_table(index=["images", "rate"], columns="system", values="attainment").reset_index()
    grid = wide[wide.images.isin([2, 4]) & (wide.rate <= 2.0 + EPS)]
    if len(grid) and {"epd", "aggregated"} <= set(wide.columns):
        gain = grid.epd - grid.aggregated
        k = int(np.argmax(gain.to_numpy()))
        s["attainment_gain"] = float(gain.iloc[k])
        s["attainment_gain_at"] = {"images": int(grid.images.iloc[k]), "rate": float(grid.rate.iloc[k])}
        s["attainment_gain_noirp"] = (
            float((grid.epd_noirp - grid.aggregated).max()) if "epd_noirp" in wide else None
        )
    else:
        s["attainment_gain"], s["attainment_gain_at"] = float("nan"), None
    ratios = []
    for _, g in memory.groupby(["seed", "rate", "images"], sort=True):
        e = g[(g.system == "epd") & (g.role == "E")].peak_gb
        agg = g[g.system == "aggregated"].peak_gb
        if len(e) and len(agg):
            ratios.append(float(e.max() / agg.max()))
    s["encoder_memory"] = max(ratios) if ratios else float("nan")
    peaks = memory.groupby(["system", "role"]).peak_gb.max()
    s["peak_gb"] = {f"{sys_}/{role}": float(v) for (sys_, role), v in peaks.items()}
    s["goodput"] = {f"{r.system}/{r.images}": {"goodput": r.goodput, "how": r.how} for r in gp.itertuples()}
    return {"summary": s, "runs": table, "curves": curves, "goodput": gp}


def allocator_table(alloc: pd.DataFrame) -> pd.DataFrame:
    """Goodput of every (E, P, D) per image count (attainment averaged over seeds), best first."""
    curves = alloc.groupby(["images", "E", "P", "D", "rate"], sort=True).attainment.mean().reset_index()
    gp = goodputs(curves, ["images", "E", "P", "D"])
    return gp.sort_values(["images", "goodput", "E", "P"], ascending=[True, False, True, True])


def capacities(cost: Any) -> list[dict[str, Any]]:
    """What fits in one GPU's memory under the memory model, an E (or D) GPU against an aggregated GPU,
    beside the paper's headline factors (report only: the factors depend on act_per_tile and kv_utilization)."""
    mem = cost.gpu_memory
    kv_room_agg = max(0.0, cost.kv_utilization * mem - cost.W_E - cost.W_L)
    kv_room_d = max(0.0, cost.kv_utilization * mem - cost.W_L)
    act_room_e = mem - cost.W_E
    act_room_agg = max(0.0, mem - cost.kv_utilization * mem)  # what the KV pool leaves on an aggregated GPU
    per_image = cost.act_per_tile * cost.tiles_per_image
    return [
        {
            "quantity": "encoder batch (tiles)",
            "disaggregated GPU": act_room_e / cost.act_per_tile,
            "aggregated GPU": act_room_agg / cost.act_per_tile,
            "paper": "22x (batch size)",
        },
        {
            "quantity": "images per request",
            "disaggregated GPU": act_room_e / per_image,
            "aggregated GPU": act_room_agg / per_image,
            "paper": "10x",
        },
        {
            "quantity": "KV cache (tokens)",
            "disaggregated GPU": kv_room_d * 1e9 / cost.kv_bytes_per_token,
            "aggregated GPU": kv_room_agg * 1e9 / cost.kv_bytes_per_token,
            "paper": "2.2x (D GPU vs aggregated)",
        },
    ]
