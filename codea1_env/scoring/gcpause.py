"""The cyclic garbage collector held off while a batch is scored.

Scoring a batch allocates hundreds of thousands of short-lived objects (parsed suites, verdicts,
decoded values) and keeps caches that grow (GT results, pass history). Each 700 allocations start
a young collection, and every tenth of those an older one that walks the long-lived caches again.
On the paper's shape, held off for each batch, the referee's own CPU per duel is 8% lower
(``benchmarks/bench_referee.py --compare-gc-pause``: 0.649 against 0.708 ms). The garbage of a
batch has almost no reference cycles
(reference counting frees it as it goes), so :func:`paused_gc` turns the collector off for the
batch and back on after; whatever cycles the batch left are collected at the next automatic
collection. Verdicts do not depend on it.

The pause is process-wide (``gc.disable``) and nests across threads: the collector is turned back
on when the last concurrent scorer leaves, and only if it was on when the first one entered.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold the cyclic collector off for the ``with`` block (re-entrant, thread-safe)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
