"""Independent tasks of one stage on a few forked worker processes.

Torch runs on one thread per process: a stage's fits are many small operations, and on a shared 2-core machine
two threads per process spin against each other (5-10x slower, measured for GHOST). Workers are forked, so
what the parent imported (``preload``: Lightning takes seconds to import) is not imported again. Each task must
seed itself from its own stream, so that results do not depend on the number of workers or the order in which
tasks finish; :func:`imap` yields results as they finish, tagged with the task's index. A worker that dies
abruptly makes :func:`imap` raise (it never hangs waiting for the lost task).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any


def _one_thread() -> None:
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover (torch is a dependency)
        pass


def _call(job: tuple[Callable[[Any], Any], int, Any]) -> tuple[int, Any]:
    fn, i, task = job
    _one_thread()
    return i, fn(task)


def imap(
    fn: Callable[[Any], Any], tasks: Sequence[Any], workers: int, preload: Sequence[str] = ()
) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, fn(task))`` for every task, as tasks finish, on ``min(workers, len(tasks))`` forked
    processes (in this process, in order, when that is 1). ``fn`` must be a module-level function."""
    _one_thread()
    jobs = [(fn, i, t) for i, t in enumerate(tasks)]
    n = min(max(1, int(workers)), len(jobs))
    if n <= 1:
        yield from map(_call, jobs)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    for name in preload:
        importlib.import_module(name)
    # An executor, not multiprocessing.Pool: when a worker dies abruptly (a signal, a crash in native code), a
    # Pool silently replaces it and waits forever for the lost task; the executor raises instead.
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(_call, job) for job in jobs]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BrokenProcessPool:
            for future in futures:
                future.cancel()
            done = sum(f.done() and not f.cancelled() and f.exception() is None for f in futures)
            raise RuntimeError(
                f"a worker process died abruptly (killed, or crashed in native code) after {done} of "
                f"{len(jobs)} tasks had finished; re-run the stage (workers: 1 runs the tasks in this process)"
            ) from None


def run_groups(
    fn: Callable[[Any], Any],
    groups: Sequence[tuple[str, Sequence[Any]]],
    workers: int,
    log: Any,
    done: str = "done",
    preload: Sequence[str] = (),
    every: float = 20.0,
) -> list[list[Any]]:
    """Every task of every group (``(label, tasks)`` pairs: e.g. the chunks of one output file) through
    :func:`imap`, and the results back per group, each in its tasks' order. Logs "<label> <done> (N s so far)"
    when a group's last task finishes, and "k of N tasks done" when no group finished for ``every`` seconds.
    One worker runs the tasks in this process without :func:`imap` (which imports torch to pin its threads)."""
    import time

    tasks = [t for _, ts in groups for t in ts]
    owner = [g for g, (_, ts) in enumerate(groups) for _ in ts]
    left = [len(ts) for _, ts in groups]
    n = min(max(1, int(workers)), len(tasks)) if tasks else 1
    log.info("%d tasks (%d groups) on %d worker(s)", len(tasks), len(groups), n)
    results: list[Any] = [None] * len(tasks)
    stream = ((i, fn(t)) for i, t in enumerate(tasks)) if n <= 1 else imap(fn, tasks, n, preload=preload)
    start = last = time.perf_counter()
    for i, res in stream:
        results[i] = res
        left[owner[i]] -= 1
        now = time.perf_counter()
        if not left[owner[i]]:
            log.info("%s %s (%.0f s so far)", groups[owner[i]][0], done, now - start)
            last = now
        elif now - last > every:  # a long group: say how far it got
            log.info("%d of %d tasks done (%.0f s so far)", len(tasks) - sum(left), len(tasks), now - start)
            last = now
    return [[r for r, o in zip(results, owner, strict=True) if o == g] for g in range(len(groups))]
