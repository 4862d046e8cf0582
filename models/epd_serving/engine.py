"""A seeded discrete-event engine on a binary heap (``heapq``): events are ``(time, sequence, callback)``; the
sequence number makes simultaneous events run in the order they were scheduled, so a run is a deterministic
function of its inputs (no randomness inside the engine: the workload carries it)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import Any


class Loop:
    """The event loop: :meth:`at` schedules ``fn(*args)`` at an absolute time, :meth:`run` runs to the end."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[..., None], tuple]] = []
        self._seq = 0
        self.events = 0

    def at(self, time: float, fn: Callable[..., None], *args: Any) -> None:
        if time < self.now:
            raise ValueError(f"event at {time} scheduled in the past (now {self.now})")
        heapq.heappush(self._heap, (time, self._seq, fn, args))
        self._seq += 1

    def after(self, delay: float, fn: Callable[..., None], *args: Any) -> None:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        heapq.heappush(self._heap, (self.now + delay, self._seq, fn, args))
        self._seq += 1

    def feed(self, times: list[float], fn: Callable[[Any], None], items: list[Any]) -> None:
        """Call ``fn(items[i])`` at ``times[i]`` (non-decreasing), scheduling each arrival only when the one
        before it fires: the heap holds one pending arrival, not all of them."""
        n = len(items)

        def fire(i: int) -> None:
            if i + 1 < n:
                self.at(times[i + 1], fire, i + 1)
            fn(items[i])

        if n:
            self.at(times[0], fire, 0)

    def run(self) -> None:
        heap = self._heap
        while heap:
            time, _, fn, args = heapq.heappop(heap)
            self.now = time
            self.events += 1
            fn(*args)


class Memory:
    """A GPU's memory: fixed weights plus what it holds over time; ``peak`` = weights + the largest sum held."""

    def __init__(self, weights: float) -> None:
        self.weights = weights
        self.held = 0.0
        self.peak = weights

    def add(self, amount: float) -> None:
        self.held += amount
        self.peak = max(self.peak, self.weights + self.held)

    def free(self, amount: float) -> None:
        self.held -= amount


class FifoServer:
    """One GPU that runs jobs one at a time, first come first served (batch 1): ``submit(job, duration, done)``
    calls ``done(job, start)`` when the job ends, at ``start + duration``. ``on_start(job)`` runs when a job
    starts (memory accounting)."""

    def __init__(
        self, loop: Loop, index: int, memory: Memory, on_start: Callable[[Any], None] | None = None
    ) -> None:
        self.loop, self.index, self.memory, self.on_start = loop, index, memory, on_start
        self.queue: deque = deque()
        self.busy = False
        self.busy_time = 0.0

    @property
    def load(self) -> int:
        """Jobs waiting or running (the dispatchers' join-the-shortest-queue key)."""
        return len(self.queue) + int(self.busy)

    def submit(self, job: Any, duration: float, done: Callable[[Any, float], None]) -> None:
        self.queue.append((job, duration, done))
        if not self.busy:
            self._next()

    def _next(self) -> None:
        if not self.queue:
            return
        job, duration, done = self.queue.popleft()
        self.busy = True
        if self.on_start is not None:
            self.on_start(job)
        self.busy_time += duration
        self.loop.after(duration, self._finish, job, done, self.loop.now)

    def _finish(self, job: Any, done: Callable[[Any, float], None], start: float) -> None:
        self.busy = False
        done(job, start)
        if not self.busy:  # done() may have submitted here and started the next job itself
            self._next()


def shortest(servers: list) -> Any:
    """Join the shortest queue: the server with the least load, ties to the lowest index."""
    return min(servers, key=lambda s: (s.load, s.index))
