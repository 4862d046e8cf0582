"""The three serving systems on the same event engine and cost model.

A request r arrives at a_r with n images (``tiles_per_image`` tiles each, ``tokens_per_tile`` MM tokens per
tile), ``text`` prompt tokens (prompt length L = text + MM tokens) and ``output`` tokens O. The first token
comes out of prefill; decode then produces O - 1 more. TTFT = first token - arrival, TPOT = (finish - first
token) / (O - 1).

- **EPD (E, P, D)**: E GPUs run only the vision encoder, FCFS, batch 1. With intra-request parallelism (IRP)
  a request becomes one shard per image, each sent to the encoder with the shortest queue (free encoders
  first); without IRP the whole request goes to one encoder. A shard's MM tokens move to P (E -> P link);
  P waits for the **last** shard (encode end = max over shards), then prefills (batch 1, FCFS, shortest
  queue over P GPUs, prompt within the 49,152-token cap), and sends the KV cache to D (P -> D link).
  D runs iteration-level batching: at every step it admits waiting requests in order while the batch stays
  within ``decode_batch``, the 81,920-token cap and its KV blocks (``ceil((L + O) / 16)`` reserved per
  request); a step takes T_D of the batch.
- **PD (DistServe-like: P, D)**: encode and prefill fused on each P GPU (one job: T_E(all tiles) + T_P(L)),
  then the same KV transfer and D. No decode interference, no intra-request encode parallelism.
- **Aggregated (vLLM-like, N GPUs)**: round-robin dispatch; each GPU holds the encoder and the LLM and runs
  continuous batching with prefill priority: when a request waits and fits, the next iteration is its encode +
  prefill (T_E + T_P), and the running decodes **stall** for that iteration (their TPOT absorbs it); otherwise
  one decode step of the running batch.

Switches for tests and must-fail variants: ``irp`` (EPD), ``prefill_after_first_shard`` (a broken P that
starts prefill when the first shard arrives), ``encoder_holds_llm`` (E GPUs that also load the LLM weights).

Memory per GPU (:class:`~.engine.Memory`): weights (E: W_E; P: W_L, PD's P: W_E + W_L; D: W_L; aggregated:
W_E + W_L) plus encoder activations during an encode, MM cache from encode end until P has prefilled, KV from
prefill end (P: until the transfer to D is done; D: until the request finishes).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .cost import GB, CostModel
from .engine import FifoServer, Loop, Memory, shortest
from .workload import Workload

SYSTEMS = ("epd", "pd", "aggregated")


@dataclass
class Req:
    id: int
    arrival: float
    images: int
    text: int
    output: int
    L: int
    mm_tokens: int
    shards: int = 0  # the shards the request was split into (1 without IRP)
    shards_left: int = 0
    encode_end: float = float("nan")
    last_shard_at_p: float = float("nan")
    prefill_start: float = float("nan")
    first_token: float = float("nan")
    finish: float = float("nan")
    generated: int = 0
    ctx: int = 0
    blocks: int = 0
    bound: float = float("nan")  # the no-queue lower bound on TTFT


@dataclass(frozen=True)
class Switching:
    """Runtime role switching for EPD (the official ``ResourceAllocatorRuntime`` rule): every ``period`` s, with
    queue loads q = (q_E, q_P, q_D) (jobs waiting or running per stage), ``to`` = argmax q; nothing happens when
    every q >= max(q) / 2; otherwise ``from`` is the stage with q < max(q), more than one GPU and the most idle
    GPUs, and one of its idle GPUs moves to ``to``, out of service for ``migration`` s (weights swapped)."""

    period: float = 5.0
    migration: float = 0.3


@dataclass
class Result:
    """Per-request times and the peak memory of every GPU (GB) by role."""

    system: str
    gpus: tuple[int, ...]
    irp: bool
    requests: list[Req]
    peaks: dict[str, list[float]]
    events: int
    busy: dict[str, float] = field(default_factory=dict)
    roles: list[tuple[float, int, int, int]] = field(
        default_factory=list
    )  # (time, E, P, D) after each switch

    def table(self) -> dict[str, np.ndarray]:
        cols = ("arrival", "encode_end", "last_shard_at_p", "prefill_start", "first_token", "finish", "bound")
        out = {c: np.array([getattr(r, c) for r in self.requests], dtype=float) for c in cols}
        for c in ("images", "output", "generated", "L"):
            out[c] = np.array([getattr(r, c) for r in self.requests], dtype=int)
        return out


class DecodeGPU:
    """Iteration-level batching with KV-block admission (the D role; the aggregated GPU extends it)."""

    def __init__(self, loop: Loop, index: int, cost: CostModel, memory: Memory, weights: float, done) -> None:
        self.loop, self.index, self.cost, self.memory, self.done = loop, index, cost, memory, done
        self.waiting: deque[Req] = deque()
        self.running: list[Req] = []
        self.blocks_total = cost.kv_pool_blocks(weights)
        self.blocks_used = 0
        self.busy = False
        self.kv = cost.kv_bytes_per_token / GB  # GB per token
        self.ctx_sum = 0  # sum of the running requests' contexts

    @property
    def load(self) -> int:
        return len(self.waiting) + len(self.running)

    def arrive(self, r: Req) -> None:
        self.memory.add(r.ctx * self.kv)  # the KV cache moved in from P
        self.waiting.append(r)
        if not self.busy:
            self.iterate()

    def _admit(self) -> None:
        c = self.cost
        while self.waiting and len(self.running) < c.decode_batch:
            r = self.waiting[0]
            need = c.kv_blocks(r.L + r.output)
            if self.blocks_used + need > self.blocks_total or self.ctx_sum + r.ctx > c.decode_token_cap:
                break
            self.waiting.popleft()
            r.blocks = need
            self.blocks_used += need
            self.ctx_sum += r.ctx
            self.running.append(r)

    def _step_time(self) -> float:
        """T_D of the running batch (cost.decode_step, with the context sum kept incrementally)."""
        c = self.cost
        return (c.a_D + c.b_D * self.ctx_sum + c.c_D * len(self.running)) / 1000.0

    def iterate(self) -> None:
        self._admit()
        if not self.running:
            self.busy = False
            return
        self.busy = True
        self.loop.after(self._step_time(), self._stepped, list(self.running))

    def _stepped(self, batch: list[Req]) -> None:
        self.memory.add(self.kv * len(batch))
        self.ctx_sum += len(batch)
        for r in batch:
            r.generated += 1
            r.ctx += 1
            if r.generated >= r.output:
                self._finish(r)
        self.iterate()

    def _finish(self, r: Req) -> None:
        r.finish = self.loop.now
        self.running.remove(r)
        self.ctx_sum -= r.ctx
        self.blocks_used -= r.blocks
        self.memory.free(r.ctx * self.kv)
        self.done(r)


class AggregatedGPU(DecodeGPU):
    """Encoder + LLM on one GPU, continuous batching, prefill first: a new request's encode + prefill stalls
    the running decodes."""

    def arrive(self, r: Req) -> None:  # a new request (not a KV transfer)
        self.waiting.append(r)
        if not self.busy:
            self.iterate()

    def iterate(self) -> None:
        c = self.cost
        if self.waiting and len(self.running) < c.decode_batch:
            r = self.waiting[0]
            need = c.kv_blocks(r.L + r.output)
            if self.blocks_used + need <= self.blocks_total and self.ctx_sum + r.L <= c.decode_token_cap:
                self.waiting.popleft()
                r.blocks = need
                self.blocks_used += need
                self.busy = True
                tiles = r.images * c.tiles_per_image
                act = c.act_per_tile * tiles
                self.memory.add(act)
                r.prefill_start = self.loop.now + c.encode(tiles)
                r.encode_end = r.prefill_start
                self.loop.after(c.encode(tiles) + c.prefill(r.L), self._prefilled, r, act)
                return
        if not self.running:
            self.busy = False
            return
        self.busy = True
        self.loop.after(self._step_time(), self._stepped, list(self.running))

    def _prefilled(self, r: Req, act: float) -> None:
        self.memory.free(act)
        r.first_token = self.loop.now
        r.generated = 1
        r.ctx = r.L + 1
        self.memory.add(r.ctx * self.kv)
        if r.generated >= r.output:
            self._finish_new(r)
        else:
            self.running.append(r)
            self.ctx_sum += r.ctx
        self.iterate()

    def _finish_new(self, r: Req) -> None:
        r.finish = self.loop.now
        self.blocks_used -= r.blocks
        self.memory.free(r.ctx * self.kv)
        self.done(r)


def _requests(w: Workload, cost: CostModel) -> list[Req]:
    out = []
    for i in range(len(w)):
        n = int(w.images[i])
        mm = cost.mm_tokens(n)
        out.append(Req(i, float(w.arrivals[i]), n, int(w.text[i]), int(w.output[i]), int(w.text[i]) + mm, mm))
    return out


def _check_gpus(system: str, gpus: tuple[int, ...]) -> None:
    want = {"epd": 3, "pd": 2, "aggregated": 1}[system]
    roles = {"epd": "E,P,D", "pd": "P,D", "aggregated": "N"}[system]
    if len(gpus) != want:
        raise ValueError(f"--gpus for {system} is {roles} ({want} number(s)), got {','.join(map(str, gpus))}")
    for role, n in zip(roles.split(","), gpus, strict=True):
        if n < 1:
            raise ValueError(f"{system}: role {role} has {n} GPUs; every role needs at least 1")


def simulate(
    system: str,
    workload: Workload,
    cost: CostModel,
    gpus: tuple[int, ...] = (6, 1, 1),
    irp: bool = True,
    *,
    prefill_after_first_shard: bool = False,
    encoder_holds_llm: bool = False,
    switching: Switching | None = None,
) -> Result:
    """Run ``workload`` through ``system`` (``epd``: gpus = (E, P, D); ``pd``: (P, D); ``aggregated``: (N,))."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r} (known: {', '.join(SYSTEMS)})")
    gpus = tuple(int(g) for g in gpus)
    _check_gpus(system, gpus)
    loop = Loop()
    c = cost
    reqs = _requests(workload, c)
    too_long = [r for r in reqs if r.L > c.prefill_token_cap]
    if too_long:
        raise ValueError(
            f"request {too_long[0].id}: prompt of {too_long[0].L} tokens exceeds the prefill cap"
        )
    # a request the KV pool can never hold would wait for ever: refuse the run instead of returning it unfinished
    holder = c.W_E + c.W_L if system == "aggregated" else c.W_L
    pool = c.kv_pool_blocks(holder)
    for r in reqs:
        need = c.kv_blocks(r.L + r.output)
        if need > pool:
            raise ValueError(
                f"request {r.id} needs {need} KV blocks ({r.L + r.output} tokens) but a "
                f"{'GPU' if system == 'aggregated' else 'D GPU'} holds {pool} "
                f"(kv_utilization {c.kv_utilization:g} x gpu_memory {c.gpu_memory:g} GB - weights {holder:g} GB)"
            )
    kv = c.kv_bytes_per_token / GB
    finished: list[Req] = []

    def done(r: Req) -> None:
        finished.append(r)

    peaks: dict[str, list[Memory]] = {}
    busy: dict[str, list[Any]] = {}

    if system == "aggregated":
        (n,) = gpus
        mems = [Memory(c.W_E + c.W_L) for _ in range(n)]
        aggs = [AggregatedGPU(loop, i, c, mems[i], c.W_E + c.W_L, done) for i in range(n)]
        peaks["aggregated"] = mems
        for r in reqs:
            tiles = r.images * c.tiles_per_image
            r.bound = c.encode(tiles) + c.prefill(r.L)
        loop.feed([r.arrival for r in reqs], lambda r: aggs[r.id % n].arrive(r), reqs)
        loop.run()
        return _result(system, gpus, False, reqs, peaks, loop, {})

    # the D role (shared by EPD and PD)
    n_d = gpus[-1]
    d_mems = [Memory(c.W_L) for _ in range(n_d)]
    decoders = [DecodeGPU(loop, i, c, d_mems[i], c.W_L, done) for i in range(n_d)]
    peaks["D"] = d_mems

    def to_decode(r: Req, p_mem: Memory) -> None:
        p_mem.free(r.L * kv)
        if r.output <= 1:
            r.finish = r.first_token
            done(r)
            return
        r.ctx = r.L + 1
        shortest(decoders).arrive(r)

    def prefilled(r: Req, start: float, p: FifoServer) -> None:
        r.first_token = loop.now
        r.generated = 1
        p.memory.add(r.L * kv)
        loop.after(c.transfer_pd(r.L), to_decode, r, p.memory)

    if system == "pd":
        n_p = gpus[0]
        p_w = c.W_E + c.W_L
        p_mems = [Memory(p_w) for _ in range(n_p)]
        prefillers = [FifoServer(loop, i, p_mems[i]) for i in range(n_p)]
        peaks["P"] = p_mems
        busy["P"] = prefillers

        def pd_start(r: Req, p: FifoServer) -> None:
            tiles = r.images * c.tiles_per_image
            r.prefill_start = loop.now + c.encode(tiles)
            r.encode_end = r.prefill_start
            p.memory.add(c.act_per_tile * tiles)

        def pd_done(r: Req, start: float, p: FifoServer) -> None:
            p.memory.free(c.act_per_tile * r.images * c.tiles_per_image)
            prefilled(r, start, p)

        def pd_arrive(r: Req) -> None:
            p = shortest(prefillers)
            tiles = r.images * c.tiles_per_image
            p.submit(r, c.encode(tiles) + c.prefill(r.L), lambda job, start, p=p: pd_done(job, start, p))

        for p in prefillers:
            p.on_start = lambda job, p=p: pd_start(job, p)
        for r in reqs:
            r.bound = c.encode(r.images * c.tiles_per_image) + c.prefill(r.L)
        loop.feed([r.arrival for r in reqs], pd_arrive, reqs)
        loop.run()
        return _result(system, gpus, False, reqs, peaks, loop, busy)

    # EPD
    n_e, n_p = gpus[0], gpus[1]
    e_w = c.W_E + (c.W_L if encoder_holds_llm else 0.0)
    e_mems = [Memory(e_w) for _ in range(n_e)]
    encoders = [FifoServer(loop, i, e_mems[i]) for i in range(n_e)]
    p_mems = [Memory(c.W_L) for _ in range(n_p)]
    prefillers = [FifoServer(loop, i, p_mems[i]) for i in range(n_p)]
    peaks["E"], peaks["P"] = e_mems, p_mems
    busy["E"], busy["P"] = list(encoders), list(prefillers)

    def p_start(r: Req) -> None:
        r.prefill_start = loop.now

    for p in prefillers:
        p.on_start = p_start

    def p_done(r: Req, start: float, p: FifoServer) -> None:
        p.memory.free(c.mm_bytes(r.mm_tokens) / GB)
        prefilled(r, start, p)

    def submit_prefill(r: Req) -> None:
        p = shortest(prefillers)
        p.memory.add(c.mm_bytes(r.mm_tokens) / GB)  # the MM cache it pulls
        p.submit(r, c.prefill(r.L), lambda job, start, p=p: p_done(job, start, p))

    def shard_at_p(r: Req, images: int) -> None:
        r.shards_left -= 1
        r.last_shard_at_p = loop.now
        if prefill_after_first_shard:
            if not np.isfinite(r.prefill_start) and r.shards_left == r.shards - 1:
                submit_prefill(r)
            return
        if r.shards_left == 0:
            submit_prefill(r)

    def e_start(job: tuple[Req, int], e: FifoServer) -> None:
        e.memory.add(c.act_per_tile * job[1] * c.tiles_per_image)

    def e_done(job: tuple[Req, int], start: float, e: FifoServer) -> None:
        r, images = job
        e.memory.free(c.act_per_tile * images * c.tiles_per_image)
        r.encode_end = loop.now if not np.isfinite(r.encode_end) else max(r.encode_end, loop.now)
        mm = c.mm_bytes(c.mm_tokens(images)) / GB
        e.memory.add(mm)  # the MM cache waits on E until P has pulled it
        delay = c.transfer_ep(c.mm_tokens(images))

        def pulled() -> None:
            e.memory.free(mm)
            shard_at_p(r, images)

        loop.after(delay, pulled)

    for e in encoders:
        e.on_start = lambda job, e=e: e_start(job, e)

    def arrive(r: Req) -> None:
        shards = [1] * r.images if irp else [r.images]
        r.shards_left = len(shards)
        r.shards = len(shards)
        for images in shards:
            e = shortest(encoders)
            e.submit((r, images), c.encode(images * c.tiles_per_image), lambda job, s, e=e: e_done(job, s, e))

    for r in reqs:
        largest = 1 if irp else r.images
        r.bound = c.encode(largest * c.tiles_per_image) + c.transfer_ep(c.mm_tokens(largest)) + c.prefill(r.L)
    loop.feed([r.arrival for r in reqs], arrive, reqs)
    roles = [(0.0, n_e, n_p, n_d)]
    if switching is not None:
        pools: dict[str, list] = {"E": encoders, "P": prefillers, "D": decoders}

        def new_server(role: str) -> Any:
            mem = Memory({"E": e_w, "P": c.W_L, "D": c.W_L}[role])
            peaks[role].append(mem)
            index = max((s.index for s in pools[role]), default=-1) + 1
            if role == "D":
                return DecodeGPU(loop, index, c, mem, c.W_L, done)
            server = FifoServer(loop, index, mem)
            server.on_start = (lambda job, e=server: e_start(job, e)) if role == "E" else p_start
            busy[role].append(server)
            return server

        def join(role: str) -> None:
            pools[role].append(new_server(role))
            roles.append((loop.now, len(encoders), len(prefillers), len(decoders)))

        def control() -> None:
            if len(finished) >= len(reqs):
                return
            q = {role: sum(s.load for s in pool) for role, pool in pools.items()}
            top = max(q.values())
            to = max(q, key=lambda k: (q[k], -"EPD".index(k)))
            if top > 0 and any(v < top / 2 for v in q.values()):
                idle = {
                    role: [s for s in pool if s.load == 0]
                    for role, pool in pools.items()
                    if role != to and q[role] < top and len(pool) > 1
                }
                idle = {role: servers for role, servers in idle.items() if servers}
                if idle:
                    source = max(idle, key=lambda k: (len(idle[k]), -"EPD".index(k)))
                    pools[source].remove(idle[source][-1])
                    roles.append((loop.now, len(encoders), len(prefillers), len(decoders)))
                    loop.after(switching.migration, join, to)
            loop.after(switching.period, control)

        loop.at(switching.period, control)
    loop.run()
    res = _result(system, gpus, irp, reqs, peaks, loop, busy)
    res.roles = roles
    return res


def _result(system, gpus, irp, reqs, peaks, loop, busy) -> Result:
    return Result(
        system,
        gpus,
        irp,
        reqs,
        {role: [m.peak for m in mems] for role, mems in peaks.items()},
        loop.events,
        {role: sum(s.busy_time for s in servers) for role, servers in busy.items()},
    )
